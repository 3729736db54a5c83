"""`GpuNodePoolArgs`, what a user gives `GpuNodePool`, and `Pool`, what its builders read once it is checked.

The Args are plain, flat and typed: Pulumi infers the component's schema from them, so they may come from
any Pulumi language as JSON (whole numbers as floats, optional keys absent). `pool_of` applies the
defaults and checks every rule, raising all problems at once. No `from __future__ import annotations` here:
the schema is read from the annotations as objects.
"""

import re
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

import pulumi

from triton_platform.arg_problems import ArgProblems

AUTOSCALERS = ("static", "karpenter", "cluster-autoscaler", "external")
GPU_SOFTWARE = ("pool", "cloud", "gpu-operator")
NODE_CLASS_KINDS = ("EC2NodeClass", "AKSNodeClass")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
CAPACITY_TYPES = ("on-demand", "spot", "reserved")
CLOUD_PROVIDERS = ("aws", "gce", "azure")
SHARING = ("none", "time-slicing", "mig")
MIG_STRATEGIES = ("single",)
GPU_RESOURCES = ("nvidia.com/gpu",)
GO_DURATION = re.compile(r"([0-9]+(s|m|h))+")
"""A Go duration as Karpenter and the cluster-autoscaler parse them, in whole hours, minutes and seconds."""


class Taint(TypedDict):
    """A taint of the pool's nodes; GPU pods get the matching toleration (`GpuNodePool.placement`)."""

    key: str
    """Taint key, e.g. `nvidia.com/gpu`. Required."""

    value: NotRequired[str]
    """Taint value. Default: empty (pods tolerate the key with any value)."""

    effect: NotRequired[str]
    """What the taint does to pods that do not tolerate it: `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    Default `NoSchedule`."""


DEFAULT_TAINTS: list[Taint] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


class KarpenterSettings(TypedDict):
    """A Karpenter `karpenter.sh/v1` NodePool for the GPU nodes, on AWS (EC2NodeClass) or Azure (AKSNodeClass)."""

    node_class_kind: NotRequired[str]
    """The provider's node class: `EC2NodeClass` (`karpenter.k8s.aws`, Karpenter on AWS) or `AKSNodeClass`
    (`karpenter.azure.com`, AKS node auto-provisioning). It also picks the provider's instance labels below.
    Default `EC2NodeClass`."""

    instance_families: NotRequired[list[str]]
    """Instance families, e.g. `g5`, `p4d` on AWS (`karpenter.k8s.aws/instance-family`), `N` on Azure
    (`karpenter.azure.com/sku-family`). Default: none; set this or `gpu_names`, or Karpenter may launch nodes
    without GPUs."""

    gpu_names: NotRequired[list[str]]
    """GPU models, e.g. `a10g`, `l4` on AWS (`karpenter.k8s.aws/instance-gpu-name`), `A100` on Azure
    (`karpenter.azure.com/sku-gpu-name`). Default: none; set this or `instance_families`."""

    capacity_types: NotRequired[list[str]]
    """`karpenter.sh/capacity-type` values the pool may launch: `on-demand`, `spot`, `reserved`.
    Default `["on-demand"]`."""

    node_class: NotRequired[str]
    """Name of the node class (of `node_class_kind`) the nodes use. Default `default`."""

    consolidate_after: NotRequired[str]
    """How long a node must be empty before Karpenter removes it (the NodePool's `disruption.consolidateAfter`),
    a Go duration. Default `10m`, cluster-autoscaler's default `--scale-down-unneeded-time`."""

    expire_after: NotRequired[str]
    """Node lifetime before Karpenter replaces it (fresh AMIs), a Go duration; `Never` keeps nodes until they
    are empty. Default `720h`."""


