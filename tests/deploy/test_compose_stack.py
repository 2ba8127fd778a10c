"""docker-compose.yml and the files it mounts: valid for docker-compose from a fresh clone (no .env), wired
together (database credentials, health checks, scrape targets, balancer back ends), and free of passwords."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from deploy.files import (
    COMPOSE_FILE,
    DOCKERFILE,
    ENV_EXAMPLE,
    GRAFANA_PROVISIONING,
    HAPROXY_CONFIG,
    PROMETHEUS_CONFIG,
    ROOT,
    load_yaml,
    yaml_module,
)
from hmsproxy.ops.config import from_environment, ignored_environment
from support.required import installed

COMPOSE = shutil.which("docker-compose")
needs_compose = pytest.mark.usefixtures("compose_installed")
METRICS_PORT = 9090
THRIFT_PORT = 9083
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-[^}]*)?\}")


def _config(*args: str, env_file: Path) -> dict:
    """`docker-compose config` parsed; the environment holds nothing but PATH and HOME, so only `env_file`
    (empty: the file's own defaults) can set a variable."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL")}
    result = subprocess.run([COMPOSE, "-f", str(COMPOSE_FILE), "--env-file", str(env_file), *args, "config"],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    return yaml_module().safe_load(result.stdout)


@pytest.fixture(scope="module")
def compose_installed() -> None:
    installed("docker-compose", "docker-compose",
              "docker-compose is not installed (CI installs Debian's docker-compose; `apt-get install docker-compose`)")


@pytest.fixture(scope="module")
def empty_env(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("compose") / "empty.env"
    path.write_text("")
    return path


def _services(config: dict, profile: str | None) -> dict[str, dict]:
    """The services `up` starts with that profile (docker-compose v1's `config` prints every service)."""
    return {name: service for name, service in config["services"].items()
            if not service.get("profiles") or profile in service["profiles"]}


def _hmsproxy_services(services: dict[str, dict]) -> dict[str, dict]:
    return {name: s for name, s in services.items() if "build" in s and s.get("image", "").startswith("hmsproxy")}


@needs_compose
def test_default_stack_from_a_fresh_clone(empty_env):
    services = _services(_config(env_file=empty_env), None)
    assert set(services) == {"mariadb", "minio", "create-bucket", "hmsproxy", "prometheus", "alertmanager",
                             "grafana"}
    assert list(_hmsproxy_services(services)) == ["hmsproxy"]


@needs_compose
@pytest.mark.parametrize("profile", [None, "scale"])
def test_hmsproxy_waits_for_the_database_and_is_healthy_once_ready(empty_env, profile):
    args = ("--profile", profile) if profile else ()
    services = _services(_config(*args, env_file=empty_env), profile)
    assert services["mariadb"]["healthcheck"]["test"], "depends_on service_healthy needs a health check"
    assert services["minio"]["healthcheck"]["test"], "depends_on service_healthy needs a health check"
    assert services["create-bucket"]["depends_on"]["minio"]["condition"] == "service_healthy"
    for name, service in _hmsproxy_services(services).items():
        assert service["depends_on"]["mariadb"]["condition"] == "service_healthy", name
        assert service["depends_on"]["create-bucket"]["condition"] == "service_completed_successfully", name
        check = " ".join(service["healthcheck"]["test"])
        assert f"http://127.0.0.1:{METRICS_PORT}/readyz" in check, (name, check)
        assert service["environment"]["HMSPROXY_METRICS_PORT"] == str(METRICS_PORT), name


@needs_compose
def test_prometheus_sends_its_alerts_to_the_stacks_alertmanager(empty_env):
    """Alerts reach a receiver a user replaces, not only Prometheus' UI: Prometheus names the compose's
    Alertmanager, which routes every alert to the one receiver its config declares."""
    services = _services(_config(env_file=empty_env), None)
    targets = [target for manager in load_yaml(PROMETHEUS_CONFIG)["alerting"]["alertmanagers"]
               for config in manager["static_configs"] for target in config["targets"]]
    assert targets == ["alertmanager:9093"] and "alertmanager" in services
    assert f"{ROOT}/deploy/alertmanager/alertmanager.yml:/etc/alertmanager/alertmanager.yml:ro" in \
        services["alertmanager"]["volumes"]
    config = load_yaml(ROOT / "deploy" / "alertmanager" / "alertmanager.yml")
    receivers = [receiver["name"] for receiver in config["receivers"]]
    assert config["route"]["receiver"] in receivers and len(receivers) == 1
    assert all(hook["url"].startswith("http") for receiver in config["receivers"]
               for hook in receiver.get("webhook_configs", []))


@needs_compose
def test_every_containers_log_is_capped(empty_env):
    """json-file logs rotate: no service, however chatty, fills the host's disk."""
    services = _services(_config("--profile", "scale", env_file=empty_env), "scale")
    for name, service in services.items():
        logging = service.get("logging") or {}
        assert logging.get("driver") == "json-file", name
        assert re.fullmatch(r"\d+m", logging["options"]["max-size"]) and int(logging["options"]["max-file"]) > 1, name


@needs_compose
@pytest.mark.parametrize("env_file", ["none", "example"])
def test_the_database_url_is_the_mariadb_service_credentials(empty_env, env_file):
    """hmsproxy's URL and MariaDB's first-start variables come from the same variables (with and without a
    .env), and every HMSPROXY_* variable given is a setting the server accepts."""
    config = _config("--profile", "scale", env_file=empty_env if env_file == "none" else ENV_EXAMPLE)
    database = config["services"]["mariadb"]["environment"]
    if env_file == "example":
        assert database["MARIADB_PASSWORD"] == _env_example()["METASTORE_DB_PASSWORD"]
    for name, service in _hmsproxy_services(config["services"]).items():
        url = make_url(service["environment"]["HMSPROXY_DB"])
        assert (url.get_backend_name(), url.host, url.port) == ("mysql", "mariadb", 3306), name
        assert (url.username, url.password, url.database) == (
            database["MARIADB_USER"], database["MARIADB_PASSWORD"], database["MARIADB_DATABASE"]), name
        given = {k: str(v) for k, v in service["environment"].items()}
        assert ignored_environment(given) == [], name
        settings = from_environment(given)
        assert settings["metrics_port"] == METRICS_PORT


@needs_compose
@pytest.mark.parametrize("env_file", ["none", "example"])
def test_the_warehouse_is_the_bucket_created_on_minio(empty_env, env_file):
    """Every instance's warehouse is on the bucket the one-shot service creates, reached at the MinIO service
    with path-style requests and MinIO's credentials, given as the standard AWS variables."""
    config = _config("--profile", "scale", env_file=empty_env if env_file == "none" else ENV_EXAMPLE)
    services = config["services"]
    minio, create_bucket = services["minio"]["environment"], services["create-bucket"]["environment"]
    assert "mc mb --ignore-existing" in " ".join(services["create-bucket"]["command"])
    assert (create_bucket["MINIO_ROOT_USER"], create_bucket["MINIO_ROOT_PASSWORD"]) == (
        minio["MINIO_ROOT_USER"], minio["MINIO_ROOT_PASSWORD"])
    assert len(str(minio["MINIO_ROOT_PASSWORD"])) >= 8, "MinIO refuses to start with a shorter password"
    assert any(volume.split(":")[1] == "/data" for volume in services["minio"]["volumes"])
    for name, service in _hmsproxy_services(services).items():
        environment = {k: str(v) for k, v in service["environment"].items()}
        settings = from_environment(environment)
        assert str(settings["warehouse"]).startswith(f"s3a://{create_bucket['WAREHOUSE_BUCKET']}/"), name
        assert (settings["s3_endpoint"], settings["s3_path_style"]) == ("http://minio:9000", "true"), name
        assert (environment["AWS_ACCESS_KEY_ID"], environment["AWS_SECRET_ACCESS_KEY"]) == (
            minio["MINIO_ROOT_USER"], minio["MINIO_ROOT_PASSWORD"]), name
        assert environment["AWS_REGION"], name


@needs_compose
def test_scale_profile_two_instances_behind_one_balancer(empty_env):
    services = _services(_config("--profile", "scale", env_file=empty_env), "scale")
    instances = _hmsproxy_services(services)
    assert sorted(instances) == ["hmsproxy", "hmsproxy-2"]
    urls = {service["environment"]["HMSPROXY_DB"] for service in instances.values()}
    assert len(urls) == 1, "both instances on the one database"
    warehouses = {service["environment"]["HMSPROXY_WAREHOUSE"] for service in instances.values()}
    assert len(warehouses) == 1, "both instances on the one warehouse"
    balancer = services["balancer"]
    assert {name: dep["condition"] for name, dep in balancer["depends_on"].items()} == {
        name: "service_healthy" for name in instances}
    assert [port["target"] for port in balancer["ports"]] == [THRIFT_PORT]
    assert any(volume.split(":")[1] == "/usr/local/etc/haproxy/haproxy.cfg" for volume in balancer["volumes"])
    backends, bind_ports = _haproxy_backends()
    assert backends == {name: THRIFT_PORT for name in instances}
    assert bind_ports == [THRIFT_PORT]


def _haproxy_backends() -> tuple[dict[str, int], list[int]]:
    """The balancer's servers and its bind ports; asserts TCP mode and the /readyz check on the metrics port."""
    text = HAPROXY_CONFIG.read_text()
    lines = [line.split("#")[0].strip() for line in text.splitlines()]
    assert "mode tcp" in lines
    assert "http-check send meth GET uri /readyz" in lines and "http-check expect status 200" in lines
    default_server = next(line for line in lines if line.startswith("default-server"))
    assert f"check port {METRICS_PORT}" in default_server
    servers = [line.split() for line in lines if line.startswith("server ")]
    bind_ports = [int(line.split(":")[-1]) for line in lines if line.startswith("bind ")]
    return {host.split(":")[0]: int(host.split(":")[1]) for _, _, host, *_ in servers}, bind_ports


@needs_compose
def test_prometheus_scrapes_every_instance_and_grafana_reads_prometheus(empty_env):
    services = _services(_config("--profile", "scale", env_file=empty_env), "scale")
    job = next(job for job in load_yaml(PROMETHEUS_CONFIG)["scrape_configs"] if job["job_name"] == "hmsproxy")
    discovered = {(name, sd["port"]) for sd in job["dns_sd_configs"] for name in sd["names"]}
    assert discovered == {(name, METRICS_PORT) for name in _hmsproxy_services(services)}
    datasources = load_yaml(GRAFANA_PROVISIONING / "datasources" / "prometheus.yml")["datasources"]
    assert [d["url"] for d in datasources] == ["http://prometheus:9090"] and "prometheus" in services
    provider = load_yaml(GRAFANA_PROVISIONING / "dashboards" / "hmsproxy.yml")["providers"][0]
    grafana_mounts = {volume.split(":")[1]: volume.split(":")[0] for volume in services["grafana"]["volumes"]}
    assert Path(grafana_mounts[provider["options"]["path"]]) == ROOT / "deploy" / "grafana" / "dashboards"
    assert Path(grafana_mounts["/etc/grafana/provisioning"]) == GRAFANA_PROVISIONING


@needs_compose
def test_every_mounted_file_exists(empty_env):
    config = _config("--profile", "scale", env_file=empty_env)
    sources = [volume.split(":")[0] for service in config["services"].values()
               for volume in service.get("volumes", []) if volume.startswith("/")]
    assert len(sources) >= 5
    assert [source for source in sources if not Path(source).exists()] == []


def _lines_without_comments(path: Path) -> list[str]:
    return [line.split(" #")[0].rstrip() for line in path.read_text().splitlines() if not line.lstrip().startswith("#")]


def test_no_password_in_the_compose_file():
    """A value of a password-like key, and the password of a URL, is a ${VARIABLE:-example} form, never text."""
    lines = _lines_without_comments(COMPOSE_FILE)
    checked = 0
    for line in lines:
        key, _, value = line.strip().lstrip("- ").partition(":")
        value = value.strip().strip("'\"")
        if re.search(r"PASSWORD|PASSWD|SECRET|TOKEN", key, re.I) and value:
            assert VARIABLE.fullmatch(value), line
            checked += 1
        masked = VARIABLE.sub("__variable__", line)  # a default may hold ":" (${X:-y}); the mask holds none
        for password in re.findall(r"://[^:/@\s]+:([^@\s]+)@", masked):
            assert password == "__variable__", line
            checked += 1
    assert checked >= 7  # MariaDB's two, Grafana's, the database URL's, MinIO's (its own, create-bucket's, hmsproxy's)


def test_env_example_declares_every_variable():
    used = {match.group(1) for line in _lines_without_comments(COMPOSE_FILE) for match in VARIABLE.finditer(line)}
    assert used and used == set(_env_example())


def test_env_example_names_only_settings_with_the_servers_prefix():
    """A shell that sources .env.example gives hmsproxy every HMSPROXY_* variable in it: the compose file's own
    variables (host ports) are named otherwise."""
    assert ignored_environment(_env_example()) == []
    assert from_environment(_env_example())


def _env_example() -> dict[str, str]:
    pairs = [line.split("=", 1) for line in ENV_EXAMPLE.read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    return {key.strip(): value.strip() for key, value in pairs}


def test_env_example_passwords_are_placeholders():
    passwords = {key: value for key, value in _env_example().items() if "PASSWORD" in key}
    assert len(passwords) == 4 and all(value.startswith("example-") for value in passwords.values()), passwords


def test_the_image_reports_ready_and_keeps_its_data_in_a_volume():
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    healthcheck = next(line for line in text.splitlines() if line.startswith("HEALTHCHECK"))
    assert "/readyz" in healthcheck and "HMSPROXY_METRICS_PORT" in healthcheck
    assert re.search(r"^VOLUME \[\"/data\"\]$", text, re.M)
    assert re.search(rf"HMSPROXY_METRICS_PORT={METRICS_PORT}\b", text)
    assert re.search(r"HMSPROXY_WAREHOUSE=/data/warehouse\b", text) and re.search(r"^WORKDIR /data$", text, re.M)
