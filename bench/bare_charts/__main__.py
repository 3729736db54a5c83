"""Only the charts production installs, nothing else: the anchor bench/preview_time.py times production against.

Each chart is installed by the same mechanism as production's (triton_platform.kube.helm_chart.InstalledChart: the
provider's `kubernetes:helm:template`, then its ConfigGroups), from the same folder with the same values, into a
namespace of its own, each after the one before (KEDA's chart brings a ServiceMonitor, as in production).
bench/preview_time.py writes the charts' settings, read from production's own program, to BARE_CHARTS.
"""

import json
import os
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from triton_platform.kube.helm_chart import HelmChartArgs, InstalledChart

provider = k8s.Provider(
    "bare",
    render_yaml_to_directory=os.environ.get("BARE_RENDER_DIR"),
    kubeconfig=os.environ.get("BARE_KUBECONFIG"),
    context=os.environ.get("BARE_CONTEXT"),
)
previous: list[pulumi.Resource] = []
for chart in json.loads(Path(os.environ["BARE_CHARTS"]).read_text()):
    namespace = k8s.core.v1.Namespace(
        f"{chart['release']}-namespace",
        metadata={"name": chart["namespace"]},
        opts=pulumi.ResourceOptions(provider=provider),
    )
    installed = InstalledChart(
        chart["release"],
        HelmChartArgs(
            chart_name=chart["chart_name"],
            chart={"version": chart["version"], "path": chart["path"]},
            release=chart["release"],
            namespace=chart["namespace"],
            values=chart["values"],
            kube_version=chart["kube_version"],
        ),
        opts=pulumi.ResourceOptions(providers={"kubernetes": provider}, depends_on=[namespace, *previous]),
    )
    previous = [installed]
