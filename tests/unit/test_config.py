"""Settings precedence: flags > HMSPROXY_* environment > TOML file > defaults; Hive key names accepted."""
import pytest

from hmsproxy.ops.config import Settings, ignored_environment, resolve


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
    ({"HMSPROXY_PORT": "tcp://10.0.0.1:port"}, "expected an integer"),
    ({"HMSPROXY_TXN_TIMEOUT_S": "0"}, "expected a positive duration"),
    ({"HMSPROXY_UPSTREAM": "thrift://hms:9083", "HMSPROXY_CACHE": "false"}, "cannot be combined with --no-cache"),
    ({"HMSPROXY_UPSTREAM_REFRESH_S": "0"}, "expected a positive duration"),
    ({"HMSPROXY_REMEMBERED_REQUESTS": "-1"}, "expected 0 or more"),
])
def test_bad_values_are_refused_with_a_clear_message(environ, message):
    with pytest.raises(ValueError, match=message):
        resolve({}, environ=environ)


def test_environment_variables_that_are_not_settings_are_ignored_and_named():
    """Kubernetes' links of a Service named hmsproxy (HMSPROXY_PORT among them, as tcp://host:port) and what
    else put HMSPROXY_* into the environment; the settings beside them still count."""
    others = {"HMSPROXY_PORT": "tcp://10.0.0.1:9083", "HMSPROXY_SERVICE_HOST": "10.0.0.1",
              "HMSPROXY_METRICS_PORT": "udp://[fd00::1]:9090", "HMSPROXY_NO_SUCH_THING": "1"}
    environ = others | {"HMSPROXY_MAX_CONNECTIONS": "8", "HMSPROXY_CONFIG": "", "OTHER_PORT": "tcp://x:1"}
    assert resolve({}, environ=environ) == Settings(max_connections=8)
    assert ignored_environment(environ) == sorted(others)


def test_an_unknown_key_of_the_config_file_is_refused(tmp_path):
    config = tmp_path / "hmsproxy.toml"
    config.write_text("max_conections = 8\n")
    with pytest.raises(ValueError, match="unknown setting 'max_conections'"):
        resolve({"config": str(config)}, environ={})


def test_zero_turns_off_the_check_lock_hold():
    assert resolve({"check_lock_wait_s": "0s"}, environ={}).check_lock_wait_s == 0


@pytest.mark.parametrize("key", ["hive.metastore.thrift.bind.host", "metastore.thrift.bind.host",
                                 "HIVE.METASTORE.THRIFT.BIND.HOST"])
def test_hive_keys_are_read_in_either_of_hives_forms(tmp_path, key):
    config = tmp_path / "hive.toml"
    config.write_text(f'"{key}" = "0.0.0.0"\n"metastore.warehouse.dir" = "file:///data/wh"\n')
    settings = resolve({"config": str(config)}, environ={})
    assert settings.host == "0.0.0.0" and settings.warehouse == "/data/wh"


HIVE_SITE = """<?xml version="1.0"?>
<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name>
            <value>jdbc:mysql://db.example:3306/metastore?createDatabaseIfNotExist=true&amp;useSSL=false</value></property>
  <property><name>javax.jdo.option.ConnectionDriverName</name><value>com.mysql.jdbc.Driver</value></property>
  <property><name>javax.jdo.option.ConnectionUserName</name><value>hive</value></property>
  <property><name>javax.jdo.option.ConnectionPassword</name><value>p@ss:w/rd</value></property>
  <property><name>hive.metastore.warehouse.dir</name><value>file:/data/warehouse</value></property>
  <property><name>hive.metastore.port</name><value>9999</value></property>
  <property><name>hive.metastore.thrift.bind.host</name><value>0.0.0.0</value></property>
  <property><name>hive.exec.dynamic.partition.mode</name><value>nonstrict</value></property>
</configuration>
"""