class ClusterAutoscalerSettings(TypedDict):
    """The Kubernetes cluster-autoscaler, scaling existing node groups."""

    cloud_provider: str
    """`--cloud-provider`: `aws`, `gce` or `azure`. Required."""

    node_groups: list[str]
    """Node group names (ASG, MIG or VMSS), at least one; each is bounded by `min_nodes`-`max_nodes` (`--nodes`).
    Required."""

    image: NotRequired[str]
    """cluster-autoscaler image, pinned; match its minor version to the cluster's.
    Default `registry.k8s.io/autoscaling/cluster-autoscaler:v1.31.0`."""

    scale_down_delay_after_add: NotRequired[str]
    """`--scale-down-delay-after-add`, a Go duration. Default `10m`, cluster-autoscaler's own."""

    scale_down_delay_after_delete: NotRequired[str]
    """`--scale-down-delay-after-delete`, a Go duration. Default `2m`: cluster-autoscaler's own default is its
    scan interval (10s), and 2m lets the cluster settle after a removal before the next."""

    scale_down_unneeded_time: NotRequired[str]
    """`--scale-down-unneeded-time`, a Go duration. Default `10m`, cluster-autoscaler's own."""

    service_account_annotations: NotRequired[dict[str, str]]
    """Annotations of its ServiceAccount, e.g. `eks.amazonaws.com/role-arn` for the cloud API permissions.
    Default: none."""


class DevicePluginSettings(TypedDict):
    """The NVIDIA device plugin DaemonSet that advertises `nvidia.com/gpu`."""

    image: NotRequired[str]
    """Plugin image, pinned. Default `nvcr.io/nvidia/k8s-device-plugin:v0.17.0`."""

    sharing: NotRequired[str]
    """GPU sharing: `none`, `time-slicing` (small models share a GPU) or `mig` (large GPUs partitioned).
    Default `none`."""

    time_slicing_replicas: NotRequired[int]
    """With time-slicing, how many pods share each GPU, 2-64. Default 4."""

    mig_strategy: NotRequired[str]
    """With MIG, the plugin's strategy: `single` advertises identical MIG slices as `nvidia.com/gpu`, which GPU
    pods request (the only one allowed: `mixed` would advertise `nvidia.com/mig-*` resources instead).
    Default `single`."""


