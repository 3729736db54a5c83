"""Two of the platform's components used alone: a GPU node pool and Triton serving one model on it.

Everything is set here in code, with no stack config, to show what each component needs. The Kubernetes
provider renders YAML into ./rendered instead of applying it, so `pulumi up` needs no cluster; give the
provider a kubeconfig context instead to deploy.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

# The components are imported from this checkout (the repository root, two levels up).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from components.gpu_node_pool import GpuNodePool
from components.triton_serving import TritonServing, TritonServingArgs
from components.triton_serving_config import ServingConfig
from model_packaging.render import render_repository
from model_packaging.source import DEFAULT_MODEL_REPO, read_repository

NAMESPACE = "ml"

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

# One Deployment of the example classifier, its model files shipped in a ConfigMap.
serving = ServingConfig.model_validate(
    {
        "p95LatencySloMs": 200,
        "modelRepository": {"source": "bundled"},
        "deployments": {"classifier": {"models": ["classifier"], "replicas": {"min": 1, "max": 1}}},
        "modelDefaults": {"maxBatchSize": 8, "dynamicBatching": {"maxQueueDelayMicroseconds": 500}},
    }
)
triton = TritonServing(
    "triton",
    TritonServingArgs(
        namespace=NAMESPACE,
        serving=serving,
        rendered=render_repository("example", serving, {}, read_repository(DEFAULT_MODEL_REPO)),
        pool=pool.placement,
        # Only this namespace's Prometheus may scrape Triton's metrics port.
        metrics_namespace="monitoring",
    ),
    pulumi.ResourceOptions(provider=provider, depends_on=[namespace]),
)

pulumi.export("services", triton.services)
pulumi.export("deployment", triton.deployments["classifier"].metadata.name)
