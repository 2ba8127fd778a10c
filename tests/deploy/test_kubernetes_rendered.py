"""deploy/kubernetes as `kubectl kustomize` renders it: valid against Kubernetes' own schemas (strict: an unknown
or misspelt field fails), the hardening it promises (the `restricted` Pod Security level, a read-only root, no
service-account token, the database password as a file), the NetworkPolicy, and the Prometheus operator's objects
of monitoring/ (the job the alert rules select, the rules identical to deploy/prometheus/alerts.yml)."""
from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from deploy.files import ALERTS, KUBERNETES, load_yaml, yaml_module
from deploy.prometheus_rule import prometheus_rule
from hmsproxy.ops.config import Settings, from_environment
from support.required import installed

MONITORING = KUBERNETES / "monitoring"
# The oldest Kubernetes release whose schemas kubernetes-validate still ships, and its newest.
KUBERNETES_VERSIONS = ("1.25.0", "latest")
# Volume types the `restricted` Pod Security level allows.
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected",
                      "secret"}


def _render(directory: Path) -> list[dict[str, Any]]:
    kubectl = installed("kubectl", "kubectl", "kubectl is not installed: the kustomizations are not rendered")
    result = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml_module().safe_load_all(result.stdout) if doc is not None]


def _by_kind(docs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in docs}


@pytest.fixture(scope="module")
def base() -> dict[tuple[str, str], dict[str, Any]]:
    return _by_kind(_render(KUBERNETES))


@pytest.fixture(scope="module")
def monitoring() -> dict[tuple[str, str], dict[str, Any]]:
    return _by_kind(_render(MONITORING))


@pytest.fixture(scope="module")
def pod(base) -> dict[str, Any]:
    return base[("Deployment", "hmsproxy")]["spec"]["template"]


@pytest.fixture(scope="module")
def container(pod) -> dict[str, Any]:
    (container,) = pod["spec"]["containers"]
    return container


@pytest.fixture(scope="module")
def kubernetes_validate() -> Any:
    return pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed: it belongs in "
                               "the test extras of pyproject.toml")


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_the_rendered_base_is_valid_kubernetes(base, kubernetes_validate, version):
    """Every object, against the schemas of that release, strictly; and the validation does fail on a stray field."""
    version = kubernetes_validate.latest_version() if version == "latest" else version
    assert {kind for kind, _ in base} == {"ConfigMap", "Deployment", "Service", "PersistentVolumeClaim",
                                          "PodDisruptionBudget", "NetworkPolicy"}
    for doc in base.values():
        kubernetes_validate.validate(doc, version, strict=True)
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "hmsproxy"
    misspelt = copy.deepcopy(base[("Deployment", "hmsproxy")])
    misspelt["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFileSystem"] = True
    with pytest.raises(kubernetes_validate.ValidationError, match="readOnlyRootFileSystem"):
        kubernetes_validate.validate(misspelt, version, strict=True)


def test_the_base_needs_no_custom_resource(base):
    """A cluster without the Prometheus operator applies the base: its objects are all of Kubernetes' own APIs."""
    assert {doc["apiVersion"] for doc in base.values()} <= {"v1", "apps/v1", "policy/v1", "networking.k8s.io/v1"}


def test_the_image_is_the_kustomization_s(container):
    (image,) = load_yaml(KUBERNETES / "kustomization.yaml")["images"]
    assert container["image"] == f"{image['newName']}:{image['newTag']}"


# ---- hardening -----------------------------------------------------------------------------------------------------

def test_the_pod_meets_the_restricted_pod_security_level(pod, container):
    """Each rule of the `restricted` level that this pod's fields touch (Kubernetes' Pod Security Standards)."""
    spec = pod["spec"]
    for host_namespace in ("hostNetwork", "hostPID", "hostIPC"):
        assert not spec.get(host_namespace), host_namespace
    assert {next(iter(set(volume) - {"name"})) for volume in spec["volumes"]} <= RESTRICTED_VOLUMES
    pod_context, context = spec["securityContext"], container["securityContext"]
    assert pod_context["runAsNonRoot"] is True and pod_context["runAsUser"] != 0
    assert pod_context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "seccompProfile" not in context, "the pod's profile applies"
    assert context["allowPrivilegeEscalation"] is False
    assert not context.get("privileged")
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert not any("hostPort" in port for port in container["ports"])


def test_the_root_file_system_is_read_only_with_a_tmp_of_its_own(pod, container, base):
    """What the server writes goes to volumes: the warehouse, and /tmp (an emptyDir) for the rest."""
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    mounts = {mount["mountPath"]: volumes[mount["name"]] for mount in container["volumeMounts"]}
    assert "emptyDir" in mounts["/tmp"]
    env = base[("ConfigMap", "hmsproxy")]["data"]
    assert "persistentVolumeClaim" in mounts[from_environment(env)["warehouse"]]
    assert "HMSPROXY_AUDIT_LOG" not in env, "an audit log file needs a volume of its own (or `-`)"


def test_no_service_account_token_is_mounted(pod):
    assert pod["spec"]["automountServiceAccountToken"] is False


def test_the_database_password_is_a_file_not_a_variable(container, base):
    assert "--db-password-file" in container["args"]
    assert all("valueFrom" not in entry for entry in container.get("env", []))
    assert all("configMapRef" in source for source in container["envFrom"])
    assert not any("password" in key.lower() for key in base[("ConfigMap", "hmsproxy")]["data"])


