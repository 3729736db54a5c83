"""The monitoring stack: scraping, rules, alert routing and dashboards, and optionally the operator itself.

Builders return plain manifests; `Monitoring` wires them. With mode `install`
the pinned kube-prometheus-stack chart comes first and everything else waits
for it (its CRDs); with `existing` only the platform's own objects are made.

What it watches is a contract: Services labelled `app.kubernetes.io/name: triton-inference-server`
with a port named `metrics`, and `app.kubernetes.io/instance` set to their Deployment's name
(triton_platform/serving/serving_context.py labels Triton's that way).

Its Args are monitoring_args.py's `MonitoringArgs`. No `from __future__ import annotations`: Pulumi's
schema inference reads `__init__`'s annotations as types.
"""

import math
from typing import Any, Optional

import pulumi
import pulumi_random as random

from triton_platform.args.component_types import type_token, with_former_type
from triton_platform.args.durations import duration_seconds
from triton_platform.args.kubernetes_values import quantity_value
from triton_platform.args.object_claims import claim
from triton_platform.http_add_on import WAKE_SERVICE_LABELS, wake_service_name
from triton_platform.kube.helm_chart import HelmChartArgs, InstalledChart
from triton_platform.kube.kubernetes_objects import create_object
from triton_platform.kube.policy_exceptions import exception_annotations
from triton_platform.kube.priority_classes import SCALING_PRIORITY, priority_class
from triton_platform.monitoring.alert_routing import ReceiverSecret, alertmanager_config_manifest, receiver_secrets
from triton_platform.monitoring.dashboards import FOLDER_ANNOTATION, dashboard_manifest
from triton_platform.monitoring.monitoring_args import (
    COMPONENT,
    DASHBOARD_LABEL,
    NULL_RECEIVER,
    POD_SECURITY_LABELS,
    MonitoringArgs,
)
from triton_platform.monitoring.monitoring_rules import load_queries, rule_groups
from triton_platform.monitoring.monitoring_settings import (
    joined_settings,
    joins_outputs,
    monitoring_settings,
    object_name,
    served_models,
)
from triton_platform.monitoring.prometheus_storage import CHART_SERIES, platform_series, retention_size, volume_gi
from triton_platform.monitoring.token_rules import token_queries

TYPE_TOKEN = type_token("Monitoring")
FORMER_TYPE_TOKEN = "triton-platform:monitoring:Monitoring"
"""The type before the component package (component_types.py)."""
RELEASE_NAME = "kube-prometheus-stack"
GRAFANA_ADMIN_SECRET = "grafana-admin"


def in_cluster_prometheus_url(namespace: str) -> str:
    """The Service the Prometheus Operator puts before every Prometheus it runs (prometheus-operator,
    `governingServiceName` in pkg/prometheus), on Prometheus' web port."""
    return f"http://prometheus-operated.{namespace}.svc:9090"


def _selected_labels(settings: MonitoringArgs) -> dict[str, str]:
    return {**settings["labels"], **settings["selector_labels"]}


def service_monitor_manifest(settings: MonitoringArgs) -> dict[str, Any]:
    """Scrapes the metrics port of the monitored deployments' Services: those whose `app.kubernetes.io/instance`
    (the label TritonServing gives every object of a deployment) is one of the `object_name`s its outputs hand in.
    Relabelings guarantee the labels rules and KEDA select on."""
    ns = settings["namespace"]
    instances = sorted({object_name(deployment) for deployment in settings["deployments"].values()})
    # Every action stated, `replace` too: the CRD defaults it inside this atomic list, and a list the server
    # completed differs from the next apply's, which then conflicts (tests/support/crd_schemas.py).
    relabelings = [
        # A pod still loading models is not ready and serves no metrics yet: not a target until ready
        # (endpoints and EndpointSlice discovery name the condition differently).
        {"sourceLabels": ["__meta_kubernetes_endpoint_ready"], "regex": "false", "action": "drop"},
        {
            "sourceLabels": ["__meta_kubernetes_endpointslice_endpoint_conditions_ready"],
            "regex": "false",
            "action": "drop",
        },
        {"sourceLabels": ["__meta_kubernetes_namespace"], "targetLabel": "namespace", "action": "replace"},
        {"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "pod", "action": "replace"},
        {"sourceLabels": ["__meta_kubernetes_service_name"], "targetLabel": "service", "action": "replace"},
        # The Deployment's name, as kube-state-metrics labels it: joins need no label_replace.
        {
            "sourceLabels": ["__meta_kubernetes_service_label_app_kubernetes_io_instance"],
            "targetLabel": "deployment",
            "action": "replace",
        },
    ]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "triton", "namespace": ns, "labels": _selected_labels(settings)},
        "spec": {
            "selector": {
                "matchExpressions": [{"key": "app.kubernetes.io/instance", "operator": "In", "values": instances}]
            },
            "namespaceSelector": {"matchNames": [ns]},
            "endpoints": [
                {
                    "port": "metrics",
                    "path": "/metrics",
                    "interval": settings["scrape_interval"],
                    "relabelings": relabelings,
                }
            ],
        },
    }


