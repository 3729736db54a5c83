"""`GpuNodePoolArgs`, what a user gives `GpuNodePool`, declared once: its builders read the same type, checked.

The Args are plain, flat and typed: Pulumi infers the component's schema from them, so they may come from
any Pulumi language as JSON (whole numbers as floats, optional keys absent). Each key's default, bounds and
format are declared beside its TypedDict (`declare`); `pool_of` checks Args against them and the rules that
span keys, raising all problems at once, and returns them with every default applied. No
`from __future__ import annotations` here: the schema is read from the annotations as objects.
"""

import re
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict, cast

import pulumi

from triton_platform.args.arg_problems import ArgProblems
from triton_platform.args.arg_schema import Setting, declare, named_by, resolve_record
from triton_platform.args.excerpts import excerpt
from triton_platform.args.formats import (
    IMAGE,
    IMAGE_DIGEST,
    IMAGE_TAG,
    KUBE_VERSION,
    LABEL_KEY_FORMAT,
    LABEL_VALUE_FORMAT,
    NAMESPACE,
    NODE_DELAY,
    NODE_LIFETIME,
    OBJECT_NAME,
    SCRAPE_INTERVAL,
    Format,
)
from triton_platform.gpu_pool.gpu_pool_contract import TAINT_EFFECTS
from triton_platform.kube.workload_identity import identity_annotation_rules

AUTOSCALERS = ("static", "karpenter", "cluster-autoscaler", "external")
GPU_SOFTWARE = ("pool", "cloud", "gpu-operator")
NODE_CLASS_KINDS = ("EC2NodeClass", "AKSNodeClass")
CAPACITY_TYPES = ("on-demand", "spot", "reserved")
CLOUD_PROVIDERS = ("aws", "gce", "azure")
SHARING = ("none", "time-slicing", "mig")
MIG_STRATEGIES = ("single",)
GPU_RESOURCES = ("nvidia.com/gpu",)
GPU_OPERATOR_NAMESPACE = "gpu-operator"
OWN_LABELS = ("app.kubernetes.io/name", "pod-security.kubernetes.io/enforce")
"""Label keys the component sets itself on some of its objects (each object's app; the `gpu-system` namespace's
Pod Security level): a value of the user's under one of them would be overwritten there, unseen."""

COMPONENT = "GpuNodePool"


CLUSTER_AUTOSCALER = "registry.k8s.io/autoscaling/cluster-autoscaler"
CLUSTER_AUTOSCALER_RELEASES = {31: "v1.31.2", 32: "v1.32.5", 33: "v1.33.6", 34: "v1.34.5", 35: "v1.35.2", 36: "v1.36.1"}
"""The newest cluster-autoscaler release known here of each Kubernetes minor: images promoted to registry.k8s.io
in kubernetes/k8s.io #9760 (2026-07-22: v1.33.6, v1.34.5, v1.35.2, v1.36.1) and #8815 (v1.32.5); v1.31.2 from
the releases' page as EKS Blueprints map it. A release supports only its own minor (kubernetes/autoscaler,
cluster-autoscaler/README.md, "Releases")."""


class Taint(TypedDict):
    """A taint of the pool's nodes; GPU pods get the matching toleration (`GpuNodePool.placement`)."""

    key: str
    """Taint key, e.g. `nvidia.com/gpu`. Required."""

    value: NotRequired[str]
    """Taint value; when empty, pods tolerate the key with any value. Default: `""`."""

    effect: NotRequired[str]
    """What the taint does to pods that do not tolerate it: `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    Default: `NoSchedule`."""


DEFAULT_TAINTS: list[Taint] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


