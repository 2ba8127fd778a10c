"""deploy/kubernetes: the manifests parse and fit together (selectors, ports, probes, the Secret reference,
settings the server accepts, memory for the configured cache bound)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from deploy.files import KUBERNETES, load_yaml, load_yaml_documents
from hmsproxy.ops.config import from_environment, ignored_environment, resolve

MIB = 1 << 20
# Measured (deploy/README.md, "Memory"): an idle server's RSS, the RSS a cached partition costs relative to the
# cache's own estimate of it (the bound --cache-max-bytes applies to), and the decoding of large requests in flight.
IDLE_RSS = 60 * MIB
RSS_PER_ESTIMATED_BYTE = 3.8
LARGE_REQUESTS_RSS = 790 * MIB


def _manifest_files() -> list[Path]:
    return sorted(path for path in KUBERNETES.glob("*.yaml") if path.name != "kustomization.yaml")


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict]:
    """Every object of the kustomization (the example Secret is not one), by (kind, name)."""
    kustomization = load_yaml(KUBERNETES / "kustomization.yaml")
    found = {}
    for name in kustomization["resources"]:
        for doc in load_yaml_documents(KUBERNETES / name):
            key = (doc["kind"], doc["metadata"]["name"])
            assert key not in found, key
            found[key] = doc
    return found


@pytest.fixture(scope="module")
def deployment(objects) -> dict:
    return objects[("Deployment", "hmsproxy")]


@pytest.fixture(scope="module")
def container(deployment) -> dict:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


@pytest.fixture(scope="module")
def settings_env(objects, container) -> dict[str, str]:
    """The environment the container gets from its ConfigMap and literal env entries."""
    (config_map_name,) = [source["configMapRef"]["name"] for source in container["envFrom"]]
    env = dict(objects[("ConfigMap", config_map_name)]["data"])
    env.update({entry["name"]: entry["value"] for entry in container.get("env", []) if "value" in entry})
    return env


def _container_port(container: dict, port: int | str) -> int:
    if isinstance(port, int):
        assert port in [p["containerPort"] for p in container["ports"]], port
        return port
    (number,) = [p["containerPort"] for p in container["ports"] if p["name"] == port]
    return number


def test_the_kustomization_lists_every_manifest_but_the_example_secret():
    resources = load_yaml(KUBERNETES / "kustomization.yaml")["resources"]
    assert sorted(resources) == sorted(p.name for p in _manifest_files() if not p.name.endswith(".example.yaml"))
    assert (KUBERNETES / "secret.example.yaml").exists()


def test_every_manifest_parses_with_kind_and_name():
    for path in _manifest_files():
        for doc in load_yaml_documents(path):
            assert doc["apiVersion"] and doc["kind"] and doc["metadata"]["name"], path


def _volume(deployment: dict, name: str) -> dict:
    (volume,) = [v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == name]
    return volume


def _mount_at(container: dict, path: str) -> dict:
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == path]
    return mount


def _password_file(container: dict) -> str:
    args = container["args"]
    assert args[0] == "serve" and args.count("--db-password-file") == 1, args
    return args[args.index("--db-password-file") + 1]


def test_replicas_on_one_database_whose_password_is_a_file_from_a_secret(objects, deployment, container, settings_env,
                                                                        tmp_path):
    """The password reaches the server as a file of the Secret (--db-password-file), never through the
    environment; the URL beside it names the user and the database, not the password."""
    assert deployment["spec"]["replicas"] >= 2
    assert not any("valueFrom" in entry for entry in container.get("env", [])), "no variable from a Secret"
    assert not any("secretRef" in source for source in container["envFrom"])
    path = Path(_password_file(container))
    volume = _volume(deployment, _mount_at(container, str(path.parent))["name"])
    assert _mount_at(container, str(path.parent)).get("readOnly") is True
    assert volume["secret"]["items"] == [{"key": "password", "path": path.name}]
    assert not any(kind == "Secret" for kind, _ in objects), "the Secret is created out of band, not shipped"
    (example,) = load_yaml_documents(KUBERNETES / "secret.example.yaml")
    assert (example["kind"], example["metadata"]["name"]) == ("Secret", volume["secret"]["secretName"])
    assert set(example["stringData"]) == {"password"} and example["stringData"]["password"] == "REPLACE-ME"
    # The server reads it so: the URL of the ConfigMap with the password of the file.
    password_file = tmp_path / "password"
    password_file.write_text("s3cret\n")
    settings = resolve({"db_password_file": str(password_file)}, settings_env)
    assert settings.db == make_url(settings_env["HMSPROXY_DB"]).set(password="s3cret").render_as_string(False)


def test_no_credentials_in_the_config_map(objects):
    for (kind, name), doc in objects.items():
        if kind == "ConfigMap":
            assert make_url(doc["data"]["HMSPROXY_DB"]).password is None, name
            assert not any(re.search(r"://[^/\s]*:[^/\s]*@", str(v)) for v in doc["data"].values()), name


def test_the_server_accepts_the_settings(settings_env, container):
    """hmsproxy refuses to start on an HMSPROXY_* setting it cannot read, and ignores a variable that is none."""
    assert ignored_environment(settings_env) == []
    settings = from_environment(settings_env)
    assert _container_port(container, "thrift") == settings["port"]
    assert _container_port(container, "metrics") == settings["metrics_port"]
    mounts = {mount["mountPath"] for mount in container["volumeMounts"]}
    assert settings["warehouse"] in mounts


def test_no_service_links_in_the_environment(deployment):
    """Service links would add HMSPROXY_SERVICE_HOST and HMSPROXY_PORT=tcp://... (the Service is named
    hmsproxy): the server ignores them, but warns of them at every start."""
    assert deployment["spec"]["template"]["spec"]["enableServiceLinks"] is False
    links = {"HMSPROXY_SERVICE_HOST": "10.0.0.1", "HMSPROXY_PORT": "tcp://10.0.0.1:9083"}
    assert from_environment(links) == {}
    assert ignored_environment(links) == sorted(links)


def test_probes_on_the_metrics_port(container, settings_env):
    metrics_port = from_environment(settings_env)["metrics_port"]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        check = container[probe]["httpGet"]
        assert check["path"] == path, probe
        assert _container_port(container, check["port"]) == metrics_port, probe


def test_selectors_match_the_pods(objects, deployment, container):
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod_labels.items()
    budget = objects[("PodDisruptionBudget", "hmsproxy")]
    assert budget["spec"]["selector"]["matchLabels"] == selector
    assert budget["spec"].get("maxUnavailable", 0) >= 1 or budget["spec"]["minAvailable"] < deployment["spec"][
        "replicas"], "the budget must let a drain proceed"
    services = {name: doc for (kind, name), doc in objects.items() if kind == "Service"}
    assert set(services) == {"hmsproxy", "hmsproxy-metrics"}
    for name, service in services.items():
        assert service["spec"]["selector"].items() <= pod_labels.items(), name
        for port in service["spec"]["ports"]:
            _container_port(container, port["targetPort"])
    assert [p["port"] for p in services["hmsproxy"]["spec"]["ports"]] == [9083]
    assert [p["port"] for p in services["hmsproxy-metrics"]["spec"]["ports"]] == [9090]


def test_pods_are_annotated_for_scraping(deployment, container, settings_env):
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == "/metrics"
    assert int(annotations["prometheus.io/port"]) == from_environment(settings_env)["metrics_port"]


def test_the_warehouse_is_one_shared_volume(objects, deployment, container, settings_env):
    mount = _mount_at(container, from_environment(settings_env)["warehouse"])
    claim = objects[("PersistentVolumeClaim", _volume(deployment, mount["name"])["persistentVolumeClaim"]["claimName"])]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"], "every replica mounts the warehouse"


def _bytes(quantity: str) -> int:
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "K": 10**3, "M": 10**6, "G": 10**9, "": 1}
    number, unit = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]i?|)", str(quantity)).groups()
    return int(float(number) * units[unit])


def _cpu(quantity: str) -> float:
    text = str(quantity)
    return int(text[:-1]) / 1000 if text.endswith("m") else float(text)


def test_resources_fit_the_cache_bound(container, settings_env):
    """requests: the idle server plus a full cache; limits: that plus the decoding of large requests."""
    resources = container["resources"]
    cache_bound = from_environment(settings_env)["cache_max_bytes"]
    steady = IDLE_RSS + RSS_PER_ESTIMATED_BYTE * cache_bound
    assert _bytes(resources["requests"]["memory"]) >= steady
    assert _bytes(resources["limits"]["memory"]) >= steady + LARGE_REQUESTS_RSS
    assert _bytes(resources["limits"]["memory"]) <= 2 * (steady + LARGE_REQUESTS_RSS), "a limit far above need"
    assert 0 < _cpu(resources["requests"]["cpu"]) <= _cpu(resources["limits"]["cpu"])
    assert _cpu(resources["limits"]["cpu"]) >= 1, "a limit under one core throttles every call"


def test_the_image_is_set_by_the_kustomization(container):
    images = load_yaml(KUBERNETES / "kustomization.yaml")["images"]
    assert [image["name"] for image in images] == [container["image"]]
