"""The monitoring stack: scraping, rules, alert routing and dashboards, and optionally the operator itself.

Builders return plain manifests; `Monitoring` wires them. With mode `install`
the pinned kube-prometheus-stack chart comes first and everything else waits
for it (its CRDs); with `existing` only the platform's own objects are made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_random as random

from components.alert_routing import NULL_RECEIVER, alertmanager_config_manifest, receiver_secrets
from components.dashboards import DASHBOARD_LABEL, FOLDER_ANNOTATION, dashboard_manifest
from components.helm_chart import HelmChartArgs, InstalledChart
from components.kubernetes_objects import create_object
from components.monitoring_rules import rule_groups
from components.namespace import platform_labels
from components.policy_exceptions import exception_annotations
from components.scaling_signal import ScalingSignal
from components.triton_manifests import APP_NAME
from platform_config.schema import PlatformConfig

TYPE_TOKEN = "triton-platform:monitoring:Monitoring"
RELEASE_NAME = "kube-prometheus-stack"
GRAFANA_ADMIN_SECRET = "grafana-admin"


def _labels(config: PlatformConfig) -> dict[str, str]:
    return {**platform_labels(config.environment), **config.monitoring.selector_labels}


def service_monitor_manifest(config: PlatformConfig) -> dict[str, Any]:
    """Scrapes every Triton Service's metrics port; relabelings guarantee the labels rules and KEDA select on."""
    ns = config.kubernetes.namespace
    relabelings = [
        # A pod still loading models is not ready and serves no metrics yet: not a target until ready
        # (endpoints and EndpointSlice discovery name the condition differently).
        {"sourceLabels": ["__meta_kubernetes_endpoint_ready"], "regex": "false", "action": "drop"},
        {
            "sourceLabels": ["__meta_kubernetes_endpointslice_endpoint_conditions_ready"],
            "regex": "false",
            "action": "drop",
        },
        {"sourceLabels": ["__meta_kubernetes_namespace"], "targetLabel": "namespace"},
        {"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "pod"},
        {"sourceLabels": ["__meta_kubernetes_service_name"], "targetLabel": "service"},
        # The Deployment's name, as kube-state-metrics labels it: joins need no label_replace.
        {"sourceLabels": ["__meta_kubernetes_service_label_app_kubernetes_io_instance"], "targetLabel": "deployment"},
    ]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "triton", "namespace": ns, "labels": _labels(config)},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": APP_NAME}},
            "namespaceSelector": {"matchNames": [ns]},
            "endpoints": [
                {
                    "port": "metrics",
                    "path": "/metrics",
                    "interval": config.monitoring.scrape_interval,
                    "relabelings": relabelings,
                }
            ],
        },
    }


def prometheus_rule_manifest(config: PlatformConfig, signals: Mapping[str, ScalingSignal]) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "triton-platform", "namespace": config.kubernetes.namespace, "labels": _labels(config)},
        "spec": {"groups": rule_groups(config, signals)},
    }


def chart_values(config: PlatformConfig) -> dict[str, Any]:
    """kube-prometheus-stack values: select the platform's objects, keep Grafana's password in a Secret."""
    select = {"matchLabels": dict(config.monitoring.selector_labels)}
    return {
        # The operator's admission webhook gets its certificate from Helm hook Jobs, which are not part of
        # the chart's objects here (components/helm_chart.py); without them the webhook and the operator's
        # TLS listener would wait for a Secret nothing creates. Rules are checked by promtool before deploy.
        "prometheusOperator": {
            "admissionWebhooks": {"enabled": False},
            "tls": {"enabled": False},
            # The chart sets none; the policy pack requires requests and limits on every container.
            "resources": {
                "requests": {"cpu": "100m", "memory": "128Mi"},
                "limits": {"cpu": "500m", "memory": "512Mi"},
            },
        },
        # A dedicated Prometheus: scrape every ServiceMonitor, KEDA's chart's included (it carries no release label).
        "prometheus": {
            "prometheusSpec": {
                "serviceMonitorSelector": {},
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "serviceMonitorNamespaceSelector": {},
                "ruleSelector": select,
                "ruleNamespaceSelector": {},
                "retention": "15d",
            }
        },
        "nodeExporter": {"enabled": False},  # needs host access; the platform's rules read Triton's own GPU metrics
        "alertmanager": {
            # Replaces the chart's default config, whose InfoInhibitor would mute every info alert;
            # the platform's routes come from its AlertmanagerConfig.
            "config": {
                "route": {"receiver": NULL_RECEIVER, "group_by": ["namespace"]},
                "receivers": [{"name": NULL_RECEIVER}],
                "inhibit_rules": [],
            },
            "alertmanagerSpec": {
                "alertmanagerConfigSelector": select,
                "alertmanagerConfigNamespaceSelector": {},
            },
        },
        "grafana": {
            "admin": {"existingSecret": GRAFANA_ADMIN_SECRET, "userKey": "admin-user", "passwordKey": "admin-password"},
            "sidecar": {
                "dashboards": {
                    "enabled": True,
                    "label": next(iter(DASHBOARD_LABEL)),
                    "labelValue": next(iter(DASHBOARD_LABEL.values())),
                    "searchNamespace": "ALL",
                    "folderAnnotation": FOLDER_ANNOTATION,
                    "provider": {"foldersFromFilesStructure": True},
                }
            },
        },
    }