class KarpenterSettings(TypedDict):
    """A Karpenter `karpenter.sh/v1` NodePool for the GPU nodes, on AWS (EC2NodeClass) or Azure (AKSNodeClass)."""

    node_class_kind: NotRequired[str]
    """The provider's node class: `EC2NodeClass` (`karpenter.k8s.aws`, Karpenter on AWS) or `AKSNodeClass`
    (`karpenter.azure.com`, AKS node auto-provisioning). It also picks the provider's instance labels below.
    Default: `EC2NodeClass`."""

    instance_families: NotRequired[list[str]]
    """Instance families, e.g. `g5`, `p4d` on AWS (`karpenter.k8s.aws/instance-family`), `N` on Azure
    (`karpenter.azure.com/sku-family`). Set this or `gpu_names`, or Karpenter may launch nodes without GPUs.
    Default: none."""

    gpu_names: NotRequired[list[str]]
    """GPU models, e.g. `a10g`, `l4` on AWS (`karpenter.k8s.aws/instance-gpu-name`), `A100` on Azure
    (`karpenter.azure.com/sku-gpu-name`). Set this or `instance_families`. Default: none."""

    capacity_types: NotRequired[list[str]]
    """`karpenter.sh/capacity-type` values the pool may launch: `on-demand`, `spot`, `reserved`.
    Default: `["on-demand"]`."""

    node_class: NotRequired[str]
    """Name of the node class (of `node_class_kind`) the nodes use. Default: `default`."""

    consolidate_after: NotRequired[str]
    """How long a node must be empty before Karpenter removes it (the NodePool's `disruption.consolidateAfter`),
    a Go duration. The default is cluster-autoscaler's default `--scale-down-unneeded-time`. Default: `10m`."""

    expire_after: NotRequired[str]
    """Node lifetime before Karpenter replaces it (fresh AMIs), a Go duration; `Never` keeps nodes until they
    are empty. Default: `720h`."""


class ClusterAutoscalerSettings(TypedDict):
    """The Kubernetes cluster-autoscaler, scaling existing node groups."""

    cloud_provider: str
    """`--cloud-provider`: `aws`, `gce` or `azure`. Required."""

    node_groups: list[str]
    """Node group names (ASG, MIG or VMSS), at least one; each is bounded by `min_nodes`-`max_nodes` (`--nodes`).
    Required."""

    image: NotRequired[str]
    """cluster-autoscaler image, pinned. cluster-autoscaler supports only its own Kubernetes minor: where the pool
    knows the cluster's version (`kube_version`), an image of another minor is refused. Unset, the newest release
    known here of the cluster's minor (`CLUSTER_AUTOSCALER_RELEASES`), else the default.
    Default: `registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.5`."""

    scale_down_delay_after_add: NotRequired[str]
    """`--scale-down-delay-after-add`, a Go duration. The default is cluster-autoscaler's own. Default: `10m`."""

    scale_down_delay_after_delete: NotRequired[str]
    """`--scale-down-delay-after-delete`, a Go duration. cluster-autoscaler's own default is its scan interval
    (10s); 2m lets the cluster settle after a removal before the next. Default: `2m`."""

    scale_down_unneeded_time: NotRequired[str]
    """`--scale-down-unneeded-time`, a Go duration. The default is cluster-autoscaler's own. Default: `10m`."""

    service_account_annotations: NotRequired[dict[str, str]]
    """Annotations of its ServiceAccount, e.g. `eks.amazonaws.com/role-arn` for the cloud API permissions. A
    workload-identity annotation must name an identity of `cloud_provider`'s cloud, in its form; with
    `azure.workload.identity/client-id` its pods get the `azure.workload.identity/use: "true"` label. Default: none."""


class DevicePluginSettings(TypedDict):
    """The NVIDIA device plugin DaemonSet that advertises `nvidia.com/gpu`."""

    image: NotRequired[str]
    """Plugin image, pinned. Default: `nvcr.io/nvidia/k8s-device-plugin:v0.20.0`."""

    sharing: NotRequired[str]
    """GPU sharing: `none`, `time-slicing` (small models share a GPU) or `mig` (large GPUs partitioned).
    Default: `none`."""

    time_slicing_replicas: NotRequired[int]
    """With time-slicing, how many pods share each GPU, 2-64. Default: `4`."""

    mig_strategy: NotRequired[str]
    """With MIG, the plugin's strategy: `single` advertises identical MIG slices as `nvidia.com/gpu`, which GPU
    pods request (the only one allowed: `mixed` would advertise `nvidia.com/mig-*` resources instead).
    Default: `single`."""