def interceptor_monitor_manifest(settings: MonitoringArgs) -> dict[str, Any]:
    """Scrapes the KEDA HTTP add-on's interceptors through this namespace's wake Service (http_add_on.py), for the
    wake alert; the interceptors label each series with the route it counts (`route_name`, `route_namespace`)."""
    ns = settings["namespace"]
    endpoint = {
        "port": "metrics",
        "path": "/metrics",
        "interval": settings["scrape_interval"],
        # Other namespaces' wake Services select the same pods: scraped once, through this one.
        "relabelings": [
            {"sourceLabels": ["__meta_kubernetes_service_name"], "regex": wake_service_name(ns), "action": "keep"}
        ],
    }
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "triton-interceptor", "namespace": ns, "labels": _selected_labels(settings)},
        "spec": {
            "selector": {"matchLabels": dict(WAKE_SERVICE_LABELS)},
            "namespaceSelector": {"matchNames": [settings["interceptor_namespace"]]},
            "endpoints": [endpoint],
        },
    }


def prometheus_rule_manifest(settings: MonitoringArgs) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": "triton-platform",
            "namespace": settings["namespace"],
            "labels": _selected_labels(settings),
        },
        "spec": {"groups": rule_groups(settings)},
    }


GRAFANA_RESOURCES = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
SIDECAR_RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "256Mi"}}
KUBE_STATE_METRICS_RESOURCES = {
    "requests": {"cpu": "50m", "memory": "128Mi"},
    "limits": {"cpu": "500m", "memory": "512Mi"},
}
PROMETHEUS_RESOURCES = {"requests": {"cpu": "500m", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}}
"""Prometheus' memory follows its head series (about 100,000 here, prometheus_storage.py): a few
KiB each, and twice that while the WAL replays after a restart."""
ALERTMANAGER_RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "256Mi"}}
RELOADER_RESOURCES = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}
"""The operator's config reloader beside each Prometheus and Alertmanager (the chart's default sets 10m/50Mi)."""
MANAGED_CONTROL_PLANE = ("kubeControllerManager", "kubeScheduler", "kubeEtcd")
"""The chart's jobs (their Services, ServiceMonitors and rules) for control-plane parts a managed cluster hides."""


def prometheus_volume_gi(settings: MonitoringArgs) -> int:
    """Each Prometheus replica's volume in GiB, from the platform's series at every deployment's ceiling and the
    chart's allowance, the scrape interval and the retention (triton_platform/monitoring/prometheus_storage.py)."""
    deployments = [(d["max_replicas"], len(served_models(d))) for d in settings["deployments"].values()]
    series = platform_series(deployments) + CHART_SERIES
    interval, retention = duration_seconds(settings["scrape_interval"]), duration_seconds(settings["retention"])
    return volume_gi(series, interval, retention)


def _claim(storage_class: str | None, size: str) -> dict[str, Any]:
    """The operator's `storage` field: a claim per replica, kept across restarts (its StatefulSet's template)."""
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    return {"volumeClaimTemplate": {"spec": spec}}


def _availability(settings: MonitoringArgs) -> dict[str, Any]:
    """Replicas, and a disruption budget that keeps one of an HA set up through a node drain."""
    return {"podDisruptionBudget": {"enabled": True, "minAvailable": 1}} if settings["replicas"] > 1 else {}


def priority_class_manifest(settings: MonitoringArgs) -> dict[str, Any] | None:
    """The PriorityClass of Prometheus, Alertmanager, the operator and kube-state-metrics, where one is named."""
    if "priority_class_name" not in settings:
        return None
    description = (
        f"Prometheus and Alertmanager in {settings['prometheus_namespace']}: the scaling signal outranks Triton "
        "serving."
    )
    labels = dict(settings["labels"])
    return priority_class(settings["priority_class_name"], SCALING_PRIORITY, description, True, labels)


