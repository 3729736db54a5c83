"""The rules over one resource at a time: pod security, host access, images and digests, Triton's health,
flags and API surface, load balancers, KEDA's safety, secrets in clear, protected model storage.

Sources: Kubernetes Pod Security Standards "restricted" (PSS), kube-linter and Polaris checks, NVIDIA Triton's
deploy guide and `command_line_parser.cc`, KEDA's ScaledObject docs."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from policy.resource import PROJECT, Resource, containers, is_triton, pod_spec, triton_container

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