class GpuNodePoolArgs(TypedDict):
    """The GPU node pool: its nodes, node autoscaler, device plugin, spare capacity and GPU metrics."""

    workload_namespace: str
    """Namespace of the GPU workloads the pool serves. The spare-capacity placeholders run in it, and it
    prefixes the pool's cluster-scoped names (PriorityClasses `<ns>-batch` and `<ns>-overprovisioning`, the
    Karpenter NodePool `<ns>-gpu`, the ClusterRole `<ns>-cluster-autoscaler`), so that pools of different
    namespaces sharing a cluster do not collide; two pools with the same `workload_namespace` in one cluster
    would claim the same cluster-scoped objects. Required."""

    max_nodes: int
    """Ceiling of the node autoscaler, 1-1000. With `gpus_per_node` it bounds how many GPUs the pool's
    workloads together may ask for. Required."""

    gpus_per_node: NotRequired[int]
    """Physical GPUs on each node, 1-16. With time-slicing the device plugin advertises each several times;
    Karpenter's limit counts advertised ones. Default: `1`."""

    min_nodes: NotRequired[int]
    """Nodes kept even when idle: the cluster-autoscaler's lower bound, at most `max_nodes`. Karpenter has no
    node minimum (must be 0; warm capacity comes from `overprovisioning_replicas`); a static pool's size is
    fixed (must equal `max_nodes`). Default: `max_nodes` for autoscaler `static`, 0 otherwise."""

    manage: NotRequired[bool]
    """Create the cluster-level pool objects (the `gpu-system` namespace, device plugin, node autoscaler, DCGM
    exporter), under fixed names. Exactly one pool per cluster may: two managing pools in one cluster would
    claim the same `gpu-system` objects (a second in the same program is refused, naming them). Others set
    false and only use the pool. Default: `true`."""

    resource_name: NotRequired[str]
    """Extended resource the NVIDIA device plugin advertises; only `nvidia.com/gpu`. Default: `nvidia.com/gpu`."""

    node_labels: NotRequired[dict[str, str]]
    """Labels every node of the pool carries; GPU pods select on them (`placement.node_selector`).
    Default: `{"triton-platform/gpu-pool": "inference"}`."""

    taints: NotRequired[list[Taint]]
    """Taints of the pool's nodes, which keep other workloads off the GPUs; GPU pods tolerate them.
    Default: `[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]`."""

    autoscaler: NotRequired[str]
    """Node autoscaling: `karpenter` (a Karpenter NodePool, settings in `karpenter`), `cluster-autoscaler`
    (settings in `cluster_autoscaler`), `external` (the cloud scales the node pool: GKE node-pool autoscaling
    or a ComputeClass, AKS's managed cluster autoscaler; nothing in-cluster, `min_nodes`-`max_nodes` state its
    bounds) or `static` (a fixed pool of existing nodes). Default: `static`."""

    karpenter: NotRequired[KarpenterSettings]
    """The NodePool, for autoscaler `karpenter` (required there, refused otherwise). Default: unset."""

    cluster_autoscaler: NotRequired[ClusterAutoscalerSettings]
    """The autoscaler, for `cluster-autoscaler` (required there, refused otherwise). Default: unset."""

    static_nodes: NotRequired[list[str]]
    """For autoscaler `static` only: existing nodes to label and taint (NodePatch). With none, the nodes already
    carry `node_labels` and `taints`. Default: none."""

    gpu_software: NotRequired[str]
    """Who runs the GPU node software: `pool` (this component: NVIDIA's device plugin, and the DCGM exporter
    with `dcgm_exporter`), `cloud` (the cloud installs the driver and device plugin, as GKE does; no in-cluster
    DCGM exporter) or `gpu-operator` (the NVIDIA GPU Operator runs both; the pool scrapes its exporter, see
    `gpu_operator_namespace`). Default: `pool`."""

    gpu_operator_namespace: NotRequired[str]
    """With `gpu_software: gpu-operator`, the operator's namespace: its DCGM exporter's Service
    (`nvidia-dcgm-exporter`, label `app: nvidia-dcgm-exporter`, port `gpu-metrics`) is scraped there by a
    ServiceMonitor of the pool. Default: `gpu-operator`."""

    device_plugin: NotRequired[DevicePluginSettings]
    """The NVIDIA device plugin, with `gpu_software: pool` only. Default: each field's default."""

    overprovisioning_replicas: NotRequired[int]
    """Low-priority placeholder pods holding a GPU each, evicted the moment a workload needs the GPU: warm
    spare nodes that cut cold starts, 0-100. Default: `0`."""

    overprovisioning_image: NotRequired[str]
    """Image of the placeholder pods, pinned: they only hold a GPU, so the pause image (it must run as its
    nobody user, 65535). Default: `registry.k8s.io/pause:3.10`."""

    dcgm_exporter: NotRequired[bool]
    """Run NVIDIA's DCGM exporter DaemonSet (with a ServiceMonitor) for GPU metrics, with the counters Monitoring's
    GPU health rules read (its `dcgm_metrics`) turned on; with `gpu_software: pool` only. Default: `false`."""

    dcgm_exporter_image: NotRequired[str]
    """DCGM exporter image, pinned. Default: `nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless`."""

    labels: NotRequired[dict[str, str]]
    """Labels every object of the pool carries (never used in selectors). Default: none."""

    image_digests: NotRequired[dict[str, str]]
    """Digest of each image tag that must run by digest (`<image>@<digest>`); an image not listed runs by tag.
    Default: none."""

    kube_version: NotRequired[str]
    """The cluster's Kubernetes version (`v1.MINOR.PATCH`), where known: the cluster-autoscaler image follows its
    minor. Default: unknown, nothing checked."""

    metrics_namespace: NotRequired[pulumi.Input[str]]
    """Namespace Prometheus runs in: the only one admitted to the node agents' metrics port. Default: `monitoring`."""

    metrics_selector_labels: NotRequired[dict[str, str]]
    """Labels the Prometheus Operator selects ServiceMonitors by, put on the DCGM exporter's ServiceMonitor
    (kube-prometheus-stack selects `release: <its release name>`). Default: none."""

    scrape_interval: NotRequired[str]
    """How often Prometheus scrapes the DCGM exporter, e.g. `15s`. Default: Prometheus's global interval."""


