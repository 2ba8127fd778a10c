"""The console script: schema init/info and `serve` as a real process that stops cleanly on SIGTERM."""
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hmsclient import hmsclient

from support.ports import free_port

HMSPROXY = [sys.executable, "-m", "hmsproxy.cli"]


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


@pytest.mark.parametrize("flag, what", [("--port", "the Thrift port"), ("--metrics-port", "the metrics endpoint")])
def test_a_port_already_taken_ends_the_start_with_one_line(tmp_path, flag, what):
    """Exit code 2 and a line that names the port and what it was for, not a traceback."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ports = {"--port": "0", "--metrics-port": "0", flag: str(port)}
        result = subprocess.run(HMSPROXY + ["serve", "--host", "127.0.0.1", *(a for f in ports.items() for a in f)],
                                capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 2, result.stderr
    refusal = f"hmsproxy: cannot listen on 127.0.0.1:{port} for {what}: Address already in use"
    assert result.stderr.splitlines()[-1] == refusal, result.stderr   # the last line, whatever prewarm logs
    assert "Traceback" not in result.stderr


def test_serve_on_embedded_default_and_stop_on_sigterm(tmp_path: Path):
    port = free_port()
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
