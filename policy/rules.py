"""The policy pack's rules, as plain functions over resource inputs (no pulumi-policy import).

Each rule takes a resource's Pulumi type and its input properties (camelCase, as the
engine passes them) and returns the violations it finds, one message each. Stack
rules take every resource at once. `__main__.py` wires them into pulumi-policy, and
the tests call them directly.

Sources: Kubernetes Pod Security Standards "restricted" (PSS), kube-linter and
Polaris checks, NVIDIA Triton's deploy guide and `command_line_parser.cc`, KEDA's
ScaledObject docs.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

PROJECT = "triton-platform"
ENVIRONMENT_LABEL = f"{PROJECT}/environment"
# Objects that must break a rule carry the reason in this annotation: {"<policy>": "<why>"}.
EXCEPTIONS_ANNOTATION = "policy.triton-platform.io/exceptions"
TRITON_NAME = "triton-inference-server"
WORKLOAD_KINDS = {"Deployment", "DaemonSet", "StatefulSet", "Job", "ReplicaSet"}

# tritonserver flags the platform may set: the server's src/command_line_parser.cc.
TRITON_FLAGS = frozenset(
    {
        "--model-repository",
        "--model-control-mode",
        "--repository-poll-secs",
        "--load-model",
        "--model-config-name",
        "--disable-auto-complete-config",
        "--strict-readiness",
        "--exit-on-error",
        "--exit-timeout-secs",
        "--model-load-thread-count",
        "--model-load-gpu-limit",
        "--allow-metrics",
        "--allow-gpu-metrics",
        "--allow-cpu-metrics",
        "--metrics-port",
        "--metrics-interval-ms",
        "--metrics-config",
        "--http-restricted-api",
        "--grpc-restricted-protocol",
        "--http-port",
        "--grpc-port",
    }
)
# With dynamic model control these API groups load and rewrite models: arbitrary code execution.
GUARDED_APIS = ("model-repository", "model-config")
SECRET_PATTERNS = (
    re.compile(r"https://hooks\.slack\.com/"),
    re.compile(r"https://events\.pagerduty\.com/"),
    re.compile(r"https://outlook\.office\.com/webhook/"),
    re.compile(r"xox[abprs]-[0-9A-Za-z-]{10,}"),
    re.compile(r"gh[pousr]_[0-9A-Za-z]{30,}"),
    re.compile(r"AKIA[0-9A-Z]{16}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
)
SECRET_NAMES = re.compile(r"(password|passwd|secret|token|api[_-]?key|webhook)", re.IGNORECASE)


@dataclass(frozen=True)
class Resource:
    """What a rule sees of one resource."""

    type: str
    props: Mapping[str, Any]
    protect: bool = False
    granted: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Exceptions the stack's config grants this object: policy -> reason."""
    environment: str | None = None
    """The stack's `triton-platform:environment`, where known: the tier of the objects that carry no environment
    label (the charts' objects)."""

    @property
    def kind(self) -> str:
        return str(self.props.get("kind") or self.type.rsplit(":", 1)[-1])

    @property
    def metadata(self) -> Mapping[str, Any]:
        return self.props.get("metadata") or {}

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or "")

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace") or "")

    @property
    def labels(self) -> Mapping[str, str]:
        return self.metadata.get("labels") or {}

    @property
    def production(self) -> bool:
        """An object's tier is its environment label's, else its stack's; unknown, production's: strict by default."""
        return self.labels.get(ENVIRONMENT_LABEL, self.environment or "production") == "production"

    def exception(self, policy: str) -> str | None:
        """Why this object may break `policy`: granted in the stack's config, or declared by the program."""
        if policy in self.granted:
            return self.granted[policy]
        raw = (self.metadata.get("annotations") or {}).get(EXCEPTIONS_ANNOTATION)
        try:
            reasons = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            return None
        reason = reasons.get(policy) if isinstance(reasons, dict) else None
        return str(reason) if reason else None


