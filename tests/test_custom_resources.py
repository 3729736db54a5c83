"""Every custom resource the program emits validates against its operator's CRD schema."""

from __future__ import annotations

import jsonschema
import pytest

from offline.synth import SynthResult
from tests.crd_schemas import validate
from triton_platform.kubernetes_objects import CUSTOM_KINDS

pytestmark = pytest.mark.real_tools  # `go mod download` for the operators' CRDs


def test_every_custom_resource_matches_its_crd(synth: SynthResult) -> None:
    custom = [m for m in synth.manifests() if (m["apiVersion"], m["kind"]) in CUSTOM_KINDS]
    kinds = {m["kind"] for m in custom}
    assert {"ServiceMonitor", "PrometheusRule", "AlertmanagerConfig", "ScaledObject"} <= kinds
    for manifest in custom:
        validate(manifest)


def test_the_crd_check_rejects_a_wrong_field(synth: SynthResult) -> None:
    scaled = next(m for m in synth.manifests() if m["kind"] == "ScaledObject")
    broken = {**scaled, "spec": {**scaled["spec"], "fallback": {"replicas": 2, "behavior": "scaleDown"}}}
    with pytest.raises(jsonschema.ValidationError):
        validate(broken)
