"""Helm charts the platform installs (KEDA, kube-prometheus-stack), each object an ordinary Pulumi resource.

Why not `helm.v3.Release`: a Release is one opaque resource. `pulumi preview` and the
policy pack never see the objects inside it, a chart bump shows as one changed
`version` string, and Helm never upgrades the CRDs in a chart's `crds/` folder
(https://helm.sh/docs/chart_best_practices/custom_resource_definitions/).

Why not `helm.v4.Chart`: it renders with the cluster's discovered version only, so in
render mode Helm assumes Kubernetes v1.20.0 (helm.sh/helm/v3 pkg/chartutil/capabilities.go)
and both charts refuse to render (`kubeVersion: >=1.23` / `>=1.25`); it also drops
hooks (pulumi-kubernetes provider/pkg/provider/helm/v4/chart.go sets DisableHooks).

So the chart is templated by the provider's `kubernetes:helm:template` function (Helm's
own engine; the cluster's version and API groups when deploying, `kubeVersion` from
the stack when rendering), and its objects are registered by two `kubernetes:yaml/v2:ConfigGroup`s:
`<name>-crds`, the chart's CRDs, protected and retained on delete, then `<name>-objects`, the rest,
namespaces first. Every object is then
previewed, diffed, policy-checked and rendered like the platform's own, and CRDs are
applied server-side on every chart bump. Hooks come out as plain objects; the platform
turns off the hooks of the charts it installs (see their values).

No `from __future__ import annotations` here: TypedDict reads `NotRequired` only from evaluated annotations.
"""

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
import yaml

from triton_platform.args.arg_schema import Setting, declare
from triton_platform.args.formats import CHART_REPOSITORY, CHART_VERSION, Format
from triton_platform.args.kubernetes_values import UNHEALTHY_POD_EVICTION_POLICY
from triton_platform.kube.images import image_fields, pinned


class ChartSource(TypedDict):
    """A pinned Helm chart: from its repository, or from a local folder (air-gapped clusters, mirrors)."""

    version: str
    """Exact chart version, e.g. `2.20.2`. With `path`, the folder's `Chart.yaml` declares it."""

    repository: NotRequired[str]
    """Chart repository URL (`https://` or `oci://`). Used when `path` is unset."""

    path: NotRequired[str]
    """An absolute path to an unpacked chart folder, its dependencies in its `charts/`, used instead of
    `repository`. Default: unset (the chart is fetched from `repository`)."""

    values: NotRequired[dict[str, Any]]
    """Values merged over the component's own (maps key by key; anything else replaces). Default: none."""


declare(
    ChartSource,
    version=Setting(format=Format(CHART_VERSION)),
    repository=Setting(format=Format(CHART_REPOSITORY)),
    path=Setting(min_length=1),
    values=Setting(default={}),
)


def chart_source_problem(chart: ChartSource) -> str | None:
    """Why `chart` (checked) says nowhere the chart comes from, or None."""
    if "repository" not in chart and "path" not in chart:
        return "neither repository nor path: say where the chart comes from"
    return None


def merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`overrides` over `base`, as Helm merges values files: maps key by key, anything else replaced."""
    out = dict(base)
    for key, value in overrides.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _enabled(values: dict[str, Any], condition: str) -> bool:
    """A dependency's `condition` (a dotted values path); Helm leaves the dependency on when it is unset."""
    node: Any = values
    for part in condition.split("."):
        if not isinstance(node, dict) or part not in node:
            return True
        node = node[part]
    return node is not False


def missing_dependencies(folder: Path, values: dict[str, Any]) -> list[str]:
    """Dependencies of a chart folder that the values turn on but its `charts/` lacks (`helm dependency build`)."""
    manifest = yaml.safe_load((folder / "Chart.yaml").read_text()) or {}
    defaults = yaml.safe_load((folder / "values.yaml").read_text()) if (folder / "values.yaml").is_file() else {}
    effective = merged(defaults or {}, values)
    missing = []
    for dependency in manifest.get("dependencies") or []:
        name = dependency["name"]
        condition = dependency.get("condition")
        if condition and not _enabled(effective, condition):
            continue
        if not (folder / "charts" / name).is_dir() and not list((folder / "charts").glob(f"{name}-*.tgz")):
            missing.append(f"{name} {dependency.get('version', '')}".strip())
    return missing