def pod_spec(resource: Resource) -> Mapping[str, Any] | None:
    if resource.kind == "Pod":
        return resource.props.get("spec") or {}
    if resource.kind in WORKLOAD_KINDS:
        return ((resource.props.get("spec") or {}).get("template") or {}).get("spec") or {}
    return None


def containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            yield f"{field[:-1]} {container.get('name')}", container


def is_triton(resource: Resource) -> bool:
    return resource.kind == "Deployment" and resource.labels.get("app.kubernetes.io/name") == TRITON_NAME


def triton_container(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for container in spec.get("containers") or []:
        if (container.get("command") or [""])[0] == "tritonserver" or "tritonserver" in str(container.get("image")):
            return container  # type: ignore[no-any-return]
    return None


# --- resource rules -------------------------------------------------------------------------


def pod_security(resource: Resource) -> list[str]:
    """PSS restricted: non-root, no privilege escalation, drop ALL, RuntimeDefault seccomp."""
    spec = pod_spec(resource)
    if spec is None:
        return []
    pod = spec.get("securityContext") or {}
    out = []
    for where, container in containers(spec):
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            out.append(f"{where} is privileged")
        if context.get("allowPrivilegeEscalation") is not False:
            out.append(f"{where} must set securityContext.allowPrivilegeEscalation: false")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            out.append(f"{where} must drop ALL capabilities")
        added = set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}
        if added:
            out.append(f"{where} adds capabilities {sorted(added)}; only NET_BIND_SERVICE is allowed")
        if not (context.get("runAsNonRoot") or pod.get("runAsNonRoot")):
            out.append(f"{where} must run as non-root (runAsNonRoot: true on the pod or container)")
        if context.get("runAsUser", pod.get("runAsUser")) == 0:
            out.append(f"{where} runs as UID 0")
        seccomp = (context.get("seccompProfile") or pod.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"{where} must use seccompProfile RuntimeDefault (got {seccomp or 'none'})")
    return out


def host_access(resource: Resource) -> list[str]:
    """No hostPath volumes, host namespaces or host ports."""
    spec = pod_spec(resource)
    if spec is None:
        return []
    out = [f"host namespace {field} is enabled" for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field)]
    out += [f"volume {v.get('name')} is a hostPath" for v in spec.get("volumes") or [] if "hostPath" in v]
    for where, container in containers(spec):
        out += [f"{where} binds hostPort {p['hostPort']}" for p in container.get("ports") or [] if p.get("hostPort")]
    return out


def read_only_root(resource: Resource) -> list[str]:
    """A read-only root filesystem; writable paths come from explicit emptyDir volumes."""
    spec = pod_spec(resource)
    if spec is None:
        return []
    return [
        f"{where} must set securityContext.readOnlyRootFilesystem: true (mount an emptyDir where it writes)"
        for where, container in containers(spec)
        if (container.get("securityContext") or {}).get("readOnlyRootFilesystem") is not True
    ]


def resources_and_images(resource: Resource) -> list[str]:
    """CPU and memory requests and limits on every container, and pinned image tags."""
    spec = pod_spec(resource)
    if spec is None:
        return []
    out = []
    for where, container in containers(spec):
        requested = container.get("resources") or {}
        for bound in ("requests", "limits"):
            missing = [r for r in ("cpu", "memory") if r not in (requested.get(bound) or {})]
            if missing:
                out.append(f"{where} has no {bound} for {', '.join(missing)}")
        image = str(container.get("image") or "")
        name, _, tag = image.rpartition(":") if "@" not in image else (image, "", "digest")
        if not image or not name or "/" in tag or tag in ("", "latest"):
            out.append(f"{where} image {image!r} must be pinned to a tag other than latest, or a digest")
    return out


def platform_owned(resource: Resource) -> bool:
    """Built by this program, not by a chart it installs: charts' containers are their maintainers' values."""
    return resource.labels.get("app.kubernetes.io/part-of") == PROJECT