# ---- probes --------------------------------------------------------------------------------------------------------

def test_liveness_restarts_a_stuck_serving_loop_within_about_a_minute(container, base):
    """/healthz turns 503 after --liveness-stall-s of a stuck loop; the probe's failures then restart the pod."""
    probe = container["livenessProbe"]
    assert probe["httpGet"] == {"path": "/healthz", "port": "metrics"}
    stall_s = from_environment(base[("ConfigMap", "hmsproxy")]["data"]).get("liveness_stall_s",
                                                                             Settings().liveness_stall_s)
    restart_after = stall_s + probe["periodSeconds"] * probe["failureThreshold"]
    assert 30 <= restart_after <= 90, restart_after
    assert probe["timeoutSeconds"] < probe["periodSeconds"]


# ---- network policy ------------------------------------------------------------------------------------------------

def _port_numbers(container: dict[str, Any], ports: list[dict[str, Any]]) -> set[int]:
    named = {port["name"]: port["containerPort"] for port in container["ports"]}
    return {named[port["port"]] if isinstance(port["port"], str) else port["port"] for port in ports}


def _wake_port(base) -> int:
    return int(base[("ConfigMap", "hmsproxy")]["data"]["HMSPROXY_PEER_WAKE_PORT"])


def test_the_network_policy_admits_clients_prometheus_and_the_replicas_wake_ups_only(base, pod, container):
    policy = base[("NetworkPolicy", "hmsproxy")]["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert sorted(policy["policyTypes"]) == ["Egress", "Ingress"]
    thrift, metrics, wake = policy["ingress"]
    assert wake["from"] == [{"podSelector": policy["podSelector"]}], "wake-ups from the other replicas only"
    assert wake["ports"] == [{"port": _wake_port(base), "protocol": "UDP"}]
    assert thrift["from"] == [{"namespaceSelector": {}}], "Thrift from any pod of the cluster"
    assert _port_numbers(container, thrift["ports"]) == {9083}
    assert metrics["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    assert _port_numbers(container, metrics["ports"]) == {9090}


def test_the_network_policy_lets_out_dns_the_database_and_wake_ups_to_the_replicas_only(base):
    policy = base[("NetworkPolicy", "hmsproxy")]["spec"]
    egress = policy["egress"]
    allowed = {(port["protocol"], port["port"]) for rule in egress for port in rule["ports"]}
    assert allowed == {("UDP", 53), ("TCP", 53), ("TCP", 3306), ("TCP", 5432), ("UDP", _wake_port(base))}
    (to_replicas,) = [rule for rule in egress if rule.get("to")]
    assert to_replicas["to"] == [{"podSelector": policy["podSelector"]}]
    assert to_replicas["ports"] == [{"port": _wake_port(base), "protocol": "UDP"}]
    database = make_url(base[("ConfigMap", "hmsproxy")]["data"]["HMSPROXY_DB"])
    assert ("TCP", database.port) in allowed, "the database of the ConfigMap is reachable"


# ---- the Prometheus operator's objects -----------------------------------------------------------------------------

def _jobs_the_rules_select() -> set[str]:
    rules = [rule for group in load_yaml(ALERTS)["groups"] for rule in group["rules"]]
    return {job for rule in rules for job in re.findall(r'\bjob\s*=\s*"([^"]*)"', rule["expr"])}


def test_the_service_monitor_scrapes_every_pod_as_the_job_the_rules_select(monitoring, base, pod):
    monitor = monitoring[("ServiceMonitor", "hmsproxy")]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    selected = [service for (kind, _), service in base.items() if kind == "Service"
                and monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()]
    assert [service["metadata"]["name"] for service in selected] == ["hmsproxy-metrics"]
    (service,) = selected
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"] is True, \
        "every pod, prewarming ones too"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in [port["name"] for port in service["spec"]["ports"]]
    assert endpoint["path"] == pod["metadata"]["annotations"]["prometheus.io/path"]
    # The operator names the job after the Service; the relabelling renames it, last (after the operator's own).
    replaced = {rule["targetLabel"]: rule for rule in endpoint["relabelings"] if rule["action"] == "replace"}
    assert _jobs_the_rules_select() == {replaced["job"]["replacement"]} == {"hmsproxy"}
    assert "sourceLabels" not in replaced["job"]
    assert replaced["instance"]["sourceLabels"] == ["__meta_kubernetes_pod_name"]
    assert set(endpoint) <= {"port", "path", "interval", "relabelings"}
    assert re.fullmatch(r"\d+s", endpoint["interval"])


def test_the_prometheus_rule_holds_the_alert_rules_unchanged(monitoring):
    """The PrometheusRule is generated from alerts.yml (tests/deploy/prometheus_rule.py): a rule changed in one
    and not the other fails here."""
    rule = monitoring[("PrometheusRule", "hmsproxy")]
    assert rule["spec"]["groups"] == load_yaml(ALERTS)["groups"]
    generated = prometheus_rule()
    generated["metadata"]["labels"]["app.kubernetes.io/part-of"] = "hmsproxy"   # the kustomization's label
    assert rule == generated
    assert set(rule["spec"]) == {"groups"}


def test_the_monitoring_objects_are_kept_out_of_the_base(base, monitoring):
    assert {kind for kind, _ in monitoring} == {"ServiceMonitor", "PrometheusRule"}
    assert not {kind for kind, _ in base} & {"ServiceMonitor", "PodMonitor", "PrometheusRule"}
    assert all(doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "hmsproxy" for doc in monitoring.values())
