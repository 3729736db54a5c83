"""A real control plane for the tests (scripts/local-cluster), and stack copies that deploy to it."""

from __future__ import annotations

import json
import os
import subprocess
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from offline.chart_template import mirrored_chart
from platform_config.paths import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "local-cluster"
CONTEXT = "triton-local"
# Chart sources for installs without a chart repository, beside the checkout (an air-gapped user's mirror).
SHARED_CHARTS = PROJECT_ROOT.parent / "shared" / "charts"


@dataclass
class LocalCluster:
    """One running cluster, in its own folder; stopped by PID by `stop`."""

    folder: Path

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "kubeconfig"

    @property
    def api_port(self) -> int:
        return int((self.folder / "ports" / "apiserver").read_text())

    def script(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "LOCAL_CLUSTER_DIR": str(self.folder)}
        result = subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, check=False)
        if check:
            assert result.returncode == 0, f"local-cluster {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return result

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        binary = PROJECT_ROOT / ".tools" / "cluster" / "bin" / "kubectl"
        result = subprocess.run(
            [str(binary), "--kubeconfig", str(self.kubeconfig), *args], capture_output=True, text=True, check=False
        )
        if check:
            assert result.returncode == 0, f"kubectl {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return result

    def get(self, *args: str) -> Any:
        """`kubectl get ... -o json`, decoded; None when the object does not exist."""
        result = self.kubectl("get", *args, "-o", "json", check=False)
        if result.returncode != 0:
            assert "NotFound" in result.stderr, result.stderr
            return None
        return json.loads(result.stdout)

    def apply(self, manifests: str, *, dry_run: bool = False) -> None:
        """Objects laid by hand, as a cluster's owner would have made them (server-side apply); `dry_run`: only
        admitted (validated, defaulted) by the API server, nothing stored."""
        binary = PROJECT_ROOT / ".tools" / "cluster" / "bin" / "kubectl"
        dry = ["--dry-run=server", "--field-manager=dry-run", "--force-conflicts"] if dry_run else []
        result = subprocess.run(
            [str(binary), "--kubeconfig", str(self.kubeconfig), "apply", "--server-side", *dry, "-f", "-"],
            input=manifests,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, f"kubectl apply failed:\n{result.stdout}\n{result.stderr}"

    def stop(self) -> None:
        self.script("stop")

    # A cluster started with `wake=True` (scripts/local-cluster start --wake): the KEDA HTTP add-on and the node
    # wake-0, whose pods turn Ready only when a test marks them (tests/support/wake_cluster.py).

    @property
    def wake_ip(self) -> str:
        """The loopback address the names given to `wake_host` resolve to, for the add-on and KEDA."""
        return (self.folder / "ports" / "wake-ip").read_text().strip()

    @property
    def interceptor_proxy_port(self) -> int:
        """The add-on interceptor's proxy port on 127.0.0.1 (the chart's 8080, free here)."""
        return int((self.folder / "ports" / "interceptor-proxy").read_text())

    @property
    def interceptor_metrics_url(self) -> str:
        return f"http://127.0.0.1:{int((self.folder / 'ports' / 'interceptor-metrics').read_text())}/metrics"

    def wake_host(self, *names: str) -> str:
        """Make `names` (a Service's `<name>.<namespace>`) resolve to `wake_ip` for the add-on; returns it."""
        return self.script("wake-host", *names).stdout.strip()


def module_file(module: str, version: str, path: str) -> str:
    """A file of a Go module as the module proxy serves it (its zip, read in place: the module's own `go`
    line may ask for a newer toolchain than this machine's, which only building would need)."""
    downloaded = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        env={**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"},
        capture_output=True,
        text=True,
        check=False,
    )
    archive = json.loads(downloaded.stdout or "{}").get("Zip")
    assert archive, f"go mod download {module}@{version}: {downloaded.stdout}{downloaded.stderr}"
    assert Path(archive).is_file(), f"go mod download {module}@{version} named no archive: {archive}"
    with zipfile.ZipFile(archive) as zipped:
        return zipped.read(f"{module}@{version}/{path}").decode()


def start_cluster(folder: Path, *, operators: bool = True, wake: bool = False) -> LocalCluster:
    """`wake`: with the KEDA HTTP add-on and the node wake-0 (scripts/local-cluster start --wake)."""
    cluster = LocalCluster(folder)
    cluster.script("start", *([] if operators else ["--no-operators"]), *(["--wake"] if wake else []))
    return cluster


def wait_until(what: str, check: Callable[[], bool], timeout: float = 120, interval: float = 1) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f}s waiting for {what}"
        time.sleep(interval)