def _named(pattern: str, what: str) -> Format:
    """A format whose values match `pattern` whole; `what` names it in the error."""

    def problem(value: str) -> str | None:
        return None if re.fullmatch(pattern, value) else f"must be {what}; got {excerpt(value)}"

    return Format(rule=problem)


INSTANCE_FAMILY = _named(r"[A-Za-z0-9]+", "an instance family such as g5, p4d or N (letters and digits)")
"""As the stack schema takes them (platform_config/gpu_pool.py): a Karpenter requirement's value."""
GPU_NAME = _named(r"[A-Za-z0-9-]+", "a GPU name such as a10g, l4 or A100 (letters, digits and '-')")

declare(
    Taint,
    key=Setting(format=LABEL_KEY_FORMAT),
    value=Setting(default="", format=LABEL_VALUE_FORMAT),
    effect=Setting(default=TAINT_EFFECTS[0], choices=TAINT_EFFECTS),
)
declare(
    KarpenterSettings,
    node_class_kind=Setting(default=NODE_CLASS_KINDS[0], choices=NODE_CLASS_KINDS),
    instance_families=Setting(default=[], format=INSTANCE_FAMILY),
    gpu_names=Setting(default=[], format=GPU_NAME),
    capacity_types=Setting(default=["on-demand"], choices=CAPACITY_TYPES),
    node_class=Setting(default="default", format=OBJECT_NAME),
    consolidate_after=Setting(default="10m", format=NODE_DELAY),
    expire_after=Setting(default="720h", format=NODE_LIFETIME),
)
declare(
    ClusterAutoscalerSettings,
    cloud_provider=Setting(choices=CLOUD_PROVIDERS),
    node_groups=Setting(min_items=1, min_length=1),
    image=Setting(default=f"{CLUSTER_AUTOSCALER}:{CLUSTER_AUTOSCALER_RELEASES[34]}", format=IMAGE),
    scale_down_delay_after_add=Setting(default="10m", format=NODE_DELAY),
    scale_down_delay_after_delete=Setting(default="2m", format=NODE_DELAY),
    scale_down_unneeded_time=Setting(default="10m", format=NODE_DELAY),
    service_account_annotations=Setting(default={}, keys=LABEL_KEY_FORMAT),
)
declare(
    DevicePluginSettings,
    image=Setting(default="nvcr.io/nvidia/k8s-device-plugin:v0.20.0", format=IMAGE),
    sharing=Setting(default=SHARING[0], choices=SHARING),
    time_slicing_replicas=Setting(default=4, minimum=2, maximum=64),
    mig_strategy=Setting(default=MIG_STRATEGIES[0], choices=MIG_STRATEGIES),
)
declare(
    GpuNodePoolArgs,
    workload_namespace=Setting(format=NAMESPACE),
    max_nodes=Setting(minimum=1, maximum=1000),
    gpus_per_node=Setting(default=1, minimum=1, maximum=16),
    # No single default: `pool_of` gives `max_nodes` to a static pool, 0 to the others (the docstring says so).
    min_nodes=Setting(minimum=0, maximum=1000),
    manage=Setting(default=True),
    resource_name=Setting(default=GPU_RESOURCES[0], choices=GPU_RESOURCES),
    node_labels=Setting(
        default={"triton-platform/gpu-pool": "inference"}, keys=LABEL_KEY_FORMAT, format=LABEL_VALUE_FORMAT
    ),
    taints=Setting(default=DEFAULT_TAINTS),
    autoscaler=Setting(default="static", choices=AUTOSCALERS),
    static_nodes=Setting(default=[], format=OBJECT_NAME, unique=True),
    gpu_software=Setting(default=GPU_SOFTWARE[0], choices=GPU_SOFTWARE),
    gpu_operator_namespace=Setting(default=GPU_OPERATOR_NAMESPACE, format=NAMESPACE),
    device_plugin=Setting(default={}),
    overprovisioning_replicas=Setting(default=0, minimum=0, maximum=100),
    overprovisioning_image=Setting(default="registry.k8s.io/pause:3.10", format=IMAGE),
    dcgm_exporter=Setting(default=False),
    dcgm_exporter_image=Setting(default="nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless", format=IMAGE),
    labels=Setting(default={}, keys=LABEL_KEY_FORMAT, format=LABEL_VALUE_FORMAT),
    image_digests=Setting(default={}, keys=IMAGE_TAG, format=IMAGE_DIGEST),
    metrics_namespace=Setting(default="monitoring", format=NAMESPACE),
    metrics_selector_labels=Setting(default={}, keys=LABEL_KEY_FORMAT, format=LABEL_VALUE_FORMAT),
    scrape_interval=Setting(format=SCRAPE_INTERVAL),
    kube_version=Setting(format=Format(KUBE_VERSION)),
)