def ephemeral_storage(resource: Resource) -> list[str]:
    """Every container requests and limits ephemeral-storage, and every emptyDir has a sizeLimit."""
    spec = pod_spec(resource)
    if spec is None or not platform_owned(resource):
        return []
    out = [
        f"{where} has no ephemeral-storage {bound}"
        for where, container in containers(spec)
        for bound in ("requests", "limits")
        if "ephemeral-storage" not in (((container.get("resources") or {}).get(bound)) or {})
    ]
    out += [
        f"emptyDir volume {volume.get('name')} has no sizeLimit"
        for volume in spec.get("volumes") or []
        if "emptyDir" in volume and not (volume.get("emptyDir") or {}).get("sizeLimit")
    ]
    return out


# The Prometheus Operator's custom resources that run an image of their `spec.image`
# (prometheus-operator Documentation/api-reference/api.md: PrometheusSpec, AlertmanagerSpec, ThanosRulerSpec).
IMAGE_SPEC_KINDS = frozenset({"Prometheus", "PrometheusAgent", "Alertmanager", "ThanosRuler"})
# Operator flags whose value is an image the operator runs beside each Prometheus and Alertmanager
# (prometheus-operator cmd/operator/main.go: `prometheus-config-reloader`).
IMAGE_FLAGS = ("--prometheus-config-reloader",)


def running_images(resource: Resource) -> list[tuple[str, str]]:
    """Every image `resource` runs, with where it is named: its pods' containers, an operator resource's
    `spec.image`, and the images an operator's flags name. What production pins by digest."""
    found: list[tuple[str, str]] = []
    spec = pod_spec(resource)
    for where, container in containers(spec or {}):
        if container.get("image"):
            found.append((where, str(container["image"])))
        flags = flag_values(str(arg) for arg in (container.get("args") or []))
        found += [(f"{where} flag {flag}", image) for flag in IMAGE_FLAGS for image in flags.get(flag, [])]
    image = (resource.props.get("spec") or {}).get("image")
    if resource.kind in IMAGE_SPEC_KINDS and isinstance(image, str) and image:
        found.append(("spec.image", image))
    return found


def image_digests(resource: Resource) -> list[str]:
    """Production runs every image by digest, the charts' included: a tag can be re-pushed, a digest cannot. An
    object neither the platform's nor of a stack whose file the pack reads (your own program's, say) is left
    to its owner."""
    if not resource.production or (resource.environment is None and not platform_owned(resource)):
        return []
    return [
        f"{where} runs {image} by tag; production runs every image by digest: `stackctl pin-images` resolves it "
        "into triton-platform:imageDigests (docs/deploying.md: Images by digest)"
        for where, image in running_images(resource)
        if "@sha256:" not in image
    ]


def triton_health(resource: Resource) -> list[str]:
    """Triton gets a GPU limit and startup, readiness and liveness probes."""
    spec = pod_spec(resource)
    if not is_triton(resource) or spec is None:
        return []
    container = triton_container(spec)
    if container is None:
        return ["no tritonserver container"]
    out = []
    if "nvidia.com/gpu" not in ((container.get("resources") or {}).get("limits") or {}):
        out.append("the tritonserver container has no nvidia.com/gpu limit")
    out += [
        f"the tritonserver container has no {probe}"
        for probe in ("startupProbe", "readinessProbe", "livenessProbe")
        if probe not in container
    ]
    return out


def flag_values(args: Iterable[str]) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for arg in args:
        flag, _, value = str(arg).partition("=")
        values.setdefault(flag, []).append(value)
    return values


def triton_api_surface(resource: Resource) -> list[str]:
    """Model control `none`, or dynamic control with model-repository and model-config restricted; known flags only."""
    spec = pod_spec(resource)
    if not is_triton(resource) or spec is None:
        return []
    container = triton_container(spec)
    if container is None:
        return []
    flags = flag_values(container.get("args") or [])
    out = [f"unknown tritonserver flag {flag}" for flag in sorted(flags) if flag not in TRITON_FLAGS]
    mode = (flags.get("--model-control-mode") or ["none"])[-1]
    if mode != "none":
        for option in ("--http-restricted-api", "--grpc-restricted-protocol"):
            guarded = {api for value in flags.get(option, []) for api in value.partition(":")[0].split(",")}
            missing = [api for api in GUARDED_APIS if api not in guarded]
            if missing:
                out.append(f"model control mode {mode} needs {option} to restrict {', '.join(missing)}")
    return out