class GpuNodePoolArgs(TypedDict):
    """The GPU node pool: its nodes, node autoscaler, device plugin, spare capacity and GPU metrics."""

    workload_namespace: str
    """Namespace of the GPU workloads the pool serves. The spare-capacity placeholders run in it, and it
    prefixes the pool's cluster-scoped names (PriorityClasses `<ns>-batch` and `<ns>-overprovisioning`, the
    Karpenter NodePool `<ns>-gpu`, the ClusterRole `<ns>-cluster-autoscaler`), so that stacks sharing a
    cluster do not collide. Required."""

    max_nodes: int
    """Ceiling of the node autoscaler, 1-1000. With `gpus_per_node` it bounds how many GPUs the pool's
    workloads together may ask for. Required."""

    gpus_per_node: NotRequired[int]
    """Physical GPUs on each node, 1-16. With time-slicing the device plugin advertises each several times;
    Karpenter's limit counts advertised ones. Default 1."""

    min_nodes: NotRequired[int]
    """Nodes kept even when idle: the cluster-autoscaler's lower bound, at most `max_nodes`. Karpenter has no
    node minimum (must be 0; warm capacity comes from `overprovisioning_replicas`); a static pool's size is
    fixed (must equal `max_nodes`). Default 0."""

    manage: NotRequired[bool]
    """Create the cluster-level pool objects (the `gpu-system` namespace, device plugin, node autoscaler, DCGM
    exporter). Exactly one pool per cluster may; others set false and only use the pool. Default true."""

    resource_name: NotRequired[str]
    """Extended resource the NVIDIA device plugin advertises; only `nvidia.com/gpu`. Default `nvidia.com/gpu`."""

    node_labels: NotRequired[dict[str, str]]
    """Labels every node of the pool carries; GPU pods select on them (`placement.node_selector`).
    Default `{"triton-platform/gpu-pool": "inference"}`."""

    taints: NotRequired[list[Taint]]
    """Taints of the pool's nodes, which keep other workloads off the GPUs; GPU pods tolerate them.
    Default: one, `nvidia.com/gpu=present:NoSchedule`."""

    autoscaler: NotRequired[str]
    """Node autoscaling: `karpenter` (a Karpenter NodePool, settings in `karpenter`), `cluster-autoscaler`
    (settings in `cluster_autoscaler`), `external` (the cloud scales the node pool: GKE node-pool autoscaling
    or a ComputeClass, AKS's managed cluster autoscaler; nothing in-cluster, `min_nodes`-`max_nodes` state its
    bounds) or `static` (a fixed pool of existing nodes). Default `static`."""

    karpenter: NotRequired[KarpenterSettings]
    """The NodePool, for autoscaler `karpenter` (required there, refused otherwise). Default: unset."""

    cluster_autoscaler: NotRequired[ClusterAutoscalerSettings]
    """The autoscaler, for `cluster-autoscaler` (required there, refused otherwise). Default: unset."""

    static_nodes: NotRequired[list[str]]
    """For autoscaler `static` only: existing nodes to label and taint (NodePatch). Default: none, the nodes
    already carry `node_labels` and `taints`."""

    gpu_software: NotRequired[str]
    """Who runs the GPU node software: `pool` (this component: NVIDIA's device plugin, and the DCGM exporter
    with `dcgm_exporter`), `cloud` (the cloud installs the driver and device plugin, as GKE does; no in-cluster
    DCGM exporter) or `gpu-operator` (the NVIDIA GPU Operator runs both; the pool scrapes its exporter, see
    `gpu_operator_namespace`). Default `pool`."""

    gpu_operator_namespace: NotRequired[str]
    """With `gpu_software: gpu-operator`, the operator's namespace: its DCGM exporter's Service
    (`nvidia-dcgm-exporter`, label `app: nvidia-dcgm-exporter`, port `gpu-metrics`) is scraped there by a
    ServiceMonitor of the pool. Default `gpu-operator`."""

    device_plugin: NotRequired[DevicePluginSettings]
    """The NVIDIA device plugin, with `gpu_software: pool` only. Default: each of its defaults."""

    overprovisioning_replicas: NotRequired[int]
    """Low-priority placeholder pods holding a GPU each, evicted the moment a workload needs the GPU: warm
    spare nodes that cut cold starts, 0-100. Default 0."""

    overprovisioning_image: NotRequired[str]
    """Image of the placeholder pods, pinned: they only hold a GPU, so the pause image (it must run as its
    nobody user, 65535). Default `registry.k8s.io/pause:3.10`."""

    dcgm_exporter: NotRequired[bool]
    """Run NVIDIA's DCGM exporter DaemonSet (with a ServiceMonitor) for GPU metrics, with the counters Monitoring's
    GPU health rules read (its `dcgm_metrics`) turned on; with `gpu_software: pool` only. Default false."""

    dcgm_exporter_image: NotRequired[str]
    """DCGM exporter image, pinned. Default `nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04`."""

    labels: NotRequired[dict[str, str]]
    """Labels every object of the pool carries (never used in selectors). Default: none."""

    image_digests: NotRequired[dict[str, str]]
    """Digest of each image tag that must run by digest (`<image>@<digest>`). Default: none, images run by tag."""

    metrics_namespace: NotRequired[pulumi.Input[str]]
    """Namespace Prometheus runs in: the only one admitted to the node agents' metrics port. Default
    `monitoring`."""

    metrics_selector_labels: NotRequired[dict[str, str]]
    """Labels the Prometheus Operator selects ServiceMonitors by, put on the DCGM exporter's ServiceMonitor
    (kube-prometheus-stack selects `release: <its release name>`). Default: none."""

    scrape_interval: NotRequired[str]
    """How often Prometheus scrapes the DCGM exporter, e.g. `15s`. Default: Prometheus's global interval."""


