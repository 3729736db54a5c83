"""examples/python: the four components from the installed package, configured in code, run by the real CLI.

No stack config exists for the example, and it edits no `sys.path`: it imports `triton_platform` as any
program that ran `pip install ./components` would. What each component needs is in its Args.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.policy_check import pack_violations
from tests.support.pulumi_cli import make_project, rendered_objects

pytestmark = pytest.mark.real_tools

EXAMPLE = Path("examples") / "python"

# Every object the example renders: the pool's device plugin and policies, Triton's Deployment and its companions.
OBJECTS = {
    ("AlertmanagerConfig", "ml", "triton-platform"),
    ("ConfigMap", "gpu-system", "nvidia-device-plugin"),
    ("ConfigMap", "ml", "triton-general-config-29f6b257e0"),
    ("ConfigMap", "ml", "triton-general-dashboard"),
    ("ConfigMap", "ml", "triton-general-models-08a0c7d887"),
    ("DaemonSet", "gpu-system", "nvidia-device-plugin"),
    ("Deployment", "ml", "triton-general"),
    ("Namespace", None, "gpu-system"),
    ("Namespace", None, "ml"),
    ("NetworkPolicy", "gpu-system", "default-deny-egress"),
    ("NetworkPolicy", "gpu-system", "metrics-only"),
    ("NetworkPolicy", "ml", "triton-general"),
    ("PodDisruptionBudget", "ml", "triton-general"),
    ("PriorityClass", None, "ml-batch"),
    ("PriorityClass", None, "ml-inference"),
    ("PrometheusRule", "ml", "triton-platform"),
    ("ScaledObject", "ml", "triton-general"),
    ("Secret", "ml", "triton-admin-key"),
    ("Service", "ml", "triton-general"),
    ("ServiceAccount", "ml", "triton-server"),
    ("ServiceMonitor", "ml", "triton"),
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
    assert outputs == {"deployment": "triton-general", "services": {"general": "triton-general"}}

    objects = rendered_objects(example / "rendered")
    assert {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects} == OBJECTS

    # Triton lands where the pool lets it, and asks for the GPU the pool advertises.
    pod = _find(objects, "Deployment", "triton-general")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"triton-platform/gpu-pool": "inference"}
    [server] = [c for c in pod["containers"] if c["name"] == "triton"]
    assert server["image"] == "nvcr.io/nvidia/tritonserver:24.10-py3"
    assert server["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert "--model-config-name=example" in server["args"]
    # The pool shares each GPU between two pods, as its Args say.
    plugin = yaml.safe_load(_find(objects, "ConfigMap", "nvidia-device-plugin")["data"]["config.yaml"])
    assert plugin["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 2}]
    # Only the metrics namespace given in code may scrape Triton.
    ingress = _find(objects, "NetworkPolicy", "triton-general")["spec"]["ingress"]
    assert {"kubernetes.io/metadata.name": "monitoring"} in [
        peer["namespaceSelector"]["matchLabels"]
        for rule in ingress
        for peer in rule["from"]
        if "namespaceSelector" in peer
    ]

    # KEDA scales the Deployment, which leaves its replica count to the HPA, on the busy ratio Monitoring records.
    scaled = _find(objects, "ScaledObject", "triton-general")["spec"]
    assert scaled["scaleTargetRef"]["name"] == "triton-general"
    assert (scaled["minReplicaCount"], scaled["maxReplicaCount"]) == (2, 3)
    [busy] = [t for t in scaled["triggers"] if t["name"] == "busy-ratio"]
    assert busy["metadata"]["serverAddress"] == "http://prometheus-operated.monitoring.svc:9090"
    assert "replicas" not in _find(objects, "Deployment", "triton-general")["spec"]
    rules = _find(objects, "PrometheusRule", "triton-platform")["spec"]["groups"]
    assert "namespace_deployment:nv_inference_instance_busy:ratio" in {
        r.get("record") for g in rules for r in g["rules"]
    }
    # What the program renders passes the project's own policy rules.
    assert pack_violations(objects) == []

    # A second run of the same program changes nothing.
    pulumi("preview", "--expect-no-changes")
