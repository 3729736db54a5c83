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

NAMESPACE = "ml"
PROMETHEUS_NAMESPACE = "monitoring"
"""Where the cluster's Prometheus runs: only it may scrape Triton's and the pool's metrics ports."""
MODEL_REPO = Path(__file__).resolve().parents[2] / "model_repo"

provider = k8s.Provider("render", render_yaml_to_directory="rendered")
opts = pulumi.ResourceOptions(provider=provider)

namespace = k8s.core.v1.Namespace("ml", metadata={"name": NAMESPACE}, opts=opts)
in_namespace = pulumi.ResourceOptions(provider=provider, depends_on=[namespace])

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
        "metrics_namespace": PROMETHEUS_NAMESPACE,
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
        "deployments": {"general": {"models": ["classifier", "ranker"], "replicas": {"min": 2, "max": 3}}},
        "model_repository": {"path": str(MODEL_REPO), "source": "bundled"},
        "model_defaults": {"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": 500}},
        "pool": pool.placement,
        "metrics_namespace": PROMETHEUS_NAMESPACE,
        "autoscaled": True,
    },
    in_namespace,
)

# Monitoring of an operator that already runs: the ServiceMonitor, rules, routing and a dashboard. What it
# watches comes from Triton's outputs: the Deployment's name, its models and the instances per pod the busy
# ratio divides by (from the models' instance groups).
monitoring = Monitoring(
    "monitoring",
    {
        "namespace": NAMESPACE,
        "prometheus_namespace": PROMETHEUS_NAMESPACE,
        "latency_slo_ms": 200,
        "deployments": {
            "general": {
                "object_name": triton.deployment_names["general"],
                "max_replicas": 3,
                "models": triton.models["general"],
                "signal": {
                    "kind": "busy-ratio",
                    "target": 0.8,
                    "instances_per_pod": triton.instances_per_pod["general"],
                },
            }
        },
        "scaling_enabled": True,
    },
    in_namespace,
)

# KEDA (already running in the cluster) scales the Deployment on its busy ratio, read from that Prometheus
# with the query Monitoring's recording rule reads.
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
                "trigger": {"name": "busy-ratio", "query": monitoring.load_queries["general"], "threshold": 0.8},
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