def chart_values(settings: MonitoringArgs) -> dict[str, Any]:
    """kube-prometheus-stack values: select the platform's objects, keep Grafana's password in a Secret; in
    production's settings, persistent, replicated and prioritised Prometheus and Alertmanager. Image pull
    policies and digests are the platform's own rule, applied to every chart object (helm_chart.py)."""
    select = {"matchLabels": dict(settings["selector_labels"])}
    priority = {"priorityClassName": settings["priority_class_name"]} if "priority_class_name" in settings else {}
    storage = settings.get("storage")
    prometheus_spec: dict[str, Any] = {
        "serviceMonitorSelector": {},
        "serviceMonitorSelectorNilUsesHelmValues": False,
        "serviceMonitorNamespaceSelector": {},
        "ruleSelector": select,
        "ruleNamespaceSelector": {},
        "retention": settings["retention"],
        "replicas": settings["replicas"],
        "resources": PROMETHEUS_RESOURCES,
        **priority,
    }
    alertmanager_spec: dict[str, Any] = {
        "alertmanagerConfigSelector": select,
        "alertmanagerConfigNamespaceSelector": {},
        "replicas": settings["replicas"],
        "resources": ALERTMANAGER_RESOURCES,
        **priority,
    }
    if storage is not None:
        volume = storage.get("prometheus_size") or f"{prometheus_volume_gi(settings)}Gi"
        prometheus_spec["storageSpec"] = _claim(storage.get("storage_class_name"), volume)
        # Past this, Prometheus deletes its oldest blocks rather than fill the volume and stop scraping.
        prometheus_spec["retentionSize"] = retention_size(math.floor(quantity_value(volume) / 2**30))
        alertmanager_spec["storage"] = _claim(storage.get("storage_class_name"), storage["alertmanager_size"])
    values: dict[str, Any] = {
        # The operator's admission webhook gets its certificate from Helm hook Jobs, which are not part of
        # the chart's objects here (triton_platform/kube/helm_chart.py); without them the webhook and the operator's
        # TLS listener would wait for a Secret nothing creates. Rules are checked by promtool before deploy.
        "prometheusOperator": {
            "admissionWebhooks": {"enabled": False},
            "tls": {"enabled": False},
            # The chart sets none; the policy pack requires requests and limits on every container.
            "resources": {
                "requests": {"cpu": "100m", "memory": "128Mi"},
                "limits": {"cpu": "500m", "memory": "512Mi"},
            },
            "prometheusConfigReloader": {"resources": RELOADER_RESOURCES},
            **priority,
        },
        # A dedicated Prometheus: scrape every ServiceMonitor, KEDA's chart's included (it carries no release label).
        "prometheus": {"prometheusSpec": prometheus_spec, **_availability(settings)},
        "nodeExporter": {"enabled": False},  # needs host access; the platform's rules read Triton's own GPU metrics
        "alertmanager": {
            # Replaces the chart's default config, whose InfoInhibitor would mute every info alert;
            # the platform's routes come from its AlertmanagerConfig.
            "config": {
                "route": {"receiver": NULL_RECEIVER, "group_by": ["namespace"]},
                "receivers": [{"name": NULL_RECEIVER}],
                "inhibit_rules": [],
            },
            "alertmanagerSpec": alertmanager_spec,
            **_availability(settings),
        },
        "grafana": {
            "admin": {"existingSecret": GRAFANA_ADMIN_SECRET, "userKey": "admin-user", "passwordKey": "admin-password"},
            # The chart sets no resources and leaves the root filesystem writable (grafana/helm-charts
            # charts/grafana/values.yaml; Helm merges these maps into its defaults). Grafana writes only under
            # /var/lib/grafana (the chart's `storage` emptyDir) and /tmp; it logs to the console (`log.mode`).
            "resources": GRAFANA_RESOURCES,
            "containerSecurityContext": {"readOnlyRootFilesystem": True},
            "extraVolumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}}],
            "extraVolumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
            "sidecar": {
                # The dashboard and datasource sidecars (kiwigrid/k8s-sidecar) write only into their emptyDirs.
                "resources": SIDECAR_RESOURCES,
                "securityContext": {"readOnlyRootFilesystem": True},
                "dashboards": {
                    "enabled": True,
                    "label": next(iter(DASHBOARD_LABEL)),
                    "labelValue": next(iter(DASHBOARD_LABEL.values())),
                    "searchNamespace": "ALL",
                    "folderAnnotation": FOLDER_ANNOTATION,
                    "provider": {"foldersFromFilesStructure": True},
                },
            },
        },
        # kube-state-metrics already runs read-only and non-root (its chart's containerSecurityContext) but sets
        # no resources; its memory grows with the number of objects in the cluster.
        "kube-state-metrics": {"resources": KUBE_STATE_METRICS_RESOURCES, **priority},
    }
    if settings["managed_control_plane"]:
        # Their Down alerts would fire forever: the cloud runs these out of every pod's reach.
        values.update({part: {"enabled": False} for part in MANAGED_CONTROL_PLANE})
    return values