def template_options(
    *,
    chart_name: str,
    chart: ChartSource,
    release: str,
    namespace: str,
    values: dict[str, Any],
    kube_version: str | None,
) -> dict[str, Any]:
    """The options of `kubernetes:helm:template` (provider/pkg/provider/invoke_helm_template.go, HelmChartOpts)."""
    options: dict[str, Any] = {
        "release_name": release,
        "namespace": namespace,
        "values": merged(values, chart.get("values") or {}),
        "include_test_hook_resources": False,
    }
    if "path" in chart:
        # A local chart folder: the function loads <path>/<chart>, so split the folder's parent off.
        folder = Path(chart["path"])
        options.update(path=str(folder.parent), chart=folder.name)
    else:
        options.update(chart=chart_name, fetch_opts={"repo": chart.get("repository"), "version": chart["version"]})
    if kube_version is not None:
        # Deploying, the provider asks the API server; rendering, Helm would assume v1.20.0.
        options["kube_version"] = kube_version
    return options


def as_stored(obj: dict[str, Any]) -> dict[str, Any]:
    """A chart's object as the API server stores it, so the next preview shows no diff.

    An RBAC Role or ClusterRole rendered with `rules: []` (grafana's chart does, for its Role when
    `rbac.namespaced` is off) is stored with no `rules` at all: protobuf keeps no empty repeated field
    (k8s.io/api rbac/v1 `Rules []PolicyRule`), so every later preview would propose adding it back.
    """
    if obj.get("kind") in ("Role", "ClusterRole") and obj.get("rules") == []:
        return {key: value for key, value in obj.items() if key != "rules"}
    return obj


def drainable(obj: dict[str, Any]) -> dict[str, Any]:
    """A chart's PodDisruptionBudget with the platform's eviction policy for unready pods where the chart sets none
    (kube-prometheus-stack's, KEDA's and the HTTP add-on's have no value for it)."""
    if obj.get("kind") != "PodDisruptionBudget" or "unhealthyPodEvictionPolicy" in obj.get("spec", {}):
        return obj
    return {**obj, "spec": {**obj.get("spec", {}), "unhealthyPodEvictionPolicy": UNHEALTHY_POD_EVICTION_POLICY}}


def with_images(node: Any, digests: dict[str, str], *, container: bool = False) -> Any:
    """A chart's object with every image it runs as the platform runs its own (triton_platform/kube/images.py): by
    digest where `digests` lists its tag, and each container's pull policy to match. Images are found where they
    run, not by each chart's values keys: a container's or an operator resource's `image` (a Prometheus' or
    Alertmanager's `spec.image`, with its `imagePullPolicy`), and a flag naming an image (`--flag=<image>`, the
    Prometheus Operator's `--prometheus-config-reloader`), as Helm's post-renderers and kustomize's `images` do."""
    if isinstance(node, list):
        return [with_images(item, digests, container=container) for item in node]
    if isinstance(node, str):
        flag, equals, value = node.partition("=")
        return f"{flag}={pinned(value, digests)}" if equals and flag.startswith("--") else node
    if not isinstance(node, dict):
        return node
    out = {
        key: with_images(value, digests, container=key in ("containers", "initContainers", "ephemeralContainers"))
        for key, value in node.items()
    }
    if isinstance(node.get("image"), str) and (container or "imagePullPolicy" in node):
        out.update(image_fields(node["image"], digests))
    return out


def _pinned(obj: dict[str, Any], digests: dict[str, str]) -> dict[str, Any]:
    """`with_images` of every object but a CRD, which runs nothing (and holds the chart's largest documents)."""
    return obj if obj.get("kind") == "CustomResourceDefinition" else with_images(obj, digests)


