"""HMSPROXY_* variables nobody meant for hmsproxy do not stop it (issue 52): a Kubernetes Service named hmsproxy
adds its links to every pod's environment, a shell may hold a compose file's own variables or a build's. `serve`
starts, naming them in one warning line; a setting's variable with a bad value is still refused. A real process
with that environment."""
from __future__ import annotations

import json

import pytest

from support.cli import run_hmsproxy
from support.hmsproxy_server import start_hmsproxy_process
from support.raw_wire import serves

# What Kubernetes adds for a Service named hmsproxy (Thrift port 9083, named thrift) and one named hmsproxy-metrics
SERVICE_LINKS = {
    "HMSPROXY_SERVICE_HOST": "10.0.0.1",
    "HMSPROXY_SERVICE_PORT": "9083",
    "HMSPROXY_SERVICE_PORT_THRIFT": "9083",
    "HMSPROXY_PORT": "tcp://10.0.0.1:9083",
    "HMSPROXY_PORT_9083_TCP": "tcp://10.0.0.1:9083",
    "HMSPROXY_PORT_9083_TCP_PROTO": "tcp",
    "HMSPROXY_PORT_9083_TCP_PORT": "9083",
    "HMSPROXY_PORT_9083_TCP_ADDR": "10.0.0.1",
    "HMSPROXY_METRICS_PORT": "tcp://10.0.0.2:9090",
    "HMSPROXY_METRICS_SERVICE_HOST": "10.0.0.2",
}
# A shell that sourced an older .env.example (host ports of the compose file), and a build's variable
OTHERS = {"HMSPROXY_THRIFT_PORT": "9083", "HMSPROXY_METRICS_HOST_PORT": "9090", "HMSPROXY_BUILD_REF": "secret-ish"}
IGNORING = "ignoring environment variables that are not hmsproxy settings"


def test_serve_starts_beside_variables_that_are_not_settings_and_names_them_once(tmp_path):
    environment = SERVICE_LINKS | OTHERS | {"HMSPROXY_LOG_FORMAT": "json"}   # a setting, still read
    server = start_hmsproxy_process(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", environment=environment)
    try:
        assert serves(server)
    finally:
        server.stop()
    log = next(tmp_path.glob("hmsproxy-*.log")).read_text()
    messages = [json.loads(line)["message"] for line in log.splitlines() if line.startswith("{")]
    warnings = [message for message in messages if IGNORING in message]
    assert len(warnings) == 1, log[-3000:]
    named = warnings[0].rsplit(": ", 1)[1].split(", ")
    assert named == sorted(SERVICE_LINKS | OTHERS)
    assert "secret-ish" not in log, "a value of a variable that is no setting was logged"


@pytest.mark.parametrize("variable, value, refusal", [
    ("HMSPROXY_PORT", "nine", "expected an integer"),
    ("HMSPROXY_PORT", "tcp://10.0.0.1:port", "expected an integer"),   # not a Service link's form
    ("HMSPROXY_METRICS_PORT", "9090/tcp", "expected an integer"),
    ("HMSPROXY_FRAMED", "maybe", "expected a boolean"),
])
def test_a_setting_with_a_bad_value_is_still_refused_beside_them(tmp_path, variable, value, refusal):
    environment = SERVICE_LINKS | OTHERS | {variable: value}
    code, lines = run_hmsproxy("doctor", "--db", f"sqlite:///{tmp_path / 'm.db'}", "--warehouse", str(tmp_path / "wh"),
                               "--port", "0", "--metrics-port", "0", cwd=tmp_path, environment=environment)
    assert code == 2, lines
    assert lines == [f"hmsproxy: setting {variable.removeprefix('HMSPROXY_').lower()!r}: {refusal}, got {value!r}"]
