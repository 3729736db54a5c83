"""The options the platform hands Helm's templating (`kubernetes:helm:template`), per chart source, and what it
changes in the charts' objects."""

from __future__ import annotations

from pathlib import Path

from platform_config.scaling import KedaChart
from triton_platform.http_add_on import add_on_values, disruption_budgets
from triton_platform.kube.helm_chart import (
    as_stored,
    drainable,
    merged,
    missing_dependencies,
    template_options,
    with_images,
)


def test_a_repository_chart_is_fetched_at_its_pinned_version() -> None:
    chart = KedaChart().source()
    options = template_options(
        chart_name="keda", chart=chart, release="keda", namespace="keda", values={"a": 1}, kube_version=None
    )
    assert options == {
        "chart": "keda",
        "fetch_opts": {"repo": "https://kedacore.github.io/charts", "version": "2.20.2"},
        "release_name": "keda",
        "namespace": "keda",
        "values": {"a": 1},
        "include_test_hook_resources": False,
    }


def test_a_chart_folder_is_loaded_from_its_parent_and_rendering_pins_the_kubernetes_version(tmp_path: Path) -> None:
    folder = tmp_path / "charts" / "keda"
    folder.mkdir(parents=True)
    (folder / "Chart.yaml").write_text("apiVersion: v2\nname: keda\nversion: 2.20.2\n")
    chart = KedaChart(path=str(folder)).source()
    options = template_options(
        chart_name="keda", chart=chart, release="keda", namespace="keda", values={}, kube_version="v1.34.0"
    )
    # The provider loads <path>/<chart> (invoke_helm_template.go), so the folder's own name is the chart.
    assert options["path"] == str(tmp_path / "charts")
    assert options["chart"] == "keda"
    assert "fetch_opts" not in options
    assert options["kube_version"] == "v1.34.0"


def test_values_merge_maps_key_by_key_and_replace_the_rest() -> None:
    base = {"prometheus": {"retention": "15d", "selector": {"a": "1"}}, "list": [1, 2]}
    over = {"prometheus": {"retention": "30d"}, "list": [3]}
    assert merged(base, over) == {"prometheus": {"retention": "30d", "selector": {"a": "1"}}, "list": [3]}


def test_a_chart_folder_missing_dependencies_the_values_turn_on_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "kps"
    (folder / "charts" / "crds").mkdir(parents=True)
    (folder / "Chart.yaml").write_text(
        "apiVersion: v2\nname: kps\nversion: 1.0.0\ndependencies:\n"
        "  - {name: crds, version: 0.0.0, condition: crds.enabled}\n"
        "  - {name: grafana, version: 10.2.0, condition: grafana.enabled}\n"
        "  - {name: node-exporter, version: 4.0.0, condition: nodeExporter.enabled}\n"
    )
    (folder / "values.yaml").write_text("grafana: {enabled: true}\nnodeExporter: {enabled: false}\n")
    assert missing_dependencies(folder, {}) == ["grafana 10.2.0"]
    assert missing_dependencies(folder, {"grafana": {"enabled": False}}) == []
    assert missing_dependencies(folder, {"nodeExporter": {"enabled": True}}) == [
        "grafana 10.2.0",
        "node-exporter 4.0.0",
    ]


def test_an_empty_rbac_rule_list_is_dropped_as_the_api_server_drops_it() -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "g"}, "rules": []}
    assert as_stored(role) == {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "g"}}
    cluster_role = {**role, "kind": "ClusterRole"}
    assert "rules" not in as_stored(cluster_role)


def test_objects_the_api_server_stores_as_rendered_are_unchanged() -> None:
    granted = {"kind": "Role", "metadata": {"name": "g"}, "rules": [{"apiGroups": [""], "verbs": ["get"]}]}
    assert as_stored(granted) == granted
    # Only RBAC's rules: an empty list elsewhere is the object's own business.
    config_map = {"kind": "ConfigMap", "metadata": {"name": "c"}, "rules": []}
    assert as_stored(config_map) == config_map


