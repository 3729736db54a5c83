"""The KEDA HTTP add-on (kedacore/http-add-on v0.15.0): what the platform relies on, and the objects that wake a
Deployment at zero replicas on its first request.

The add-on's interceptor proxy holds a request while its route's target Service has no ready endpoint, up to the
route's readiness timeout (then 504), and its scaler tells KEDA, through an `external-push` trigger, that the
route has requests in flight; KEDA scales the Deployment 0 -> 1, and the interceptor forwards the held requests
once a pod is ready (interceptor/middleware/routing.go, interceptor/handler/upstream.go). Routing is by the
request's host (port stripped), then the longest path prefix (pkg/routing/key.go). The interceptor dials
`<service>.<namespace>:<port>` of the route's target, speaking h2c when that Service port's `appProtocol` is
`kubernetes.io/h2c`, so gRPC is held and woken too (v0.15.0, CHANGELOG; #1084, #1676).

Clients keep the address they know: a deployment woken on request keeps its Service's name and ports, as an
ExternalName Service pointing at the wake Service (`wake_service_manifest`) in the add-on's namespace, which
selects the interceptor pods on Triton's own port numbers. Triton's pods get a second Service (`pods_service_name`),
the routes' target. Facts about the chart are the chart's (kedacore/charts keda-add-ons-http 0.15.0, templates/).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from triton_platform.args.kubernetes_values import UNHEALTHY_POD_EVICTION_POLICY
from triton_platform.kube.helm_chart import ChartSource
from triton_platform.kube.pod_spread import preferred_host_spread
from triton_platform.promql import label_value
from triton_platform.triton_ports import GRPC_PORT, HTTP_PORT

HTTP_ADD_ON_CHART: ChartSource = {"version": "0.15.0", "repository": "https://kedacore.github.io/charts"}
"""The add-on's chart, `keda-add-ons-http` (kedacore/charts); 0.15.0 is the first to proxy HTTP/2 and h2c."""
CHART_NAME = "keda-add-ons-http"
API_VERSION = "http.keda.sh/v1beta1"
"""InterceptorRoute's group and version (operator/apis/http/v1beta1); `HTTPScaledObject` (v1alpha1) is deprecated."""
INTERCEPTOR_LABELS = {"app.kubernetes.io/component": "interceptor", "app.kubernetes.io/name": "http-add-on"}
"""Labels of the interceptor's pods in any release of the chart (templates/interceptor/deployment.yaml)."""
PROXY_PORT_NAME = "proxy"
"""The interceptor container's proxy port (chart value `interceptor.proxy.port`, 8080)."""
SCALER_SERVICE = f"{CHART_NAME}-external-scaler"
SCALER_PORT = 9090
"""The external scaler's Service and gRPC port (templates/scaler/service.yaml, value `scaler.grpcPort`)."""
GRPC_PATH = "/inference.GRPCInferenceService/"
GRPC_HEALTH_PATH = "/grpc.health.v1.Health/"
"""Triton's gRPC service and the standard gRPC health service it also serves (grpc_service.proto): every gRPC
request's path starts with one, so the gRPC route takes them and the HTTP route keeps the rest."""
METRICS_PORT = 2223
"""The interceptor's Prometheus exporter (pkg/observability/config.go, OTEL_PROM_EXPORTER_PORT): it serves
`interceptor_request_concurrency`, `interceptor_request_count_total` and `interceptor_request_duration_seconds`,
labelled `route_name` and `route_namespace` (interceptor/metrics/instruments.go; test/helpers/constants.go). The
chart declares no container port and no Service for it (the add-on's own config/interceptor/metrics-service.yaml
does): the wake Service carries it."""
WAKE_SERVICE_LABELS = {"app.kubernetes.io/name": "triton-wake", "app.kubernetes.io/component": "interceptor"}
"""Labels of every wake Service: what the interceptor's ServiceMonitor selects (with the Service's name)."""


