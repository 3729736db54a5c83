"""Production's kube-prometheus-stack upgrade, 79.7.1 to 88.5.3, on a real control plane (scripts/local-cluster).

Helm never upgrades what a chart ships in `crds/`, and 88.5.3 needs the Prometheus Operator's v0.93.1 CRDs where
79.7.1 laid v0.86.2 (its UPGRADE.md, majors 80 to 88). The platform applies the chart's CRDs server-side in their
own ConfigGroup before its other objects (triton_platform/kube/helm_chart.py). Here production is deployed with 79.7.1
and upgraded by changing only the pinned version, as a user's pull request would.

Pods never run on this cluster (kwok), so the operator's Prometheus is stood in for by the server each release
runs, built from the Go module proxy (scripts/prometheus-releases), outside the cluster: on one data folder (the
volume its claim holds, which the Prometheus object's unchanged identity and storage keep across the upgrade), with
the rules of the PrometheusRules the Prometheus object selects, read back from the API server, and scraping the
series KEDA's queries read, taken from the ScaledObjects on the API server.
"""

from __future__ import annotations

import json
import math
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml

from offline.chart_template import mirrored_chart
from platform_config.paths import PROJECT_ROOT
from tests.conftest import stack_values
from tests.support.local_cluster import (
    SHARED_CHARTS,
    LocalCluster,
    edit_stack,
    point_stack_at,
    start_cluster,
    use_offline_charts,
    wait_until,
)
from tests.support.local_registry import pin_images
from tests.support.local_triton.server import free_ports
from tests.support.pulumi_cli import Project, make_project
from tests.support.triton_prometheus import query, static_metrics, wait_http

pytestmark = pytest.mark.real_tools  # the local control plane, the Pulumi CLI and two Prometheus releases

STACK = "production"
OLD, NEW = "79.7.1", "88.5.3"
OPERATOR = {OLD: "0.86.2", NEW: "0.93.1"}
"""The Prometheus Operator each release ships (its CRDs' `operator.prometheus.io/version` annotation)."""
MONITORING_CRDS = "monitoring.coreos.com"


def prometheus_binary(chart_version: str) -> tuple[str, Path]:
    """The Prometheus release a chart runs (its `prometheus.prometheusSpec.image.tag`, the `-distroless` variant
    being the same server) and that release's binary."""
    folder = mirrored_chart(SHARED_CHARTS, "kube-prometheus-stack", chart_version)
    assert folder is not None, f"the chart mirror {SHARED_CHARTS} holds no kube-prometheus-stack {chart_version}"
    values = yaml.safe_load((folder / "values.yaml").read_text(encoding="utf-8"))
    release = values["prometheus"]["prometheusSpec"]["image"]["tag"].removesuffix("-distroless")
    binary = PROJECT_ROOT / ".tools" / "bin" / f"prometheus-{release}"
    assert binary.is_file(), f"{binary} is missing: scripts/prometheus-releases builds it (`make tools` runs it)"
    return release, binary


def monitoring_crds(cluster: LocalCluster) -> dict[str, dict[str, Any]]:
    listed = cluster.get("customresourcedefinitions")["items"]
    return {c["metadata"]["name"]: c for c in listed if c["spec"]["group"] == MONITORING_CRDS}


def names(cluster: LocalCluster, kind: str) -> set[tuple[str, str]]:
    return {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in cluster.get(kind, "-A")["items"]}


def the_prometheus(cluster: LocalCluster) -> dict[str, Any]:
    (found,) = cluster.get("prometheuses", "-A")["items"]
    return dict(found)


def selected_rule_groups(cluster: LocalCluster, prometheus: dict[str, Any]) -> list[dict[str, Any]]:
    """The rule groups of the PrometheusRules the Prometheus object selects (its `ruleSelector`, in every namespace
    as its empty `ruleNamespaceSelector` says), as the operator writes them into the server's rule files: the
    CRD's group keys are Prometheus' own, but for Thanos' `partial_response_strategy`, which it leaves out."""
    selector = ",".join(f"{k}={v}" for k, v in prometheus["spec"]["ruleSelector"]["matchLabels"].items())
    assert prometheus["spec"]["ruleNamespaceSelector"] == {}
    groups = []
    selected = cluster.get("prometheusrules", "-A", "-l", selector)["items"]
    # The platform's own rules among them, beside the chart's: a selector matching nothing would prove nothing.
    assert any(r["metadata"]["name"] == "triton-platform" for r in selected), [r["metadata"]["name"] for r in selected]
    for rule in selected:
        for group in rule["spec"]["groups"]:
            namespace, name = rule["metadata"]["namespace"], rule["metadata"]["name"]
            kept = {k: v for k, v in group.items() if k != "partial_response_strategy"}
            # Shortened so every rule is evaluated within seconds; the operator leaves each group's own.
            groups.append({**kept, "name": f"{namespace}/{name}/{group['name']}", "interval": "1s"})
    return groups


