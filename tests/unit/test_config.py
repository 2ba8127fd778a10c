"""Settings precedence: flags > HMSPROXY_* environment > TOML file > defaults; Hive key names accepted."""
import pytest

from hmsproxy.config import Settings, resolve


def test_defaults_when_nothing_is_given():
    settings = resolve({}, environ={})
    assert settings == Settings()
    assert settings.db == "sqlite:///hmsproxy.db" and settings.port == 9083


def test_flags_override_environment_which_overrides_file(tmp_path):
    config = tmp_path / "hmsproxy.toml"
    config.write_text('port = 1000\ndb = "sqlite:///file.db"\nmetrics_port = 7000\n')
    environ = {"HMSPROXY_CONFIG": str(config), "HMSPROXY_PORT": "2000", "HMSPROXY_FRAMED": "true"}
    settings = resolve({"port": 3000, "warehouse": None}, environ=environ)
    assert settings.port == 3000
    assert settings.framed is True
    assert settings.db == "sqlite:///file.db"
    assert settings.metrics_port == 7000


def test_hive_key_names_are_accepted_in_the_file(tmp_path):
    config = tmp_path / "hive.toml"
    config.write_text('"metastore.thrift.port" = 9999\n"hive.metastore.warehouse.dir" = "/data/wh"\n')
    settings = resolve({"config": str(config)}, environ={})
    assert settings.port == 9999 and settings.warehouse == "/data/wh"


@pytest.mark.parametrize("environ, message", [
    ({"HMSPROXY_PORT": "nine"}, "expected an integer"),
    ({"HMSPROXY_FRAMED": "maybe"}, "expected a boolean"),
    ({"HMSPROXY_NO_SUCH_THING": "1"}, "unknown setting"),
])
def test_bad_values_are_refused_with_a_clear_message(environ, message):
    with pytest.raises(ValueError, match=message):
        resolve({}, environ=environ)