def default_min_nodes(autoscaler: str, max_nodes: int) -> int:
    """`min_nodes` when it is not given: a static pool's size is fixed, so its minimum is its maximum; an
    autoscaled pool keeps no idle node."""
    return max_nodes if autoscaler == "static" else 0


def pool_of(name: str, args: GpuNodePoolArgs) -> GpuNodePoolArgs:
    """`args` checked against their declaration, each default applied (`min_nodes`'s by the autoscaler); every
    problem, if any, raised at once (`ArgsError`)."""
    problems = ArgProblems(COMPONENT, name, named_by(GpuNodePoolArgs))
    pool = cast(GpuNodePoolArgs, resolve_record(problems, (), args, GpuNodePoolArgs))
    if not isinstance(args, Mapping):
        problems.check()  # no Args at all: nothing to compare
    given: Mapping[str, Any] = args
    if "min_nodes" not in pool:
        pool["min_nodes"] = default_min_nodes(pool.get("autoscaler", "static"), pool.get("max_nodes", 1))
    pool_rules(problems, pool, given)
    _check_labels(problems, pool)
    if problems.clean(("gpu_software",)):
        _check_gpu_software(problems, pool, given)
    problems.check()
    return pool


def pool_rules(problems: ArgProblems, pool: GpuNodePoolArgs, given: Mapping[str, Any]) -> None:
    """The rules across the pool's own settings (`given`: as the user gave them): taints once each, the
    autoscaler's settings and only those, its workload identity, a NodePool that asks for GPUs, the node bounds."""
    _check_taints(problems, pool)
    if problems.clean(("autoscaler",)):
        _check_settings(problems, pool)
    autoscaler = pool.get("cluster_autoscaler")
    if isinstance(autoscaler, Mapping):
        # The identity it calls the cloud's node-group API with: of that cloud, in the form its webhook reads.
        identity_annotation_rules(
            problems,
            ("cluster_autoscaler", "service_account_annotations"),
            autoscaler.get("service_account_annotations", {}),
            autoscaler.get("cloud_provider") if problems.clean(("cluster_autoscaler", "cloud_provider")) else None,
        )
    _check_karpenter(problems, pool, given)
    if isinstance(autoscaler, Mapping) and problems.clean(("kube_version",), ("cluster_autoscaler", "image")):
        _match_autoscaler(problems, pool, autoscaler, given.get("cluster_autoscaler"))
    # The node bounds against each other and the mode, only where each is right itself.
    if problems.clean(("autoscaler",), ("max_nodes",), ("min_nodes",)):
        _check_bounds(problems, pool)