def load_balancer(resource: Resource) -> list[str]:
    """No Service of type LoadBalancer: exposure goes through the Ingress."""
    if resource.kind == "Service" and (resource.props.get("spec") or {}).get("type") == "LoadBalancer":
        return ["Service type LoadBalancer exposes the server outside the cluster; use the Ingress or ClusterIP"]
    return []


def wakes_on_request(spec: dict[str, Any]) -> bool:
    """A ScaledObject at zero that the KEDA HTTP add-on wakes: minReplicaCount 0 and an `external-push` trigger on
    one of its InterceptorRoutes (triton_platform/http_add_on.py)."""
    return int(spec.get("minReplicaCount") or 0) == 0 and any(
        t.get("type") == "external-push" and "interceptorRoute" in (t.get("metadata") or {})
        for t in spec.get("triggers") or []
    )


def keda_safety(resource: Resource) -> list[str]:
    """ScaledObject: ignoreNullValues false on Prometheus triggers, but where the add-on wakes it from zero (no pod,
    so no series: there a missing one is no load); a fallback in production wherever Prometheus is read."""
    if resource.kind != "ScaledObject":
        return []
    spec = resource.props.get("spec") or {}
    triggers = spec.get("triggers") or []
    out = [
        f'trigger {i} ({t.get("type")}) must set ignoreNullValues: "false" so a missing metric is an error'
        for i, t in enumerate(triggers)
        if t.get("type") == "prometheus"
        and not wakes_on_request(spec)
        and str((t.get("metadata") or {}).get("ignoreNullValues")).lower() != "false"
    ]
    # The fallback holds replicas while Prometheus cannot be read; a ScaledObject reading none (the add-on's own,
    # for its interceptors, reads its scaler) has no such failure to hold through.
    reads_prometheus = any(t.get("type") == "prometheus" for t in triggers)
    if resource.production and reads_prometheus and not spec.get("fallback"):
        out.append("production ScaledObjects need a fallback (replicas to hold while metrics fail)")
    return out


def looks_secret(key: str, value: Any) -> bool:
    text = str(value)
    if any(p.search(text) for p in SECRET_PATTERNS):
        return True
    return bool(SECRET_NAMES.search(key)) and len(text) >= 8 and not text.startswith("$(")


def plaintext_secrets(resource: Resource) -> list[str]:
    """No secret-looking values in ConfigMaps or plain container env values."""
    out = []
    if resource.kind == "ConfigMap":
        out += [
            f"data key {k!r} looks like a secret"
            for k, v in (resource.props.get("data") or {}).items()
            if looks_secret(k, v)
        ]
    spec = pod_spec(resource)
    for where, container in containers(spec or {}):
        for env in container.get("env") or []:
            if "value" in env and looks_secret(env.get("name", ""), env["value"]):
                out.append(f"{where} env {env.get('name')} holds a secret-looking value; use valueFrom.secretKeyRef")
    return out


def stateful_data(resource: Resource) -> list[str]:
    """In production, model storage (a PersistentVolumeClaim) is protected from deletion."""
    if resource.kind == "PersistentVolumeClaim" and resource.production and not resource.protect:
        return ["production model storage must be protected (pulumi protect)"]
    return []


# --- stack rules ----------------------------------------------------------------------------


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    wanted = selector.get("matchLabels") or {}
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def max_replicas(deployment: Resource, resources: list[Resource]) -> int:
    for scaled in resources:
        target = ((scaled.props.get("spec") or {}).get("scaleTargetRef") or {}).get("name")
        if scaled.kind == "ScaledObject" and target == deployment.name and scaled.namespace == deployment.namespace:
            return int((scaled.props.get("spec") or {}).get("maxReplicaCount") or 100)
    return int((deployment.props.get("spec") or {}).get("replicas") or 1)