def pods_service_name(service: str) -> str:
    """The Service selecting a woken deployment's own pods: the interceptor's target, and what Prometheus scrapes."""
    return f"{service}-pods"


def wake_service_name(namespace: str) -> str:
    """The Service in the add-on's namespace that takes a serving namespace's woken deployments' traffic."""
    return f"triton-wake-{namespace}"


def wake_service_problem(namespace: str) -> str | None:
    """Why a serving namespace cannot name its wake Service (a Service name is a DNS label of 63 characters)."""
    name = wake_service_name(namespace)
    if len(name) <= 63:
        return None
    return (
        f"needs the Service {name!r} in the interceptor's namespace, longer than a Service name's 63 characters; "
        f"use a namespace of at most {63 - len(wake_service_name(''))} characters"
    )


def wake_service_address(namespace: str, add_on_namespace: str, cluster_domain: str) -> str:
    """The fully qualified name an ExternalName Service points at (a CNAME's target is never searched)."""
    return f"{wake_service_name(namespace)}.{add_on_namespace}.svc.{cluster_domain}"


def service_hosts(service: str, namespace: str, cluster_domain: str) -> list[str]:
    """Every name a client in the cluster may call a Service by: the routes match the request's host exactly."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.{cluster_domain}",
    ]


def wake_over_budget_expr(namespace: str, deployment: str) -> str:
    """True while requests to `deployment` are in flight at the interceptor and none of its pods is available:
    they are waiting for a wake (kube-state-metrics' `kube_deployment_status_replicas_available`)."""
    routes, ns = label_value("|".join(route_names(deployment).values())), label_value(namespace)
    return (
        f"sum(interceptor_request_concurrency{{route_namespace={ns}, route_name=~{routes}}}) > 0"
        f" and on () sum(kube_deployment_status_replicas_available{{namespace={ns},"
        f" deployment={label_value(deployment)}}}) == 0"
    )


def route_names(deployment: str) -> dict[str, str]:
    """The InterceptorRoute of each protocol of a Deployment, by protocol."""
    return {"http": f"{deployment}-http", "grpc": f"{deployment}-grpc"}


def interceptor_routes(
    *,
    deployment: str,
    namespace: str,
    service: str,
    hosts: Sequence[str],
    budget_seconds: int,
    concurrency_target: int,
    labels: Mapping[str, str],
) -> dict[str, dict[str, Any]]:
    """The InterceptorRoutes of one Deployment, by protocol: both target its pods' Service (`<service>-pods`, its
    ports named `http` and `grpc`) and hold a request at most `budget_seconds` for a ready pod, then answer 504."""
    paths = {"http": None, "grpc": [GRPC_PATH, GRPC_HEALTH_PATH]}
    names = route_names(deployment)
    out = {}
    for protocol, name in names.items():
        rule: dict[str, Any] = {"hosts": list(hosts)}
        if paths[protocol]:
            rule["paths"] = [{"value": path} for path in paths[protocol] or ()]
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if labels:
            metadata["labels"] = dict(labels)
        out[protocol] = {
            "apiVersion": API_VERSION,
            "kind": "InterceptorRoute",
            "metadata": metadata,
            "spec": {
                "target": {"service": pods_service_name(service), "portName": protocol},
                "rules": [rule],
                "scalingMetric": {"concurrency": {"targetValue": concurrency_target}},
                "timeouts": {"readiness": f"{budget_seconds}s"},
            },
        }
    return out


def wake_triggers(deployment: str, add_on_namespace: str) -> list[dict[str, Any]]:
    """KEDA `external-push` triggers on the Deployment's routes: the add-on's scaler reports a route's requests in
    flight, and pushes activity as it happens (the add-on's own e2e tests: test/helpers/scaledobject.go)."""
    address = f"{SCALER_SERVICE}.{add_on_namespace}:{SCALER_PORT}"
    return [
        {
            "type": "external-push",
            "name": f"wake-{protocol}",
            "metadata": {"scalerAddress": address, "interceptorRoute": route},
        }
        for protocol, route in route_names(deployment).items()
    ]


def wake_service_manifest(namespace: str, add_on_namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """The Service that takes a serving namespace's woken traffic to the interceptor's proxy, on the port numbers
    clients call Triton on (an ExternalName Service keeps the port)."""
    ports = {"http": HTTP_PORT, "grpc": GRPC_PORT}
    metadata: dict[str, Any] = {
        "name": wake_service_name(namespace),
        "namespace": add_on_namespace,
        "labels": {**labels, **WAKE_SERVICE_LABELS},
    }
    protocols = {"http": "http", "grpc": "kubernetes.io/h2c"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "type": "ClusterIP",
            "selector": dict(INTERCEPTOR_LABELS),
            "ports": [
                {
                    "name": protocol,
                    "port": ports[protocol],
                    "targetPort": PROXY_PORT_NAME,
                    "protocol": "TCP",
                    "appProtocol": app,
                }
                for protocol, app in protocols.items()
            ]
            + [
                {
                    "name": "metrics",
                    "port": METRICS_PORT,
                    "targetPort": METRICS_PORT,
                    "protocol": "TCP",
                    "appProtocol": "http",
                }
            ],
        },
    }


ADD_ON_UID = 65532
"""The add-on's images run as ko's default non-root user, 65532 (its .ko.yaml builds them with ko)."""


def _spread(component: str) -> dict[str, Any]:
    return preferred_host_spread({"app.kubernetes.io/component": component, "app.kubernetes.io/name": "http-add-on"})


def add_on_values(priority_class_name: str | None = None) -> dict[str, Any]:
    """The chart's values (kedacore/charts keda-add-ons-http 0.15.0 values.yaml), reviewed: its pods made to pass
    Pod Security Standards `restricted` (the chart sets neither `runAsNonRoot` nor a seccomp profile) as the
    images' own user; two operators (they elect a leader, `--leader-elect`); the interceptors and scalers (3 of
    each); each component's pods spread over nodes. Everything else is the chart's default, among them the
    interceptor's own ScaledObject (3 to 50 replicas, which needs KEDA, installed first), its PodDisruptionBudget,
    and the operator's metrics behind TLS and authentication. The route's readiness timeout, not the chart's
    global one, bounds a wake. `priority_class_name`: KEDA's, for the interceptors, scalers and operators too: every
    request to a deployment at zero passes through the interceptor, so the add-on outranks the pods it wakes."""
    priority = {"priorityClassName": priority_class_name} if priority_class_name else {}
    return {
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "privileged": False,
            "readOnlyRootFilesystem": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "podSecurityContext": {
            "runAsNonRoot": True,
            "runAsUser": ADD_ON_UID,
            "runAsGroup": ADD_ON_UID,
            "fsGroup": ADD_ON_UID,
            "supplementalGroups": [ADD_ON_UID],
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "operator": {"replicas": 2, "affinity": _spread("operator"), **priority},
        "interceptor": {"affinity": _spread("interceptor"), **priority},
        "scaler": {"affinity": _spread("scaler"), **priority},
    }


def disruption_budgets(add_on_namespace: str, labels: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """PodDisruptionBudgets for the add-on's operators and scalers, which the chart gives none (it gives the
    interceptors one), by component: a drain keeps one of each, so KEDA keeps seeing a route's requests (without a
    scaler a deployment at zero stays asleep)."""
    names = {"operator": f"{CHART_NAME}-controller-manager", "scaler": SCALER_SERVICE}
    return {
        component: {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": add_on_namespace, "labels": dict(labels)},
            "spec": {
                "minAvailable": 1,
                "selector": {
                    "matchLabels": {"app.kubernetes.io/component": component, "app.kubernetes.io/name": "http-add-on"}
                },
                "unhealthyPodEvictionPolicy": UNHEALTHY_POD_EVICTION_POLICY,
            },
        }
        for component, name in names.items()
    }