_MINOR = re.compile(r"v?1\.([0-9]+)(?:\.[0-9]+)?")
_IMAGE_MINOR = re.compile(r":v?1\.([0-9]+)\.[0-9]+[^/]*$")


def _match_autoscaler(
    problems: ArgProblems, pool: GpuNodePoolArgs, autoscaler: Mapping[str, Any], given: object
) -> None:
    """cluster-autoscaler of the cluster's minor (kubernetes/autoscaler README, "Releases": each release supports
    only its Kubernetes minor): the default follows the version, a hand-set image of another minor is refused."""
    version = pool.get("kube_version")
    found = _MINOR.fullmatch(version) if version else None
    if found is None:
        return
    minor, image = int(found.group(1)), str(autoscaler.get("image", ""))
    known = CLUSTER_AUTOSCALER_RELEASES.get(minor)
    if not (isinstance(given, Mapping) and "image" in given):
        if known is None:
            problems.add(
                ("cluster_autoscaler", "image"),
                f"not set, and no cluster-autoscaler release of Kubernetes 1.{minor} ({version}) is known here; "
                f"set it to a v1.{minor} release of {CLUSTER_AUTOSCALER}",
            )
        else:
            cast(dict[str, Any], autoscaler)["image"] = f"{CLUSTER_AUTOSCALER}:{known}"
        return
    tagged = _IMAGE_MINOR.search(image.split("@", 1)[0])
    if tagged is not None and int(tagged.group(1)) != minor:
        problems.add(
            ("cluster_autoscaler", "image"),
            f"{excerpt(image)} is cluster-autoscaler 1.{tagged.group(1)}, but the cluster runs Kubernetes 1.{minor} "
            f"({version}); a cluster-autoscaler release supports only its own minor: use a v1.{minor} release"
            + (f" (the default, {CLUSTER_AUTOSCALER}:{known})" if known else ""),
        )