def woken(deployment: Resource, resources: list[Resource]) -> bool:
    """Whether the Deployment's ScaledObject wakes it on request (`wakes_on_request`)."""
    for scaled in resources:
        spec = scaled.props.get("spec") or {}
        target = (spec.get("scaleTargetRef") or {}).get("name")
        if scaled.kind == "ScaledObject" and target == deployment.name and scaled.namespace == deployment.namespace:
            return wakes_on_request(spec)
    return False


def min_replicas(deployment: Resource, resources: list[Resource]) -> tuple[int, str]:
    """The fewest replicas the Deployment runs, and who says so: its ScaledObject (KEDA's default
    minReplicaCount is 0) or its own spec.replicas (the API server's default is 1)."""
    for scaled in resources:
        spec = scaled.props.get("spec") or {}
        target = (spec.get("scaleTargetRef") or {}).get("name")
        if scaled.kind == "ScaledObject" and target == deployment.name and scaled.namespace == deployment.namespace:
            return int(spec.get("minReplicaCount") or 0), f"ScaledObject {scaled.name!r} minReplicaCount"
    return int((deployment.props.get("spec") or {}).get("replicas") or 1), "spec.replicas"


DRAIN_FLOOR = 2
"""Triton's PodDisruptionBudget lets a drain evict one pod at a time: with two, one stays ready."""