def as_yaml(objects: list[dict[str, Any]]) -> str:
    """A ConfigGroup's `yaml` input: one JSON document per object (JSON is YAML), in the chart's order.

    A string crosses the engine as one value. Handed over as `objs`, every nested map of every object would be
    logged key by key at each level on the way (the CLI's automatic log records each marshaled property), which
    for the charts' CRDs, deep OpenAPI schemas, cost most of a production preview (bench/preview_time.py).
    """
    return "\n---\n".join(json.dumps(obj) for obj in objects)


def split_crds(objects: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A chart's CustomResourceDefinitions, and its other objects, each in the chart's order."""
    crds = [obj for obj in objects if obj.get("kind") == "CustomResourceDefinition"]
    return crds, [obj for obj in objects if obj.get("kind") != "CustomResourceDefinition"]


@dataclass(frozen=True)
class HelmChartArgs:
    chart_name: str
    """The chart's name in its repository (`keda`, `kube-prometheus-stack`)."""

    chart: ChartSource
    """Where the chart comes from and its pinned version."""

    release: str
    """Helm release name: the prefix of the chart's object names."""

    namespace: pulumi.Input[str]
    """Namespace the chart's namespaced objects go to."""

    values: dict[str, Any]
    """The platform's chart values; the stack's `chart.values` are merged over them."""

    kube_version: str | None
    """Kubernetes version to render for; None when deploying (the provider asks the API server)."""

    image_digests: dict[str, str] = dataclasses.field(default_factory=dict)
    """Digests by `<image>:<tag>`: the chart's images that run by digest (`with_images`)."""


class InstalledChart(pulumi.ComponentResource):
    """A pinned chart's objects, CRDs first and protected."""

    def __init__(self, name: str, args: HelmChartArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("triton-platform:helm:InstalledChart", name, None, opts)
        if "path" in args.chart:
            folder = Path(args.chart["path"])
            missing = missing_dependencies(folder, merged(args.values, args.chart.get("values") or {}))
            if missing:
                # Helm's own message for this is a nil-pointer error deep inside a template.
                raise pulumi.RunError(
                    f"chart folder {folder} lacks the dependencies {', '.join(missing)} in its charts/ folder, "
                    "which the chart's values turn on: lay them in (`helm dependency build`), or turn them off "
                    "in the stack's `chart.values`"
                )
        options = pulumi.Output.from_input(args.namespace).apply(
            lambda namespace: json.dumps(
                template_options(
                    chart_name=args.chart_name,
                    chart=args.chart,
                    release=args.release,
                    namespace=namespace,
                    values=args.values,
                    kube_version=args.kube_version,
                )
            )
        )
        template = pulumi.runtime.invoke_output(
            "kubernetes:helm:template",
            {"jsonOpts": options},
            pulumi.InvokeOutputOptions(parent=self),
        )
        split = template.apply(
            lambda result: split_crds(
                [as_stored(drainable(_pinned(obj, args.image_digests))) for obj in (result or {}).get("result") or []]
            )
        )
        # CRDs hold every custom resource of their kind, cluster-wide: protected, and retained on delete. The
        # engine hands both options from a group down to the objects it registers (pulumi pkg/resource/deploy
        # source_eval.go, inheritFromParent); a transform doing the same would send every object of the chart
        # through the program and back. Each object's URN names its parents' types only, so the CRDs keep theirs.
        crds = k8s.yaml.v2.ConfigGroup(
            f"{name}-crds",
            yaml=split.apply(lambda parts: as_yaml(parts[0])),
            resource_prefix=args.release,
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )
        # The custom resources a chart brings (a Prometheus, its ServiceMonitors) wait for their CRDs.
        k8s.yaml.v2.ConfigGroup(
            f"{name}-objects",
            yaml=split.apply(lambda parts: as_yaml(parts[1])),
            resource_prefix=args.release,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[crds]),
        )
        self.register_outputs({})
