"""The options the platform hands Helm's templating (`kubernetes:helm:template`), per chart source."""

from __future__ import annotations

from pathlib import Path

from components.helm_chart import template_options
from platform_config.schema import HelmChart


def test_a_repository_chart_is_fetched_at_its_pinned_version() -> None:
    chart = HelmChart(repository="https://kedacore.github.io/charts", version="2.20.2")
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
    chart = HelmChart(path=str(folder), version="2.20.2")
    options = template_options(
        chart_name="keda", chart=chart, release="keda", namespace="keda", values={}, kube_version="v1.34.0"
    )
    # The provider loads <path>/<chart> (invoke_helm_template.go), so the folder's own name is the chart.
    assert options["path"] == str(tmp_path / "charts")
    assert options["chart"] == "keda"
    assert "fetch_opts" not in options
    assert options["kube_version"] == "v1.34.0"
