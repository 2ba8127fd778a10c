"""The console script: schema init/info and `serve` as a real process that stops cleanly on SIGTERM."""
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from hmsclient import hmsclient

HMSPROXY = [sys.executable, "-m", "hmsproxy.cli"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_schema_init_then_info(tmp_path):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    info = subprocess.run(HMSPROXY + ["schema", "info", "--db", url], capture_output=True, text=True)
    assert info.returncode == 1 and "no metastore schema" in info.stdout
    init = subprocess.run(HMSPROXY + ["schema", "init", "--db", url], capture_output=True, text=True)
    assert init.returncode == 0 and "created" in init.stdout
    again = subprocess.run(HMSPROXY + ["schema", "init", "--db", url], capture_output=True, text=True)
    assert again.returncode == 2 and "init refuses a database that is not empty" in again.stderr
    info = subprocess.run(HMSPROXY + ["schema", "info", "--db", url], capture_output=True, text=True)
    assert info.returncode == 0 and "4.0.0" in info.stdout


def test_bad_setting_exits_with_message(tmp_path):
    result = subprocess.run(HMSPROXY + ["serve"], capture_output=True, text=True, cwd=tmp_path,
                            env={**os.environ, "HMSPROXY_PORT": "abc"})
    assert result.returncode == 2 and "expected an integer" in result.stderr


def test_serve_on_embedded_default_and_stop_on_sigterm(tmp_path: Path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMSPROXY_")}
    proc = subprocess.Popen(HMSPROXY + ["serve", "--port", str(port), "--metrics-port", "0"], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in proc.stdout:
            if "listening on" in line:
                break
        client = hmsclient.HMSClient(host="127.0.0.1", port=port)
        client.open()
        assert client.get_all_databases() == ["default"]
        client.close()
        assert (tmp_path / "hmsproxy.db").exists() and (tmp_path / "warehouse").is_dir()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()