def test_a_hive_site_gives_the_database_warehouse_and_port(tmp_path):
    site = tmp_path / "hive-site.xml"
    site.write_text(HIVE_SITE)
    settings = resolve({"hive_site": str(site)}, environ={})
    assert settings.db == "mysql+pymysql://hive:p%40ss%3Aw%2Frd@db.example:3306/metastore"
    assert (settings.warehouse, settings.port, settings.host) == ("/data/warehouse", 9999, "0.0.0.0")
    overridden = resolve({"hive_site": str(site), "port": 1234}, environ={"HMSPROXY_HOST": "127.0.0.2"})
    assert (overridden.port, overridden.host) == (1234, "127.0.0.2")  # flags and environment win


@pytest.mark.parametrize("jdbc, expected", [
    ("jdbc:postgresql://pg:5432/hive", "postgresql+psycopg://u@pg:5432/hive"),
    ("jdbc:mariadb://m:3307/hms?x=1", "mysql+pymysql://u@m:3307/hms"),
    ("jdbc:derby:;databaseName=metastore_db;create=true", "not 'derby'"),
    ("jdbc:mysql://a:3306,b:3306/hms", "several hosts"),
])
def test_jdbc_urls_become_sqlalchemy_urls_or_a_clear_refusal(tmp_path, jdbc, expected):
    site = tmp_path / "hive-site.xml"
    site.write_text(f"<configuration><property><name>javax.jdo.option.ConnectionURL</name><value>{jdbc}</value>"
                    "</property><property><name>javax.jdo.option.ConnectionUserName</name><value>u</value>"
                    "</property></configuration>")
    if "://" in expected:
        assert resolve({"hive_site": str(site)}, environ={}).db == expected
    else:
        with pytest.raises(ValueError, match=expected):
            resolve({"hive_site": str(site)}, environ={})


def test_a_warehouse_on_hdfs_is_refused_naming_what_is_served():
    with pytest.raises(ValueError, match=r"local file system \(file:\) and object stores .*not on hdfs:"):
        resolve({"warehouse": "hdfs://nn:8020/warehouse"}, environ={})


@pytest.mark.parametrize("warehouse", ["s3a://lake/warehouse", "s3://lake/wh/", "gs://lake/wh", "abfss://c@a.dfs.core.windows.net/wh"])
def test_a_warehouse_on_an_object_store_is_taken_as_given(warehouse):
    settings = resolve({"warehouse": warehouse}, environ={})
    assert settings.warehouse_on_object_store
    assert settings.warehouse_location == warehouse.rstrip("/")


def test_an_object_store_warehouse_names_its_bucket():
    with pytest.raises(ValueError, match="names no bucket"):
        resolve({"warehouse": "s3a:///warehouse"}, environ={})


def test_hive_s3a_keys_are_read_from_hive_site_and_secrets_kept_out_of_repr(tmp_path):
    site = tmp_path / "hive-site.xml"
    keys = {"fs.s3a.endpoint": "minio:9000", "fs.s3a.endpoint.region": "eu-west-1", "fs.s3a.path.style.access": "TRUE",
            "fs.s3a.connection.ssl.enabled": "false", "fs.s3a.access.key": "AKIAEXAMPLE",
            "fs.s3a.secret.key": "s3cr3t-value", "fs.s3a.session.token": "t0ken-value"}
    site.write_text("<configuration>" + "".join(f"<property><name>{k}</name><value>{v}</value></property>"
                                                 for k, v in keys.items()) + "</configuration>")
    settings = resolve({"hive_site": str(site)}, environ={})
    assert (settings.s3_endpoint, settings.s3_region, settings.s3_path_style, settings.s3_ssl) == (
        "minio:9000", "eu-west-1", "true", False)
    assert (settings.s3_access_key, settings.s3_secret_key, settings.s3_session_token) == (
        "AKIAEXAMPLE", "s3cr3t-value", "t0ken-value")
    assert "s3cr3t-value" not in repr(settings) and "t0ken-value" not in repr(settings)
    assert "AKIAEXAMPLE" not in repr(settings)


def test_object_stores_names_known_families_only():
    assert resolve({"object_stores": "S3, gcs"}, environ={}).object_stores == "s3,gcs"
    with pytest.raises(ValueError, match="unknown hdfs"):
        resolve({"object_stores": "s3,hdfs"}, environ={})