@dataclass(frozen=True)
class NodeTaint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class Karpenter:
    node_class_kind: str
    instance_families: tuple[str, ...]
    gpu_names: tuple[str, ...]
    capacity_types: tuple[str, ...]
    node_class: str
    consolidate_after: str
    expire_after: str


@dataclass(frozen=True)
class ClusterAutoscaler:
    cloud_provider: str
    node_groups: tuple[str, ...]
    image: str
    scale_down_delay_after_add: str
    scale_down_delay_after_delete: str
    scale_down_unneeded_time: str
    service_account_annotations: dict[str, str]


@dataclass(frozen=True)
class DevicePlugin:
    image: str
    sharing: str
    time_slicing_replicas: int
    mig_strategy: str


@dataclass(frozen=True)
class Pool:
    """`GpuNodePoolArgs` checked, each default applied."""

    workload_namespace: str
    max_nodes: int
    gpus_per_node: int
    min_nodes: int
    manage: bool
    resource_name: str
    node_labels: dict[str, str]
    taints: tuple[NodeTaint, ...]
    autoscaler: str
    karpenter: Karpenter | None
    cluster_autoscaler: ClusterAutoscaler | None
    static_nodes: tuple[str, ...]
    gpu_software: str
    gpu_operator_namespace: str
    device_plugin: DevicePlugin
    overprovisioning_replicas: int
    overprovisioning_image: str
    dcgm_exporter: bool
    dcgm_exporter_image: str
    labels: dict[str, str]
    image_digests: dict[str, str]
    metrics_namespace: pulumi.Input[str]
    metrics_selector_labels: dict[str, str]
    scrape_interval: str | None

    @property
    def max_gpus(self) -> int:
        return self.max_nodes * self.gpus_per_node


