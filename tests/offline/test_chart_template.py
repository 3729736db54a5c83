"""`stackctl synth` templates the charts a stack installs, as a preview does (offline/chart_template.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from offline import chart_template
from offline.chart_template import PROJECT_HELM, ChartTemplateError, HelmTemplater, decoded, mirrored_chart
from offline.image_digests import list_images
from offline.mock_runtime import Registered
from offline.synth import CONFIG_GROUP, group_members
from platform_config.paths import PROJECT_ROOT
from stackctl.main import main
from tests.conftest import synth_stack, synth_with_charts
from tests.policy.test_policy_rules import TRITON_IMAGE, built, policy_findings
from tests.support.local_cluster import SHARED_CHARTS

KEDA_OPTIONS: dict[str, Any] = {
    "release_name": "keda",
    "namespace": "keda",
    "values": {},
    "include_test_hook_resources": False,
    "chart": "keda",
    "fetch_opts": {"repo": "https://kedacore.github.io/charts", "version": "2.20.2"},
    "kube_version": "v1.34.0",
}


CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"


def test_objects_are_decoded_as_the_provider_decodes_them() -> None:
    text = """
---
# Source: empty template
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: operator
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: operator
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
  namespace: elsewhere
spec:
  operators:
    - =
    - "!="
"""
    assert decoded(text, "keda") == [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "operator", "namespace": "keda"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "operator"}},
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "elsewhere"},
            "spec": {"operators": ["=", "!="]},
        },
    ]


def test_a_groups_objects_are_listed_beneath_it_as_the_provider_names_them() -> None:
    group = Registered(
        urn="urn:pulumi:production::triton-platform::triton-platform:helm:InstalledChart$kubernetes:yaml/v2:ConfigGroup::keda-objects",
        type=CONFIG_GROUP,
        name="keda-objects",
        parent="urn:pulumi:production::triton-platform::triton-platform:helm:InstalledChart::keda",
        custom=False,
        provider="",
        protect=False,
        retain_on_delete=False,
        dependencies=(),
        inputs={
            "resourcePrefix": "keda",
            # JSON documents, as InstalledChart hands them over (triton_platform/kube/helm_chart.py, as_yaml).
            "yaml": '{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "keda-operator", '
            '"namespace": "keda"}}\n---\n{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", '
            '"metadata": {"name": "v1beta1.x"}}',
        },
    )
    assert [(m.type, m.name, m.urn, m.parent) for m in group_members(group)] == [
        (
            "kubernetes:core/v1:ServiceAccount",
            "keda:keda/keda-operator",
            "urn:pulumi:production::triton-platform::triton-platform:helm:InstalledChart$kubernetes:yaml/v2:ConfigGroup"
            "$kubernetes:core/v1:ServiceAccount::keda:keda/keda-operator",
            group.urn,
        ),
        (
            "kubernetes:apiregistration.k8s.io/v1:APIService",
            "keda:v1beta1.x",
            "urn:pulumi:production::triton-platform::triton-platform:helm:InstalledChart$kubernetes:yaml/v2:ConfigGroup"
            "$kubernetes:apiregistration.k8s.io/v1:APIService::keda:v1beta1.x",
            group.urn,
        ),
    ]


def refusal(templater: HelmTemplater) -> str:
    """What templating KEDA's chart with `templater` is refused with."""
    with pytest.raises(ChartTemplateError) as caught:
        templater.template(KEDA_OPTIONS)
    return str(caught.value)


def without_helm(why: str) -> str:
    """The refusal of a chart for want of a usable Helm, `why` naming what was looked for."""
    return (
        "stackctl synth templates chart keda 2.20.2 from https://kedacore.github.io/charts with Helm, as a preview "
        f"does, but {why}: run `make tools`, or put Helm 3 on PATH, or pass --no-charts for the program's own "
        "objects only"
    )