def _secret_manifest(settings: MonitoringArgs, secret: ReceiverSecret) -> dict[str, Any]:
    """A receiver's credentials given as values, in a Secret of their own."""
    data = {k: pulumi.Output.secret(v) for k, v in secret.values.items()}
    return {**_secret_object(settings, secret), "type": "Opaque", "stringData": data}


def _secret_object(settings: MonitoringArgs, secret: ReceiverSecret) -> dict[str, Any]:
    """The Secret of a receiver's credentials, without them: what names it."""
    metadata = {"name": secret.secret_name, "namespace": settings["namespace"], "labels": dict(settings["labels"])}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata}


def _known_later(
    manifest: dict[str, Any], built: pulumi.Output[dict[str, dict[str, Any]]], role: str
) -> dict[str, Any]:
    """The manifest of `role` with each field read from `built`: its kind now, its content once known."""

    def field_of(field: str) -> pulumi.Output[Any]:
        return built.apply(lambda manifests: manifests[role][field])

    kind = {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"]}
    return {**kind, **{field: field_of(field) for field in manifest if field not in kind}}


def monitoring_manifests(settings: MonitoringArgs) -> dict[str, dict[str, Any]]:
    """The monitoring objects, by role (the chart, in install mode, is separate)."""
    out = {
        **({"service-monitor": service_monitor_manifest(settings)} if settings["deployments"] else {}),
        "rules": prometheus_rule_manifest(settings),
        "alert-routing": alertmanager_config_manifest(
            settings["receivers"], settings["routes"], settings["namespace"], _selected_labels(settings)
        ),
    }
    if any("wake_budget_seconds" in d for d in settings["deployments"].values()):
        out["interceptor-monitor"] = interceptor_monitor_manifest(settings)
    for key, deployment in sorted(settings["deployments"].items()):
        out[f"{key}-dashboard"] = dashboard_manifest(settings, deployment)
    return out


def named_objects(settings: MonitoringArgs, joined: bool) -> list[dict[str, Any]]:
    """What Monitoring creates under names known before its inputs resolve: its receivers' Secrets, its rules,
    monitors, routing and dashboards (a dashboard's name waits for its Deployment's where `joined`, the Args holding
    another resource's Outputs), and in install mode Prometheus' namespace and the PriorityClass."""
    secrets = [_secret_object(settings, secret) for secret in receiver_secrets(settings["receivers"])]
    own = [m for role, m in monitoring_manifests(settings).items() if not (joined and role.endswith("-dashboard"))]
    if settings["mode"] == "install":
        own.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": settings["prometheus_namespace"]}})
        own += [m for m in [priority_class_manifest(settings)] if m is not None]
    return [*secrets, *own]


class Monitoring(pulumi.ComponentResource):
    """ServiceMonitor, PrometheusRule, AlertmanagerConfig and dashboards; in install mode the operator stack too."""

    grafana_admin_password: Optional[pulumi.Output[str]]
    """Grafana's generated admin password (a secret), in install mode."""

    metrics_namespace: pulumi.Output[str]
    """Namespace the Prometheus that scrapes the metrics runs in (`prometheus_namespace`): other components admit
    its scrapes from there."""

    metrics_pod_labels: pulumi.Output[dict[str, str]]
    """Labels of that Prometheus' pods (`prometheus_pod_labels`): other components admit its scrapes from them."""

    prometheus_url: pulumi.Output[str]
    """That Prometheus' in-cluster URL, `http://prometheus-operated.<metrics namespace>.svc:9090`."""

    load_queries: pulumi.Output[dict[str, str]]
    """What KEDA scales each deployment on, by deployment key: its `signal` summed over its pods, over the window
    its recording rule reads. KedaScaling's `targets.<key>.trigger.query`."""

    token_queries: pulumi.Output[dict[str, dict[str, str]]]
    """What KEDA scales each deployment on besides, by deployment key then trigger name: for a deployment serving
    models with `token_objectives`, `time-to-first-token` and, with a TensorRT-LLM model, `kv-cache`
    (triton_platform/token_signal.py); empty for the others. KedaScaling's `targets.<key>.extra_triggers`."""

    def __init__(self, name: str, args: MonitoringArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        # Checked before any resource, TritonServing's outputs among the Args by stand-ins until they are known; so is
        # an object another instance creates already (a dashboard's name waits for its Deployment's).
        settings = monitoring_settings(name, args)
        claim(f"{COMPONENT} {name}", opts, named_objects(settings, joins_outputs(args)))
        super().__init__(TYPE_TOKEN, name, None, with_former_type(opts, FORMER_TYPE_TOKEN))
        child = pulumi.ResourceOptions(parent=self)
        after: list[pulumi.Resource] = []
        self.grafana_admin_password = None
        if settings["mode"] == "install":
            after.extend(self._install(name, settings, child))
        # Not an output (resources are no component output): what the Prometheus Operator's custom resources of
        # other components wait for, its chart in install mode, else nothing.
        self.operator: list[pulumi.Resource] = list(after)
        for secret in receiver_secrets(settings["receivers"]):
            create_object(f"{name}-{secret.secret_name}", _secret_manifest(settings, secret), child)
        ordered = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=after))
        known = joined_settings(name, args, settings)
        built = known.apply(monitoring_manifests)
        # The roles and kinds depend only on the deployment keys: the stand-ins' manifests name them now.
        for role, manifest in monitoring_manifests(settings).items():
            create_object(f"{name}-{role}", _known_later(manifest, built, role), ordered)
        self.load_queries = known.apply(load_queries)
        self.token_queries = known.apply(token_queries)
        self.metrics_namespace = pulumi.Output.from_input(settings["prometheus_namespace"])
        self.metrics_pod_labels = pulumi.Output.from_input(dict(settings["prometheus_pod_labels"]))
        self.prometheus_url = pulumi.Output.from_input(in_cluster_prometheus_url(settings["prometheus_namespace"]))
        self.register_outputs(
            {
                "grafanaAdminPassword": self.grafana_admin_password,
                "metricsNamespace": self.metrics_namespace,
                "metricsPodLabels": self.metrics_pod_labels,
                "prometheusUrl": self.prometheus_url,
                "loadQueries": self.load_queries,
                "tokenQueries": self.token_queries,
            }
        )

    def _install(self, name: str, settings: MonitoringArgs, child: pulumi.ResourceOptions) -> list[pulumi.Resource]:
        namespace = settings["prometheus_namespace"]
        labels = dict(settings["labels"])
        ns = create_object(
            f"{name}-namespace",
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": namespace,
                    "labels": {**labels, **POD_SECURITY_LABELS},
                    "annotations": exception_annotations(
                        {
                            "namespace-network-policy": "kube-prometheus-stack's Prometheus scrapes targets in every "
                            "namespace and its operator calls the API server, whose address no NetworkPolicy can "
                            "name; the chart creates no NetworkPolicy of its own"
                        }
                    ),
                },
            },
            child,
        )
        before: list[pulumi.Resource] = [ns]
        scaling_priority = priority_class_manifest(settings)
        if scaling_priority is not None:
            before.append(create_object(f"{name}-priority-class", scaling_priority, child))
        child = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=before))
        password = random.RandomPassword(f"{name}-grafana-admin", length=32, special=False, opts=child)
        self.grafana_admin_password = pulumi.Output.secret(password.result)
        secret = create_object(
            f"{name}-grafana-admin",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": GRAFANA_ADMIN_SECRET,
                    "namespace": namespace,
                    "labels": labels,
                },
                "type": "Opaque",
                "stringData": {"admin-user": "admin", "admin-password": self.grafana_admin_password},
            },
            child,
        )
        installed = InstalledChart(
            f"{name}-{RELEASE_NAME}",
            HelmChartArgs(
                chart_name=RELEASE_NAME,
                chart=settings["chart"],
                release=RELEASE_NAME,
                namespace=namespace,
                values=chart_values(settings),
                image_digests=dict(settings["image_digests"]),
                kube_version=settings.get("kube_version"),
            ),
            pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[secret])),
        )
        return [installed]