def pool_of(name: str, args: GpuNodePoolArgs) -> Pool:
    """The pool `args` describe, each default applied; every problem, if any, raised at once (`ArgsError`)."""
    problems = ArgProblems("GpuNodePool", name)
    problems.unknown_keys("", args, GpuNodePoolArgs)
    max_nodes = problems.required("", args, "max_nodes")
    max_nodes = 1 if max_nodes is None else problems.integer("max_nodes", max_nodes, minimum=1, maximum=1000)
    min_nodes = problems.integer("min_nodes", args.get("min_nodes", 0), minimum=0, maximum=1000)
    # The rules between the node bounds and the mode, only on bounds and a mode that are right themselves.
    bounds_known = not problems.problems
    mode_known = args.get("autoscaler", "static") in AUTOSCALERS
    karpenter = args.get("karpenter")
    cluster_autoscaler = args.get("cluster_autoscaler")
    pool = Pool(
        workload_namespace=problems.required("", args, "workload_namespace") or "",
        max_nodes=max_nodes,
        gpus_per_node=problems.integer("gpus_per_node", args.get("gpus_per_node", 1), minimum=1, maximum=16),
        min_nodes=min_nodes,
        manage=args.get("manage", True),
        resource_name=problems.choice("resource_name", args.get("resource_name", GPU_RESOURCES[0]), GPU_RESOURCES),
        node_labels=dict(args.get("node_labels", {"triton-platform/gpu-pool": "inference"})),
        taints=_taints(problems, args.get("taints", DEFAULT_TAINTS)),
        autoscaler=problems.choice("autoscaler", args.get("autoscaler", "static"), AUTOSCALERS),
        karpenter=None if karpenter is None else _karpenter(problems, karpenter),
        cluster_autoscaler=None if cluster_autoscaler is None else _cluster_autoscaler(problems, cluster_autoscaler),
        static_nodes=tuple(args.get("static_nodes", ())),
        gpu_software=problems.choice("gpu_software", args.get("gpu_software", "pool"), GPU_SOFTWARE),
        gpu_operator_namespace=args.get("gpu_operator_namespace", "gpu-operator"),
        device_plugin=_device_plugin(problems, args.get("device_plugin", {})),
        overprovisioning_replicas=problems.integer(
            "overprovisioning_replicas", args.get("overprovisioning_replicas", 0), minimum=0, maximum=100
        ),
        overprovisioning_image=args.get("overprovisioning_image", "registry.k8s.io/pause:3.10"),
        dcgm_exporter=args.get("dcgm_exporter", False),
        dcgm_exporter_image=args.get("dcgm_exporter_image", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04"),
        labels=dict(args.get("labels", {})),
        image_digests=dict(args.get("image_digests", {})),
        metrics_namespace=args.get("metrics_namespace", "monitoring"),
        metrics_selector_labels=dict(args.get("metrics_selector_labels", {})),
        scrape_interval=args.get("scrape_interval"),
    )
    if mode_known:
        _check_settings(problems, pool)
    _check_gpu_software(problems, pool, args)
    if mode_known and bounds_known:
        _check_bounds(problems, pool)
    problems.check()
    return pool


def _taints(problems: ArgProblems, taints: list[Taint]) -> tuple[NodeTaint, ...]:
    return tuple(
        NodeTaint(
            key=problems.required(f"taints[{i}]", taint, "key") or "",
            value=taint.get("value", ""),
            effect=problems.choice(f"taints[{i}].effect", taint.get("effect", "NoSchedule"), TAINT_EFFECTS),
        )
        for i, taint in enumerate(taints)
    )


def _karpenter(problems: ArgProblems, settings: KarpenterSettings) -> Karpenter:
    karpenter = Karpenter(
        node_class_kind=problems.choice(
            "karpenter.node_class_kind", settings.get("node_class_kind", NODE_CLASS_KINDS[0]), NODE_CLASS_KINDS
        ),
        instance_families=tuple(settings.get("instance_families", ())),
        gpu_names=tuple(settings.get("gpu_names", ())),
        capacity_types=tuple(
            problems.choice(f"karpenter.capacity_types[{i}]", capacity, CAPACITY_TYPES)
            for i, capacity in enumerate(settings.get("capacity_types", ["on-demand"]))
        ),
        node_class=settings.get("node_class", "default"),
        consolidate_after=_duration(problems, "karpenter.consolidate_after", settings.get("consolidate_after", "10m")),
        expire_after=_duration(problems, "karpenter.expire_after", settings.get("expire_after", "720h"), never=True),
    )
    if not karpenter.instance_families and not karpenter.gpu_names:
        problems.add(
            "karpenter", "set instance_families or gpu_names: without one Karpenter may launch nodes without GPUs"
        )
    return karpenter


def _cluster_autoscaler(problems: ArgProblems, settings: ClusterAutoscalerSettings) -> ClusterAutoscaler:
    path = "cluster_autoscaler"
    provider = problems.required(path, settings, "cloud_provider")
    groups = problems.required(path, settings, "node_groups")
    if groups is not None and not groups:
        problems.add(f"{path}.node_groups", "empty; name at least one node group")
    return ClusterAutoscaler(
        cloud_provider="" if provider is None else problems.choice(f"{path}.cloud_provider", provider, CLOUD_PROVIDERS),
        node_groups=tuple(groups or ()),
        image=settings.get("image", "registry.k8s.io/autoscaling/cluster-autoscaler:v1.31.0"),
        scale_down_delay_after_add=_duration(
            problems, f"{path}.scale_down_delay_after_add", settings.get("scale_down_delay_after_add", "10m")
        ),
        scale_down_delay_after_delete=_duration(
            problems, f"{path}.scale_down_delay_after_delete", settings.get("scale_down_delay_after_delete", "2m")
        ),
        scale_down_unneeded_time=_duration(
            problems, f"{path}.scale_down_unneeded_time", settings.get("scale_down_unneeded_time", "10m")
        ),
        service_account_annotations=dict(settings.get("service_account_annotations", {})),
    )


def _device_plugin(problems: ArgProblems, settings: DevicePluginSettings) -> DevicePlugin:
    return DevicePlugin(
        image=settings.get("image", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
        sharing=problems.choice("device_plugin.sharing", settings.get("sharing", "none"), SHARING),
        time_slicing_replicas=problems.integer(
            "device_plugin.time_slicing_replicas", settings.get("time_slicing_replicas", 4), minimum=2, maximum=64
        ),
        mig_strategy=problems.choice(
            "device_plugin.mig_strategy", settings.get("mig_strategy", "single"), MIG_STRATEGIES
        ),
    )


def _duration(problems: ArgProblems, path: str, value: Any, *, never: bool = False) -> str:
    """`value` if it is a Go duration (or, with `never`, Karpenter's `Never`); the problem recorded otherwise."""
    if not (isinstance(value, str) and (GO_DURATION.fullmatch(value) or (never and value == "Never"))):
        problems.add(path, f"{value!r} is not a Go duration such as {'720h or Never' if never else '10m or 1h30m'}")
    return str(value)


def _check_settings(problems: ArgProblems, pool: Pool) -> None:
    """The settings the pool's autoscaler mode needs, and those it refuses."""
    for mode, key, settings in (
        ("karpenter", "karpenter", pool.karpenter),
        ("cluster-autoscaler", "cluster_autoscaler", pool.cluster_autoscaler),
    ):
        if pool.autoscaler == mode and settings is None:
            problems.add(key, f"missing (required): autoscaler {mode!r} needs its settings")
        if pool.autoscaler != mode and settings is not None:
            problems.add(key, f"applies only to autoscaler {mode!r}, not {pool.autoscaler!r}")
    if pool.autoscaler != "static" and pool.static_nodes:
        problems.add("static_nodes", f"applies only to autoscaler 'static', not {pool.autoscaler!r}")


def _check_gpu_software(problems: ArgProblems, pool: Pool, args: GpuNodePoolArgs) -> None:
    """Settings that only the pool's own GPU software takes."""
    if pool.gpu_software != "pool":
        provider = "the GPU Operator" if pool.gpu_software == "gpu-operator" else "the cloud"
        if "device_plugin" in args:
            problems.add("device_plugin", f"{provider} runs the device plugin (gpu_software {pool.gpu_software!r})")
        if pool.dcgm_exporter:
            problems.add(
                "dcgm_exporter",
                f"true, but gpu_software is {pool.gpu_software!r}: "
                + (
                    "the GPU Operator runs the DCGM exporter and the pool scrapes it; set false"
                    if pool.gpu_software == "gpu-operator"
                    else "the cloud's nodes run no DCGM exporter of the pool's; set false"
                ),
            )
    if pool.gpu_software != "gpu-operator" and "gpu_operator_namespace" in args:
        problems.add(
            "gpu_operator_namespace", f"applies only to gpu_software 'gpu-operator', not {pool.gpu_software!r}"
        )


def _check_bounds(problems: ArgProblems, pool: Pool) -> None:
    """The node bounds: in order, and as the pool's autoscaler mode allows."""
    if pool.min_nodes > pool.max_nodes:
        problems.add("min_nodes", f"{pool.min_nodes} is above max_nodes ({pool.max_nodes}); it must be at most that")
    elif pool.autoscaler == "karpenter" and pool.min_nodes:
        problems.add(
            "min_nodes",
            f"{pool.min_nodes}, but a Karpenter NodePool has no node minimum; set 0 and keep warm capacity with "
            "overprovisioning_replicas",
        )
    elif pool.autoscaler == "static" and pool.min_nodes != pool.max_nodes:
        problems.add(
            "min_nodes",
            f"{pool.min_nodes}, but a static pool has a fixed size; set min_nodes = max_nodes ({pool.max_nodes})",
        )