def test_a_missing_helm_is_named_when_a_chart_needs_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(chart_template, "PROJECT_HELM", tmp_path / ".tools" / "bin" / "helm-v0")
    unfound = HelmTemplater.from_environment({"PATH": str(tmp_path)})
    assert refusal(unfound) == without_helm(
        f"TRITON_HELM is unset, {tmp_path}/.tools/bin/helm-v0 is not built and no `helm` is on PATH"
    )
    named = HelmTemplater.from_environment({"TRITON_HELM": str(tmp_path / "helm"), "PATH": ""})
    with pytest.raises(ChartTemplateError, match=re.escape(f"but TRITON_HELM={tmp_path}/helm is not a file: run")):
        named.template(KEDA_OPTIONS)


def test_a_stack_without_charts_synthesizes_without_helm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRITON_HELM", str(tmp_path / "no-helm"))
    assert main(["synth", "--stack", "dev", "--out", str(tmp_path / "dev")]) == 0
    assert (tmp_path / "dev" / "deployment-triton-dev-triton-general.yaml").is_file()


def test_synth_without_helm_says_so_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRITON_HELM", str(tmp_path / "no-helm"))
    assert main(["synth", "--stack", "production", "--out", str(tmp_path / "production")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stackctl synth: stackctl synth templates chart keda 2.20.2 from https://kedacore.github.io")
    assert f"but TRITON_HELM={tmp_path}/no-helm is not a file" in err
    assert "Traceback" not in err


def test_a_mirror_holding_another_version_is_refused(tmp_path: Path) -> None:
    (tmp_path / "keda").mkdir()
    (tmp_path / "keda" / "Chart.yaml").write_text("name: keda\nversion: 2.19.0\n")
    with pytest.raises(ChartTemplateError) as caught:
        HelmTemplater("/nonexistent/helm", tmp_path).template(KEDA_OPTIONS)
    assert str(caught.value) == (
        f"TRITON_CHART_MIRROR: {tmp_path}/keda/Chart.yaml is version 2.19.0, but the stack pins keda 2.20.2, and "
        f"{tmp_path}/keda-2.20.2/keda holds no copy of it"
    )


def test_a_mirror_of_several_versions_is_read_by_version(tmp_path: Path) -> None:
    """`<mirror>/<chart>-<version>/<chart>/` first, as ../shared/charts holds kube-prometheus-stack 88.5.3 beside
    79.7.1; `<mirror>/<chart>/` where no versioned copy is."""
    for folder, version in (("keda", "2.19.0"), ("keda-2.20.2/keda", "2.20.2"), ("keda-2.21.0/keda", "2.20.2")):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "Chart.yaml").write_text(f"name: keda\nversion: {version}\n")
    assert mirrored_chart(tmp_path, "keda", "2.20.2") == tmp_path / "keda-2.20.2" / "keda"
    assert mirrored_chart(tmp_path, "keda", "2.19.0") == tmp_path / "keda"
    assert mirrored_chart(tmp_path, "keda-add-ons-http", "0.15.0") is None
    with pytest.raises(ChartTemplateError) as caught:
        mirrored_chart(tmp_path, "keda", "2.21.0")
    assert str(caught.value) == (
        f"TRITON_CHART_MIRROR: {tmp_path}/keda-2.21.0/keda/Chart.yaml is version 2.20.2, but its folder names 2.21.0"
    )
    for chart, version in (("../outside", "1"), ("", "1"), ("keda", "../1"), ("/etc", "1")):
        with pytest.raises(ChartTemplateError, match="names no chart folder of the mirror"):
            mirrored_chart(tmp_path, chart, version)
    (tmp_path / "broken").mkdir()
    for text, why in (("- a list\n", "is version None"), ("version: [\n", "cannot be read: ParserError")):
        (tmp_path / "broken" / "Chart.yaml").write_text(text)
        with pytest.raises(ChartTemplateError, match=re.escape(why)):
            mirrored_chart(tmp_path, "broken", "1.0.0")
    shared = mirrored_chart(SHARED_CHARTS, "kube-prometheus-stack", "88.5.3")
    assert shared == SHARED_CHARTS / "kube-prometheus-stack-88.5.3" / "kube-prometheus-stack"
    assert mirrored_chart(SHARED_CHARTS, "kube-prometheus-stack", "79.7.1") == SHARED_CHARTS / "kube-prometheus-stack"


def test_the_makefile_builds_the_helm_stackctl_looks_for() -> None:
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    assert f"HELM_VERSION := {chart_template.HELM_VERSION}\n" in makefile
    assert "HELM := .tools/bin/helm-$(HELM_VERSION)\n" in makefile
    assert PROJECT_HELM.relative_to(PROJECT_ROOT).as_posix() == f".tools/bin/helm-{chart_template.HELM_VERSION}"


@pytest.mark.real_tools
def test_production_lists_every_chart_object_beneath_its_group() -> None:
    own = {r.urn for r in synth_stack("production").resources}
    charted = synth_with_charts("production")
    added = [r for r in charted.resources if r.urn not in own]
    groups = {r.urn: r.name for r in charted.resources if r.type == CONFIG_GROUP}
    assert sorted(groups.values()) == [
        "production-monitoring-kube-prometheus-stack-crds",
        "production-monitoring-kube-prometheus-stack-objects",
        "production-scaling-keda-crds",
        "production-scaling-keda-objects",
    ]
    assert {r.parent for r in added} == set(groups)
    # The CRDs sit in the `-crds` groups, protected and retained as the engine hands both down from the group;
    # nothing else of the charts is.
    crds = {r.name for r in added if r.type == CRD}
    assert (
        len(crds) == 6 + 10
    )  # KEDA 2.20.2 (keda.sh, eventing.keda.sh); the Prometheus Operator (monitoring.coreos.com)
    for r in added:
        assert groups[r.parent].endswith("-crds" if r.name in crds else "-objects"), r.name
        assert (r.protect, r.retain_on_delete) == ((True, True) if r.name in crds else (False, False)), r.name
    names = {(r.type, r.name) for r in added}
    assert {
        ("kubernetes:apps/v1:Deployment", "keda:keda/keda-operator"),
        ("kubernetes:apps/v1:Deployment", "kube-prometheus-stack:monitoring/kube-prometheus-stack-operator"),
        ("kubernetes:apps/v1:Deployment", "kube-prometheus-stack:monitoring/kube-prometheus-stack-grafana"),
        ("kubernetes:apps/v1:Deployment", "kube-prometheus-stack:monitoring/kube-prometheus-stack-kube-state-metrics"),
        ("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition", "keda:scaledobjects.keda.sh"),
        (
            "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
            "kube-prometheus-stack:prometheuses.monitoring.coreos.com",
        ),
    } <= names
    # Each is a manifest: the scanners and every synth-based check see it.
    manifests = {(m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]) for m in charted.manifests()}
    assert ("Deployment", "keda", "keda-operator") in manifests
    assert len(manifests) == len(synth_stack("production").manifests()) + len(added)