def keda_queries(cluster: LocalCluster) -> dict[str, str]:
    return {
        f"{o['metadata']['name']}/{t['name']}": t["metadata"]["query"]
        for o in cluster.get("scaledobjects", "-A")["items"]
        for t in o["spec"]["triggers"]
        if t["type"] == "prometheus"
    }


def exposition(queries: dict[str, str], started: float) -> Callable[[], str]:
    """Series for every selector of the queries, with exactly their labels and one pod's: counters that grow at
    5 per second (so `rate` has a value), gauges alike (the GPU-memory ratio's two are then equal: 1)."""
    series: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            labels = {m.name: m.value for m in node.matchers.matchers if m.op == promql_parser.MatchOp.Equal}
            labels["pod"] = "triton-0"
            series.add(node.name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}")

    for expr in queries.values():
        promql_parser.walk(promql_parser.parse(expr), visit)
    return lambda: "".join(f"{s} {5 * (time.time() - started) + 1:.3f}\n" for s in sorted(series))


@contextmanager
def prometheus(binary: Path, work: Path, data: Path, groups: list[dict[str, Any]], target: int) -> Iterator[str]:
    """A Prometheus on loopback on `data`, with the rule `groups`, scraping `target` every second; stopped by its
    PID (SIGTERM, so its head is written out as a pod's is on eviction)."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(work / "rules.yaml")],
        "scrape_configs": [
            {"job_name": "triton", "honor_labels": True, "static_configs": [{"targets": [f"127.0.0.1:{target}"]}]}
        ],
    }
    (work / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_ports()[0]
    command = [
        str(binary),
        f"--config.file={work / 'prometheus.yml'}",
        f"--storage.tsdb.path={data}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    log = work / "prometheus.log"
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    try:

        def ready() -> bool:
            # A server that exited (its port taken meanwhile, a rule file refused) says why, at once.
            assert process.poll() is None, f"Prometheus exited {process.returncode}: {log.read_text()[-3000:]}"
            try:
                wait_http(f"http://127.0.0.1:{port}/-/ready", 1)
            except TimeoutError:
                return False
            return True

        wait_until("Prometheus to be ready", ready, timeout=60, interval=0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        code = process.wait(timeout=60)
    assert code == 0, log.read_text()[-3000:]  # a clean shutdown: its head written out


def rules_status(base: str) -> list[dict[str, Any]]:
    import urllib.request  # noqa: PLC0415

    with urllib.request.urlopen(f"{base}/api/v1/rules", timeout=10) as response:
        groups: list[dict[str, Any]] = json.load(response)["data"]["groups"]
    return groups


def assert_rules_load_and_evaluate(base: str, groups: list[dict[str, Any]]) -> None:
    """Every selected group loaded with all its rules, each evaluated without error."""

    def evaluated() -> bool:
        return all(r["health"] != "unknown" for g in rules_status(base) for r in g["rules"])

    wait_until("every rule to be evaluated", evaluated, timeout=60)
    loaded = {g["name"]: len(g["rules"]) for g in rules_status(base)}
    assert loaded == {g["name"]: len(g["rules"]) for g in groups}
    failing = {
        (g["name"], r["name"]): r.get("lastError")
        for g in rules_status(base)
        for r in g["rules"]
        if r["health"] != "ok"
    }
    assert not failing, failing


def assert_keda_queries_answer(base: str, queries: dict[str, str]) -> None:
    """Each ScaledObject's query gives one finite value (KEDA reads the first sample)."""

    def answered() -> bool:
        return all(query(base, expr) for expr in queries.values())

    wait_until("KEDA's queries to have data", answered, timeout=90)
    for trigger, expr in queries.items():
        result = query(base, expr)
        assert len(result) == 1, (trigger, result)
        assert math.isfinite(float(result[0]["value"][1])), (trigger, result)


