"""examples/gpu-serving: two components used alone, configured in code, run by the real Pulumi CLI.

No stack config exists for the example: what `GpuNodePool` and `TritonServing` need is in their Args.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.pulumi_cli import make_project, rendered_objects

pytestmark = pytest.mark.real_tools

EXAMPLE = Path("examples") / "gpu-serving"

# Every object the example renders: the pool's device plugin and policies, Triton's Deployment and its companions.
OBJECTS = {
    ("ConfigMap", "gpu-system", "nvidia-device-plugin"),
    ("ConfigMap", "ml", "triton-classifier-config-2670e9c6c3"),
    ("ConfigMap", "ml", "triton-classifier-models-84f89d636f"),
    ("DaemonSet", "gpu-system", "nvidia-device-plugin"),
    ("Deployment", "ml", "triton-classifier"),
    ("Namespace", None, "gpu-system"),
    ("Namespace", None, "ml"),
    ("NetworkPolicy", "gpu-system", "default-deny-egress"),
    ("NetworkPolicy", "gpu-system", "metrics-only"),
    ("NetworkPolicy", "ml", "triton-classifier"),
    ("PriorityClass", None, "ml-batch"),
    ("PriorityClass", None, "ml-inference"),
    ("Secret", "ml", "triton-admin-key"),
    ("Service", "ml", "triton-classifier"),
    ("ServiceAccount", "ml", "triton-server"),
}


def _find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def test_the_example_renders_the_pool_and_triton_and_is_stable(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    example = project.root / EXAMPLE
    assert not list(example.glob("Pulumi.*.yaml")), "the example must run without any stack config"

    def pulumi(*args: str) -> str:
        result = project.pulumi(*args, "--cwd", str(example))
        assert result.returncode == 0, f"pulumi {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout + result.stderr

    pulumi("stack", "init", "example")
    pulumi("up", "--yes", "--skip-preview")
    outputs = yaml.safe_load(pulumi("stack", "output", "--json"))
    assert outputs == {"deployment": "triton-classifier", "services": {"classifier": "triton-classifier"}}

    objects = rendered_objects(example / "rendered")
    assert {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects} == OBJECTS

    # Triton lands where the pool lets it, and asks for the GPU the pool advertises.
    pod = _find(objects, "Deployment", "triton-classifier")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"triton-platform/gpu-pool": "inference"}
    [server] = [c for c in pod["containers"] if c["name"] == "triton"]
    assert server["image"] == "nvcr.io/nvidia/tritonserver:24.10-py3"
    assert server["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert "--model-config-name=example" in server["args"]
    # The pool shares each GPU between two pods, as its Args say.
    plugin = yaml.safe_load(_find(objects, "ConfigMap", "nvidia-device-plugin")["data"]["config.yaml"])
    assert plugin["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 2}]
    # Only the metrics namespace given in code may scrape Triton.
    ingress = _find(objects, "NetworkPolicy", "triton-classifier")["spec"]["ingress"]
    assert {"kubernetes.io/metadata.name": "monitoring"} in [
        peer["namespaceSelector"]["matchLabels"]
        for rule in ingress
        for peer in rule["from"]
        if "namespaceSelector" in peer
    ]

    # A second run of the same program changes nothing.
    pulumi("preview", "--expect-no-changes")