def drains(resources: list[Resource]) -> list[tuple[Resource, str]]:
    """A node drain never blocks on an unready Triton, and in production never takes the last ready one."""
    out = []
    for deployment in filter(is_triton, resources):
        labels = ((deployment.props.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
        for pdb in resources:
            spec = pdb.props.get("spec") or {}
            if (
                pdb.kind == "PodDisruptionBudget"
                and pdb.namespace == deployment.namespace
                and selects(spec.get("selector") or {}, labels)
                and spec.get("unhealthyPodEvictionPolicy") != "AlwaysAllow"
            ):
                out.append(
                    (
                        pdb,
                        "unhealthyPodEvictionPolicy is not AlwaysAllow: an unready Triton (a failed model load, "
                        "a GPU fault) blocks every node drain",
                    )
                )
        floor, source = min_replicas(deployment, resources)
        # A deployment woken on request (its stack said so: wake.allowInProduction) has its requests held by the
        # interceptor through a drain of its last pod, as through any wake.
        if deployment.production and floor < DRAIN_FLOOR and not woken(deployment, resources):
            out.append(
                (
                    deployment,
                    f"runs as few as {floor} replicas ({source}): a node drain takes the last ready pod; "
                    f"keep at least {DRAIN_FLOOR}",
                )
            )
    return out


def availability(resources: list[Resource]) -> list[tuple[Resource, str]]:
    """A Triton Deployment that can exceed one replica (every one in production) has a PDB and spread."""
    out = []
    for deployment in filter(is_triton, resources):
        if max_replicas(deployment, resources) <= 1 and not deployment.production:
            continue
        spec = pod_spec(deployment) or {}
        labels = ((deployment.props.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
        pdbs = [
            r
            for r in resources
            if r.kind == "PodDisruptionBudget"
            and r.namespace == deployment.namespace
            and selects((r.props.get("spec") or {}).get("selector") or {}, labels)
        ]
        if not pdbs:
            out.append((deployment, "no PodDisruptionBudget selects its pods"))
        if not (spec.get("affinity") or {}).get("podAntiAffinity") and not spec.get("topologySpreadConstraints"):
            out.append((deployment, "no pod anti-affinity or topology spread constraint"))
    return out


def namespace_network_policy(resources: list[Resource]) -> list[tuple[Resource, str]]:
    """Every namespace the stack creates has a NetworkPolicy in it."""
    covered = {r.namespace for r in resources if r.kind == "NetworkPolicy"}
    return [
        (ns, "no NetworkPolicy in this namespace")
        for ns in resources
        if ns.kind == "Namespace" and ns.name not in covered
    ]


def namespace_egress_policy(resources: list[Resource]) -> list[tuple[Resource, str]]:
    """Every namespace where the program runs pods denies egress unless a policy admits it."""
    denied = {
        r.namespace
        for r in resources
        if r.kind == "NetworkPolicy"
        and not ((r.props.get("spec") or {}).get("podSelector") or {})
        and "Egress" in ((r.props.get("spec") or {}).get("policyTypes") or [])
    }
    running = {r.namespace for r in resources if pod_spec(r) is not None and platform_owned(r)}
    return [
        (ns, "runs pods but has no NetworkPolicy denying egress (podSelector {}, policyTypes [Egress])")
        for ns in resources
        if ns.kind == "Namespace" and ns.name in running - denied
    ]


def sets_replicas(deployment: Resource) -> bool:
    """Whether the program sets `spec.replicas`.

    Before an update the policy sees the program's inputs; after it, the live object, whose
    `replicas` the API server defaults and the HPA writes. There, managedFields say who set it:
    only a Pulumi field manager owning `f:spec.f:replicas` is the program.
    """
    if (deployment.props.get("spec") or {}).get("replicas") is None:
        return False
    managed = deployment.metadata.get("managedFields")
    if not managed:
        return True
    return any(
        "pulumi" in str(entry.get("manager", ""))
        and "f:replicas" in ((entry.get("fieldsV1") or {}).get("f:spec") or {})
        for entry in managed
    )


def scaled_without_replicas(resources: list[Resource]) -> list[tuple[Resource, str]]:
    """A Deployment KEDA scales sets no `replicas`: each apply would fight the HPA."""
    targets = {
        (r.namespace, ((r.props.get("spec") or {}).get("scaleTargetRef") or {}).get("name"))
        for r in resources
        if r.kind == "ScaledObject"
    }
    return [
        (r, "scaled by KEDA, so it must not set spec.replicas")
        for r in resources
        if r.kind == "Deployment" and (r.namespace, r.name) in targets and sets_replicas(r)
    ]


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    source: str
    check: Callable[[Resource], list[str]] | None = None
    stack_check: Callable[[list[Resource]], list[tuple[Resource, str]]] | None = None


RULES = (
    Rule(
        "pod-security-restricted",
        "PSS restricted: non-root, no privilege escalation, drop ALL, RuntimeDefault seccomp.",
        "PSS restricted",
        check=pod_security,
    ),
    Rule(
        "no-host-access",
        "No hostPath volumes, hostNetwork, hostPID, hostIPC or hostPort.",
        "PSS baseline/restricted, kube-linter",
        check=host_access,
    ),
    Rule(
        "read-only-root-filesystem",
        "Read-only root filesystem; writable paths are explicit emptyDirs.",
        "kube-linter, Polaris",
        check=read_only_root,
    ),
    Rule(
        "resources-and-pinned-images",
        "CPU and memory requests and limits on every container; image tags pinned, never latest.",
        "kube-linter, Polaris",
        check=resources_and_images,
    ),
    Rule(
        "ephemeral-storage",
        "Every container of the platform requests and limits ephemeral-storage; every emptyDir has a sizeLimit.",
        "kube-score container-ephemeral-storage-request-and-limit, kubelet disk-pressure eviction",
        check=ephemeral_storage,
    ),
    Rule(
        "production-image-digests",
        "Production runs every image by digest, the charts' included (`triton-platform:imageDigests`).",
        "checkov CKV_K8S_43",
        check=image_digests,
    ),
    Rule(
        "triton-health",
        "Triton has an nvidia.com/gpu limit and startup, readiness and liveness probes.",
        "Triton deploy guide, Polaris",
        check=triton_health,
    ),
    Rule(
        "triton-api-surface",
        "Model control none, or dynamic control with model-repository and model-config restricted; "
        "only known tritonserver flags.",
        "Triton deploy guide, command_line_parser.cc",
        check=triton_api_surface,
    ),
    Rule(
        "no-load-balancer",
        "No Service of type LoadBalancer unless an exception allows it.",
        "kube-linter (exposed services)",
        check=load_balancer,
    ),
    Rule(
        "keda-scaling-safety",
        "ignoreNullValues false on Prometheus triggers (but at zero, woken by the KEDA HTTP add-on); a fallback in "
        "production where Prometheus is read.",
        "KEDA docs",
        check=keda_safety,
    ),
    Rule(
        "no-plaintext-secrets",
        "No secret-looking values in ConfigMaps or plain env values.",
        "kube-linter (env-var-secret), Checkov",
        check=plaintext_secrets,
    ),
    Rule(
        "protected-model-storage",
        "Production PersistentVolumeClaims are protected.",
        "this platform's data rule",
        check=stateful_data,
    ),
    Rule(
        "triton-availability",
        "Triton Deployments that can exceed one replica (all in production) have a PDB and anti-affinity or spread.",
        "PSS-adjacent guidance, kube-linter, Polaris",
        stack_check=availability,
    ),
    Rule(
        "triton-drain",
        "A Triton PDB lets drains evict unready pods (unhealthyPodEvictionPolicy AlwaysAllow); in production a "
        "Triton Deployment runs at least 2 replicas, so a drain leaves one ready.",
        "Kubernetes docs, Specifying a Disruption Budget: unhealthy pod eviction policy",
        stack_check=drains,
    ),
    Rule(
        "namespace-network-policy",
        "Every namespace the stack creates has a NetworkPolicy.",
        "kube-linter, Polaris",
        stack_check=namespace_network_policy,
    ),
    Rule(
        "namespace-egress-policy",
        "Every namespace where the program runs pods denies egress by default; each workload's own policy admits "
        "what it needs.",
        "kube-score pod-networkpolicy; Kubernetes docs, Network Policies: default deny all egress traffic",
        stack_check=namespace_egress_policy,
    ),
    Rule(
        "keda-no-static-replicas",
        "A Deployment scaled by KEDA sets no spec.replicas.",
        "KEDA docs",
        stack_check=scaled_without_replicas,
    ),
)
POLICY_NAMES = tuple(rule.name for rule in RULES)


def granted_exceptions(config: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, str]]:
    """`triton-platform:policyExceptions` of a stack file's config: (kind, name) -> {policy: reason}."""
    granted: dict[tuple[str, str], dict[str, str]] = {}
    for item in config.get("triton-platform:policyExceptions") or []:
        granted.setdefault((item["kind"], item["name"]), {})[item["policy"]] = item["reason"]
    return granted


def unknown_exception_targets(
    granted: Mapping[tuple[str, str], Mapping[str, str]], resources: Iterable[Resource]
) -> list[str]:
    """Exceptions the stack's config grants to an object it does not create: a typo would otherwise pass unseen.

    Only the preview sees every object, charts' included, so the pack checks this, not `stackctl validate`.
    """
    present = {(r.kind, r.name) for r in resources}
    out = []
    for (kind, name), policies in sorted(granted.items()):
        if (kind, name) in present:
            continue
        close = difflib.get_close_matches(name, sorted(n for k, n in present if k == kind), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        out.append(
            f"triton-platform:policyExceptions grants {', '.join(sorted(policies))} to {kind} {name!r}, which is no "
            f"object of this stack; {hint}an exception names an object by kind and metadata.name"
        )
    return out


def violations(rule: Rule, resource: Resource) -> tuple[list[str], str | None]:
    """(violations, exception reason): an object's declared exception turns its violations into a note."""
    found = rule.check(resource) if rule.check else []
    reason = resource.exception(rule.name)
    return ([], reason) if found and reason else (found, None)