def as_applied(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored object as one would apply it again: its identity, labels, annotations and spec."""
    metadata = {k: v for k, v in stored["metadata"].items() if k in ("name", "namespace", "labels", "annotations")}
    return {"apiVersion": stored["apiVersion"], "kind": stored["kind"], "metadata": metadata, "spec": stored["spec"]}


def set_chart_version(stack_file: Path, version: str) -> None:
    """The stack's pin moved, and its chart read from the mirror's copy of that version (as a user's mirror)."""

    def edit(config: dict[str, Any]) -> None:
        config["triton-platform:monitoring"]["chart"]["version"] = version
        use_offline_charts(config)  # the mirror's folder of that version

    edit_stack(stack_file, edit)


@pytest.fixture
def deployed_with_79(tmp_path: Path) -> Iterator[tuple[Project, LocalCluster, Path]]:
    cluster = start_cluster(tmp_path / "cluster", operators=False)
    try:
        project = make_project(tmp_path / "pulumi", deploys=True)
        stack_file = project.root / "stacks" / f"Pulumi.{STACK}.yaml"
        assert stack_values(STACK)["triton-platform:monitoring"]["chart"]["version"] == NEW
        point_stack_at(stack_file, cluster)
        set_chart_version(stack_file, OLD)
        pin_images(stack_file, tmp_path / "registry", {"TRITON_CHART_MIRROR": str(SHARED_CHARTS)})
        project.ok("stack", "init", STACK)
        project.ok("up", "--yes", "--skip-preview", stack=STACK)
        yield project, cluster, stack_file
    finally:
        cluster.stop()


def test_production_upgrades_kube_prometheus_stack_keeping_prometheus_data(
    deployed_with_79: tuple[Project, LocalCluster, Path], tmp_path: Path
) -> None:
    project, cluster, stack_file = deployed_with_79
    old_release, old_binary = prometheus_binary(OLD)
    new_release, new_binary = prometheus_binary(NEW)
    assert (old_release, new_release) == ("v3.7.3", "v3.14.0")

    crds = monitoring_crds(cluster)
    assert {c["metadata"]["annotations"]["operator.prometheus.io/version"] for c in crds.values()} == {OPERATOR[OLD]}
    before = the_prometheus(cluster)
    assert f"prometheus:{old_release}@sha256:" in before["spec"]["image"]
    monitors, rules = names(cluster, "servicemonitors"), names(cluster, "prometheusrules")
    queries = keda_queries(cluster)
    assert {q.split("/")[1] for q in queries} == {"demand", "gpu-memory"}

    data = tmp_path / "prometheus-data"  # the volume of the Prometheus' claim
    with static_metrics(exposition(queries, time.time())) as target:
        groups = selected_rule_groups(cluster, before)
        with prometheus(old_binary, tmp_path / "old", data, groups, target) as base:
            assert_rules_load_and_evaluate(base, groups)
            assert_keda_queries_answer(base, queries)
            time.sleep(3)  # a moment at which every query already had its samples
            recorded_at = time.time() - 1
            kept = {q: query(base, expr, recorded_at) for q, expr in queries.items()}
            assert all(kept.values()), kept

        # The upgrade: the pin moves, and nothing else.
        set_chart_version(stack_file, NEW)
        pin_images(stack_file, tmp_path / "registry-88", {"TRITON_CHART_MIRROR": str(SHARED_CHARTS)})
        project.ok("up", "--yes", "--skip-preview", stack=STACK)

        # The CRDs were updated in place to the new operator's, never replaced (which would delete every object of
        # their kinds), and the Prometheus object is the same one with the same storage: the operator's
        # StatefulSet keeps its volume claim template, so each replica keeps its volume.
        upgraded = monitoring_crds(cluster)
        assert {n: c["metadata"]["uid"] for n, c in upgraded.items()} == {
            n: c["metadata"]["uid"] for n, c in crds.items()
        }
        versions = {c["metadata"]["annotations"]["operator.prometheus.io/version"] for c in upgraded.values()}
        assert versions == {OPERATOR[NEW]}
        after = the_prometheus(cluster)
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
        assert after["spec"]["storage"] == before["spec"]["storage"]
        assert f"prometheus:{new_release}-distroless@sha256:" in after["spec"]["image"]
        assert names(cluster, "servicemonitors") == monitors
        assert names(cluster, "prometheusrules") == rules
        assert keda_queries(cluster) == queries
        # The new CRDs' schemas admit every ServiceMonitor and PrometheusRule as stored.
        for kind in ("servicemonitors", "prometheusrules"):
            cluster.apply(
                "\n---\n".join(json.dumps(as_applied(o)) for o in cluster.get(kind, "-A")["items"]), dry_run=True
            )
        # Seen in about half the runs here: the upgrade's `up` leaves the kube-proxy Service's two version labels
        # (`app.kubernetes.io/version`, `chart`) at 79.7.1, so the next preview proposes them (cause not found;
        # docs/testing.md). A second `up` converges, and nothing changes after it.
        project.ok("up", "--yes", "--skip-preview", stack=STACK)
        project.ok("preview", "--diff", "--expect-no-changes", stack=STACK)

        groups = selected_rule_groups(cluster, after)
        with prometheus(new_binary, tmp_path / "new", data, groups, target) as base:
            for q, expr in queries.items():
                assert query(base, expr, recorded_at) == kept[q], f"{q}: the pre-upgrade value is gone"
            assert_rules_load_and_evaluate(base, groups)
            assert_keda_queries_answer(base, queries)