def monitoring_manifests(config: PlatformConfig, signals: Mapping[str, ScalingSignal]) -> dict[str, dict[str, Any]]:
    """The platform's own monitoring objects, by role (the chart, in install mode, is separate)."""
    out = {
        "service-monitor": service_monitor_manifest(config),
        "rules": prometheus_rule_manifest(config, signals),
        "alert-routing": alertmanager_config_manifest(config, _labels(config)),
    }
    for name in sorted(config.serving.deployments):
        out[f"{name}-dashboard"] = dashboard_manifest(config, name, signals[name], platform_labels(config.environment))
    return out


@dataclass(frozen=True)
class MonitoringArgs:
    config: PlatformConfig
    """The stack's validated configuration."""

    signals: Mapping[str, ScalingSignal]
    """Each deployment's scaling signal, for its recording rule, dashboard panel and at-ceiling alert."""

    kube_version: str | None = None
    """Kubernetes version the chart is templated for when the stack renders; None when deploying (the API server's)."""


class Monitoring(pulumi.ComponentResource):
    """ServiceMonitor, PrometheusRule, AlertmanagerConfig and dashboards; in install mode the operator stack too."""

    grafana_admin_password: pulumi.Output[str] | None
    """Grafana's generated admin password (a secret), in install mode."""

    operator: list[pulumi.Resource]
    """What the Prometheus Operator's custom resources wait for: its chart in install mode, else nothing."""

    def __init__(self, name: str, args: MonitoringArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        config = args.config
        after: list[pulumi.Resource] = []
        self.grafana_admin_password = None
        if config.monitoring.mode == "install":
            after.extend(self._install(name, config, child, args.kube_version))
        self.operator = list(after)
        for secret in receiver_secrets(config):
            create_object(
                f"{name}-{secret.secret_name}",
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {
                        "name": secret.secret_name,
                        "namespace": config.kubernetes.namespace,
                        "labels": platform_labels(config.environment),
                    },
                    "type": "Opaque",
                    "stringData": {k: pulumi.Output.secret(v) for k, v in secret.values.items()},
                },
                child,
            )
        ordered = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=after))
        for role, manifest in monitoring_manifests(config, args.signals).items():
            create_object(f"{name}-{role}", manifest, ordered)
        self.register_outputs({"grafanaAdminPassword": self.grafana_admin_password})

    def _install(
        self, name: str, config: PlatformConfig, child: pulumi.ResourceOptions, kube_version: str | None
    ) -> list[pulumi.Resource]:
        namespace = config.monitoring.prometheus.namespace
        labels = platform_labels(config.environment)
        # The chart's components pass the baseline profile; warn about everything restricted would refuse.
        pss = {"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted"}
        ns = create_object(
            f"{name}-namespace",
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": namespace,
                    "labels": {**labels, **pss},
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
        child = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[ns]))
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
                    "labels": platform_labels(config.environment),
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
                chart=config.monitoring.chart,
                release=RELEASE_NAME,
                namespace=namespace,
                values=chart_values(config),
                kube_version=kube_version,
            ),
            pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[secret])),
        )
        return [installed]