@pytest.mark.real_tools
def test_production_with_its_charts_passes_every_policy_rule() -> None:
    """Every rule, but images by tag: those the committed stack leaves to the deploy workflow's
    `stackctl pin-images`, which lists exactly them, Triton's and the charts'."""
    synth = synth_with_charts("production")
    resources = built(synth)
    assert any(r.name == "kube-prometheus-stack-grafana" and r.kind == "Deployment" for r in resources)
    images = list_images(synth, synth.stack.config.image_digests)
    unpinned = {image.name for image in images if image.state == "unpinned"}
    assert {
        TRITON_IMAGE,
        "ghcr.io/kedacore/keda:2.20.2",
        "quay.io/prometheus/prometheus:v3.14.0-distroless",
    } <= unpinned
    assert policy_findings(resources, unpinned) == []


@pytest.mark.real_tools
def test_helms_refusal_names_the_chart() -> None:
    options = {**KEDA_OPTIONS, "path": str(SHARED_CHARTS), "kube_version": "v1.20.0"}
    with pytest.raises(ChartTemplateError) as caught:
        HelmTemplater(str(PROJECT_HELM)).template(options)
    message = str(caught.value)
    assert message.startswith(f"`helm template` of chart keda 2.20.2 from {SHARED_CHARTS} failed: Error: ")
    assert "kubeVersion" in message
    assert "v1.20.0" in message


