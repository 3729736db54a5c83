"""Every custom resource the program emits validates against its operator's CRD schema."""

from __future__ import annotations

import jsonschema
import pytest

from offline.synth import SynthResult
from tests.cluster.test_cluster_profiles import PROFILES, synth_example
from tests.support.crd_schemas import defaults_left_in_atomic_lists, validate
from triton_platform.kube.kubernetes_objects import CUSTOM_KINDS

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


def test_every_default_inside_an_atomic_list_is_stated(synth: SynthResult) -> None:
    # The next `up` after an interrupted create applies as another field manager: equal lists share ownership,
    # a list the server completed with a default conflicts (tests/cluster/test_cluster_faults.py met it).
    custom = [m for m in synth.manifests() if (m["apiVersion"], m["kind"]) in CUSTOM_KINDS]
    assert {path for m in custom for path in defaults_left_in_atomic_lists(m)} == set()


@pytest.mark.parametrize("name", PROFILES)
def test_every_default_inside_an_atomic_list_is_stated_on_each_cloud(name: str) -> None:
    custom = [m for m in synth_example(name).values() if (m["apiVersion"], m["kind"]) in CUSTOM_KINDS]
    assert {path for m in custom for path in defaults_left_in_atomic_lists(m)} == set()


def test_the_atomic_list_check_finds_a_relabeling_without_its_action(synth: SynthResult) -> None:
    monitor = next(m for m in synth.manifests() if m["kind"] == "ServiceMonitor")
    endpoint = monitor["spec"]["endpoints"][0]
    bare = {"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "pod"}
    broken = {**monitor, "spec": {**monitor["spec"], "endpoints": [{**endpoint, "relabelings": [bare]}]}}
    assert defaults_left_in_atomic_lists(broken) == [
        "ServiceMonitor.spec.endpoints[0].relabelings[0].action (default 'replace')"
    ]
