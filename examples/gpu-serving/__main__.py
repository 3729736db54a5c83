"""Two of the platform's components used alone: a GPU node pool and Triton serving one model on it.

Everything is set here in code, with no stack config, to show what each component needs. The Kubernetes
provider renders YAML into ./rendered instead of applying it, so `pulumi up` needs no cluster; give the
provider a kubeconfig context instead to deploy.
"""

from __future__ import annotations

from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from triton_platform import GpuNodePool, TritonServing

NAMESPACE = "ml"
MODEL_REPO = Path(__file__).resolve().parents[2] / "model_repo"

provider = k8s.Provider("render", render_yaml_to_directory="rendered")
opts = pulumi.ResourceOptions(provider=provider)

namespace = k8s.core.v1.Namespace("ml", metadata={"name": NAMESPACE}, opts=opts)

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
    },
    opts,
)

# One Deployment of the example classifier from the project's model_repo/, its model files shipped in a
# ConfigMap; each model's config is rendered as configs/<stack>.pbtxt.
triton = TritonServing(
    "triton",
    {
        "namespace": NAMESPACE,
        "deployments": {"classifier": {"models": ["classifier"], "replicas": {"min": 1, "max": 1}}},
        "model_repository": {"path": str(MODEL_REPO), "source": "bundled"},
        "model_defaults": {"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": 500}},
        "pool": pool.placement,
        # Only this namespace's Prometheus may scrape Triton's metrics port.
        "metrics_namespace": "monitoring",
    },
    pulumi.ResourceOptions(provider=provider, depends_on=[namespace]),
)

pulumi.export("services", triton.services)
pulumi.export("deployment", triton.deployments["classifier"].metadata.name)
