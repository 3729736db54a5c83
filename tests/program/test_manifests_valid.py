"""Kubernetes accepts every manifest the program emits: checked against the API's own schemas."""

from __future__ import annotations

import kubernetes_validate
import pytest

from offline.synth import SynthResult
from triton_platform.kube.kubernetes_objects import CUSTOM_KINDS

# The oldest and newest minor versions we promise to deploy to; strict rejects unknown fields.
KUBERNETES_VERSIONS = ("1.29.0", "1.33.0")


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_built_in_kind_validates(synth: SynthResult, version: str) -> None:
    """Custom resources (ServiceMonitor, PrometheusRule, ...) have no built-in schema; built-in kinds all do."""
    manifests = [m for m in synth.manifests() if (m["apiVersion"], m["kind"]) not in CUSTOM_KINDS]
    assert {m["kind"] for m in manifests} >= {"Deployment", "Service", "NetworkPolicy", "Namespace", "ConfigMap"}
    for manifest in manifests:
        kubernetes_validate.validate(manifest, version, strict=True)


def test_the_check_rejects_an_invented_field(synth: SynthResult) -> None:
    deployment = next(m for m in synth.manifests() if m["kind"] == "Deployment")
    broken = {**deployment, "spec": {**deployment["spec"], "replica": 2}}
    with pytest.raises(kubernetes_validate.ValidationError, match="replica"):
        kubernetes_validate.validate(broken, KUBERNETES_VERSIONS[0], strict=True)