def _check_taints(problems: ArgProblems, pool: GpuNodePoolArgs) -> None:
    """The API server takes a node's taints unique by key and effect (ValidateNodeSpec, validateNodeTaints)."""
    first: dict[tuple[str, str], int] = {}
    for i, taint in enumerate(pool.get("taints", [])):
        if not problems.clean(("taints", i)):
            continue
        pair = (taint["key"], taint["effect"])
        if pair in first:
            problems.add(
                ("taints", i),
                f"key {pair[0]!r} with effect {pair[1]!r} is taints[{first[pair]}]'s too; a node takes each key "
                "and effect once",
            )
        else:
            first[pair] = i


def _check_labels(problems: ArgProblems, pool: GpuNodePoolArgs) -> None:
    """The labels the component sets itself are not the user's to set."""
    for key in OWN_LABELS:
        if key in pool.get("labels", {}):
            problems.add(
                ("labels", key),
                "is a label the component sets itself on some of its objects; leave it out of labels",
            )


def _check_settings(problems: ArgProblems, pool: GpuNodePoolArgs) -> None:
    """The settings the pool's autoscaler mode needs, and those it refuses."""
    autoscaler = pool["autoscaler"]
    for mode, key in (("karpenter", "karpenter"), ("cluster-autoscaler", "cluster_autoscaler")):
        if autoscaler == mode and key not in pool:
            problems.add((key,), f"missing (required): autoscaler {mode!r} needs its settings")
        if autoscaler != mode and key in pool:
            problems.add((key,), f"applies only to autoscaler {mode!r}, not {autoscaler!r}")
    if autoscaler != "static" and pool["static_nodes"]:
        problems.add(("static_nodes",), f"applies only to autoscaler 'static', not {autoscaler!r}")


def _check_karpenter(problems: ArgProblems, pool: GpuNodePoolArgs, given: Mapping[str, Any]) -> None:
    """A NodePool must ask for GPU instances by family or GPU name."""
    karpenter = pool.get("karpenter")
    if karpenter is None or not isinstance(given.get("karpenter"), Mapping):
        return
    if problems.clean(("karpenter", "instance_families"), ("karpenter", "gpu_names")) and not (
        karpenter["instance_families"] or karpenter["gpu_names"]
    ):
        problems.add(
            ("karpenter",), "set instance_families or gpu_names: without one Karpenter may launch nodes without GPUs"
        )


def _check_gpu_software(problems: ArgProblems, pool: GpuNodePoolArgs, given: Mapping[str, Any]) -> None:
    """Settings that only the pool's own GPU software takes (`given`: the Args as the user gave them)."""
    software = pool["gpu_software"]
    if software != "pool":
        provider = "the GPU Operator" if software == "gpu-operator" else "the cloud"
        if given.get("device_plugin") is not None:
            problems.add(("device_plugin",), f"{provider} runs the device plugin (gpu_software {software!r})")
        if pool["dcgm_exporter"]:
            problems.add(
                ("dcgm_exporter",),
                f"true, but gpu_software is {software!r}: "
                + (
                    "the GPU Operator runs the DCGM exporter and the pool scrapes it; set false"
                    if software == "gpu-operator"
                    else "the cloud's nodes run no DCGM exporter of the pool's; set false"
                ),
            )
    if software != "gpu-operator" and given.get("gpu_operator_namespace") is not None:
        problems.add(("gpu_operator_namespace",), f"applies only to gpu_software 'gpu-operator', not {software!r}")


def _check_bounds(problems: ArgProblems, pool: GpuNodePoolArgs) -> None:
    """The node bounds: in order, and as the pool's autoscaler mode allows."""
    low, high, autoscaler = pool["min_nodes"], pool["max_nodes"], pool["autoscaler"]
    if low > high:
        problems.add(("min_nodes",), f"{low} is above max_nodes ({high}); it must be at most that")
    elif autoscaler == "karpenter" and low:
        problems.add(
            ("min_nodes",),
            f"{low}, but a Karpenter NodePool has no node minimum; set 0 and keep warm capacity with "
            "overprovisioning_replicas",
        )
    elif autoscaler == "static" and low != high:
        problems.add(("min_nodes",), f"{low}, but a static pool has a fixed size; set min_nodes = max_nodes ({high})")
