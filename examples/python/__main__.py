"""A small serving stack from the component package alone: a GPU pool, Triton serving two models, KEDA
scaling on the busy ratio and monitoring, configured in code with no stack config.

The package comes from `pip install` (the repository's requirements.txt installs ./components; elsewhere
`pip install "git+https://github.com/<org>/triton-platform@<tag>#subdirectory=components"`). The Kubernetes
provider renders YAML into ./rendered instead of applying it, so `pulumi up` needs no cluster; give it a
kubeconfig context instead to deploy.
"""

from __future__ import annotations

from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from triton_platform import GpuNodePool, KedaScaling, Monitoring, TritonServing
from triton_platform.scaling_signal import trigger_query

NAMESPACE = "ml"
MODEL_REPO = Path(__file__).resolve().parents[2] / "model_repo"
MODELS = ["classifier", "ranker"]
INSTANCES = {"classifier": 1, "ranker": 1}
"""Model instances per pod (each model's instance_group): the busy ratio divides by them."""

provider = k8s.Provider("render", render_yaml_to_directory="rendered")
opts = pulumi.ResourceOptions(provider=provider)

namespace = k8s.core.v1.Namespace("ml", metadata={"name": NAMESPACE}, opts=opts)
in_namespace = pulumi.ResourceOptions(provider=provider, depends_on=[namespace])

# Monitoring of an operator that already runs: the ServiceMonitor, rules, routing and a dashboard.
monitoring = Monitoring(
    "monitoring",
    {
        "namespace": NAMESPACE,
        "latency_slo_ms": 200,
        "deployments": {
            "general": {
                "object_name": "triton-general",
                "max_replicas": 3,
                "models": MODELS,
                "signal": {"kind": "busy-ratio", "target": 0.8, "instances_per_pod": INSTANCES},
            }
        },
        "scaling_enabled": True,
    },
    in_namespace,
)

# Two fixed, already labelled and tainted GPU nodes; each GPU shared by two pods.
pool = GpuNodePool(
    "gpu",
    {
        "workload_namespace": NAMESPACE,
        "gpus_per_node": 1,
        "min_nodes": 2,
        "max_nodes": 2,
        "autoscaler": "static",
        "device_plugin": {"sharing": "time-slicing", "time_slicing_replicas": 2},
        "metrics_namespace": monitoring.metrics_namespace,
    },
    opts,
)

# One Deployment serving two models of the project's model_repo/, their files shipped in ConfigMaps; each
# model's config is rendered as configs/<stack>.pbtxt.
triton = TritonServing(
    "triton",
    {
        "namespace": NAMESPACE,
        # Two at least: a node drain evicts one pod at a time, so one stays ready (policy triton-drain).
        "deployments": {"general": {"models": MODELS, "replicas": {"min": 2, "max": 3}}},
        "model_repository": {"path": str(MODEL_REPO), "source": "bundled"},
        "model_defaults": {"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": 500}},
        "pool": pool.placement,
        # Only the monitoring namespace's Prometheus may scrape Triton's metrics port.
        "metrics_namespace": monitoring.metrics_namespace,
        "autoscaled": True,
    },
    in_namespace,
)

# KEDA (already running in the cluster) scales the Deployment on its busy ratio, read from that Prometheus
# with the same query builder Monitoring's recording rule uses.
deployment = triton.deployments["general"]
KedaScaling(
    "scaling",
    {
        "targets": {
            "general": {
                "deployment_name": deployment.metadata.name,
                "namespace": deployment.metadata.namespace,
                "min_replicas": 2,
                "max_replicas": 3,
                "trigger": {
                    "name": "busy-ratio",
                    "query": trigger_query("busy-ratio", NAMESPACE, "triton-general", "1m", INSTANCES),
                    "threshold": 0.8,
                },
            }
        },
        "prometheus_url": monitoring.prometheus_url,
        # While the query fails (Prometheus down, a lost target), hold at least this many replicas.
        "fallback": {"replicas": 2},
    },
    in_namespace,
)

pulumi.export("services", triton.services)
pulumi.export("deployment", deployment.metadata.name)