@pytest.mark.real_tools
def test_the_cli_writes_chart_objects_unless_told_not_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_HELM", str(PROJECT_HELM))
    monkeypatch.setenv("TRITON_CHART_MIRROR", str(SHARED_CHARTS))
    assert main(["synth", "--stack", "production", "--out", str(tmp_path / "all")]) == 0
    assert (tmp_path / "all" / "deployment-keda-keda-operator.yaml").is_file()
    assert main(["synth", "--stack", "production", "--out", str(tmp_path / "own"), "--no-charts"]) == 0
    assert not (tmp_path / "own" / "deployment-keda-keda-operator.yaml").exists()
    assert (tmp_path / "own" / "deployment-triton-production-triton-ranker.yaml").is_file()


STUB_HELM = """#!/bin/sh
# A stand-in Helm: records each call; `pull` unpacks a one-object chart, `template` prints the object.
echo "$*" >> "{log}"
case "$1" in
  version) echo "{version}" ;;
  pull)
    while [ "$#" -gt 0 ]; do [ "$1" = --untardir ] && out="$2"; shift; done
    mkdir -p "$out/keda/templates"
    printf 'name: keda\\nversion: 2.20.2\\n' > "$out/keda/Chart.yaml" ;;
  template)
    printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: from-chart\\n' ;;
esac
"""


def stub_helm(tmp_path: Path, version: str = "v3.19.1") -> tuple[Path, Path]:
    """A `helm` on a PATH of its own, and its call log."""
    bin_dir, log = tmp_path / "bin", tmp_path / "helm-calls"
    bin_dir.mkdir()
    (bin_dir / "helm").write_text(STUB_HELM.format(log=log, version=version))
    (bin_dir / "helm").chmod(0o755)
    return bin_dir, log


def test_a_chart_is_pulled_once_and_templated_from_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(chart_template, "PROJECT_HELM", tmp_path / "not-built")
    monkeypatch.setattr(chart_template, "CHART_CACHE", tmp_path / "charts")
    bin_dir, log = stub_helm(tmp_path)
    templater = HelmTemplater.from_environment({"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert templater.helm == str(bin_dir / "helm")
    for _ in range(2):
        [found] = templater.template(KEDA_OPTIONS)
        assert found["metadata"]["name"] == "from-chart"
    calls = log.read_text().splitlines()
    assert [call.split()[0] for call in calls] == ["version", "pull", "template", "template"]
    assert calls[1].startswith("pull keda --repo https://kedacore.github.io/charts --version 2.20.2 --untar")
    assert calls[3].startswith(f"template keda {tmp_path}/charts/keda-2.20.2/keda ")
    assert [p.name for p in (tmp_path / "charts").iterdir()] == ["keda-2.20.2"]  # no scratch left behind


def test_a_failed_pull_is_named_and_leaves_no_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(chart_template, "CHART_CACHE", tmp_path / "charts")
    helm = tmp_path / "helm"
    helm.write_text('#!/bin/sh\necho "Error: chart \\"keda\\" version \\"2.20.2\\" not found" >&2\nexit 1\n')
    helm.chmod(0o755)
    with pytest.raises(ChartTemplateError) as caught:
        HelmTemplater(str(helm)).template(KEDA_OPTIONS)
    assert str(caught.value) == (
        "`helm pull` of chart keda 2.20.2 from https://kedacore.github.io/charts failed: "
        'Error: chart "keda" version "2.20.2" not found'
    )
    assert list((tmp_path / "charts" / "keda-2.20.2").iterdir()) == []


def test_a_helm_on_path_of_another_major_is_refused_by_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(chart_template, "PROJECT_HELM", tmp_path / "not-built")
    bin_dir, _ = stub_helm(tmp_path, version="v4.0.1")
    templater = HelmTemplater.from_environment({"PATH": str(bin_dir)})
    assert refusal(templater) == without_helm(f"the `helm` on PATH ({bin_dir}/helm) is v4.0.1, not Helm 3")