DIGEST = "sha256:" + "a" * 64


def test_a_charts_images_run_by_digest_where_listed_and_by_tag_pulled_always() -> None:
    """Containers, an operator resource's `spec.image` and a flag naming an image; a listed tag runs by digest
    from the node's copy, an unlisted one by tag, pulled on every start."""
    deployment = {
        "kind": "Deployment",
        "spec": {
            "template": {
                "spec": {
                    "initContainers": [{"name": "init", "image": "docker.io/busybox:1.37"}],
                    "containers": [
                        {
                            "name": "operator",
                            "image": "quay.io/prometheus-operator/prometheus-operator:v0.86.2",
                            "imagePullPolicy": "IfNotPresent",
                            "args": [
                                "--prometheus-config-reloader=quay.io/prometheus-operator/prometheus-config-reloader:v0.86.2",
                                "--log-level=info",
                            ],
                        }
                    ],
                }
            }
        },
    }
    digests = {
        "quay.io/prometheus-operator/prometheus-operator:v0.86.2": DIGEST,
        "quay.io/prometheus-operator/prometheus-config-reloader:v0.86.2": DIGEST,
    }
    spec = with_images(deployment, digests)["spec"]["template"]["spec"]
    assert spec["initContainers"] == [{"name": "init", "image": "docker.io/busybox:1.37", "imagePullPolicy": "Always"}]
    assert spec["containers"] == [
        {
            "name": "operator",
            "image": f"quay.io/prometheus-operator/prometheus-operator:v0.86.2@{DIGEST}",
            "imagePullPolicy": "IfNotPresent",
            "args": [
                f"--prometheus-config-reloader=quay.io/prometheus-operator/prometheus-config-reloader:v0.86.2@{DIGEST}",
                "--log-level=info",
            ],
        }
    ]
    prometheus = {
        "kind": "Prometheus",
        "spec": {"image": "quay.io/prometheus/prometheus:v3.7.3", "imagePullPolicy": "IfNotPresent"},
    }
    assert with_images(prometheus, {})["spec"] == {
        "image": "quay.io/prometheus/prometheus:v3.7.3",
        "imagePullPolicy": "Always",
    }


def test_only_images_change_and_a_value_that_merely_looks_like_one_stays() -> None:
    config_map = {"kind": "ConfigMap", "data": {"image": "quay.io/prometheus/prometheus:v3.7.3", "flag": "--x=y"}}
    assert with_images(config_map, {"quay.io/prometheus/prometheus:v3.7.3": DIGEST}) == config_map


def test_every_charts_disruption_budget_lets_an_unready_pod_be_evicted() -> None:
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "spec": {"minAvailable": 1}}
    assert drainable(budget)["spec"] == {"minAvailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow"}
    assert budget["spec"] == {"minAvailable": 1}  # the chart's object is left as it was
    chosen = {**budget, "spec": {"minAvailable": 1, "unhealthyPodEvictionPolicy": "IfHealthyBudget"}}
    assert drainable(chosen) == chosen  # a chart's own choice stands
    service = {"apiVersion": "v1", "kind": "Service", "spec": {}}
    assert drainable(service) is service


def test_the_http_add_on_outranks_what_it_wakes_and_drains_like_the_rest() -> None:
    ranked = add_on_values("triton-production-keda")
    assert {component: ranked[component].get("priorityClassName") for component in COMPONENTS} == dict.fromkeys(
        COMPONENTS, "triton-production-keda"
    )
    assert not any("priorityClassName" in add_on_values()[component] for component in COMPONENTS)
    budgets = disruption_budgets("keda", {})
    assert {budget["spec"]["unhealthyPodEvictionPolicy"] for budget in budgets.values()} == {"AlwaysAllow"}


COMPONENTS = ("operator", "interceptor", "scaler")
"""The HTTP add-on's three deployments (kedacore/http-add-on's chart values)."""