def deployment_replicas(cluster: LocalCluster, namespace: str, name: str) -> int:
    """The replicas a Deployment asks for (what KEDA's HPA last set)."""
    return int(cluster.get("deployment", name, "-n", namespace)["spec"].get("replicas") or 0)


def keda_hpa(cluster: LocalCluster, namespace: str, name: str) -> Any:
    """The HPA KEDA made for the ScaledObject of Deployment `name`; None until it exists."""
    return cluster.get("hpa", f"keda-hpa-{name}", "-n", namespace)


def desired_replicas(cluster: LocalCluster, namespace: str, name: str) -> int:
    """The HPA's last desired count for Deployment `name`; 0 until it has one."""
    return int(((keda_hpa(cluster, namespace, name) or {}).get("status") or {}).get("desiredReplicas") or 0)


def use_offline_charts(config: dict[str, Any]) -> None:
    """Install-mode charts from the offline chart folders, as an air-gapped user sets `chart.path`.

    The stack's own version pin stays, and picks the folder (`<chart>-<version>/<chart>/` where the mirror holds
    several versions, as offline/chart_template.py looks it up): validation checks it against its Chart.yaml. A
    dependency the folder lacks is turned off through `chart.values`, as such a user would have to.
    The offline kube-prometheus-stack folder holds every subchart its Chart.yaml lists, so production
    installs grafana and kube-state-metrics (node-exporter and windows-exporter stay off by its values).
    """
    for section, chart, key in (
        ("triton-platform:monitoring", "kube-prometheus-stack", None),
        ("triton-platform:scaling", "keda", "keda"),
        ("triton-platform:scaling", "keda-add-ons-http", "httpAddOn"),
    ):
        settings = config.get(section) or {}
        owner = settings.get(key, {}) if key else settings
        if owner.get("mode") == "install":
            pinned = owner.setdefault("chart", {})
            pinned.pop("repository", None)
            version = pinned.get("version")
            folder = (mirrored_chart(SHARED_CHARTS, chart, version) if version else None) or SHARED_CHARTS / chart
            pinned["path"] = str(folder)
            for condition in lacking_conditions(folder):
                node = pinned.setdefault("values", {})
                *parents, leaf = condition.split(".")
                for part in parents:
                    node = node.setdefault(part, {})
                node[leaf] = False


def lacking_conditions(folder: Path) -> list[str]:
    """The `condition` of each dependency a chart folder declares but does not hold."""
    manifest = yaml.safe_load((folder / "Chart.yaml").read_text()) or {}
    return [
        d["condition"]
        for d in manifest.get("dependencies") or []
        if d.get("condition") and not (folder / "charts" / d["name"]).is_dir()
    ]


def edit_stack(stack_file: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Change a stack file's `config` in place (a test's copy of it)."""
    document = yaml.safe_load(stack_file.read_text())
    edit(document["config"])
    stack_file.write_text(yaml.safe_dump(document, sort_keys=False))


def point_stack_at(stack_file: Path, cluster: LocalCluster) -> None:
    """Deploy mode to the local cluster's context, charts from the offline folders; nothing else changes.

    Production keeps its install modes, its model claim and its protection.
    """

    def edit(config: dict[str, Any]) -> None:
        kubernetes = config["triton-platform:kubernetes"]
        kubernetes.pop("renderDir", None)
        kubernetes.update(mode="deploy", context=CONTEXT, kubeconfig=str(cluster.kubeconfig))
        use_offline_charts(config)

    edit_stack(stack_file, edit)
