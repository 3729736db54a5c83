"""The typed stack configuration: one schema, every default in one place.

Each top-level section is one Pulumi config key in the ``triton-platform``
namespace (``triton-platform:serving`` and so on). Keys are camelCase like the
Kubernetes and KEDA objects they feed; unknown keys are errors, so a typo never
silently falls back to a default. Field docstrings are the config reference in
the README (``python -m platform_config.reference``).
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import PurePath
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from model_repository.store import SCHEMES, StoreUri, parse_store_uri
from platform_config.errors import excerpt
from platform_config.paths import PROJECT_ROOT
from policy.rules import POLICY_NAMES

PROJECT = "triton-platform"

# A Prometheus duration such as 30s, 5m or 1h30m: units largest first, each at most once
# (https://github.com/prometheus/common/blob/main/model/time.go, ParseDuration).
PROM_DURATION = r"^(?:[0-9]+y)?(?:[0-9]+w)?(?:[0-9]+d)?(?:[0-9]+h)?(?:[0-9]+m)?(?:[0-9]+s)?(?:[0-9]+ms)?$"
# The subset of Go's time.ParseDuration that Karpenter and the cluster-autoscaler are given.
GO_DURATION = r"^([0-9]+(s|m|h))+$"
GO_DURATION_OR_NEVER = r"^(([0-9]+(s|m|h))+|Never)$"
# Names as apimachinery validates them
# (https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go):
# IsDNS1123Label (namespaces), IsDNS1035Label (Services: a letter first), IsDNS1123Subdomain (most other objects).
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1035_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
# A host name (RFC 1123 section 2.1): a subdomain whose every label is 1-63 characters.
DNS_NAME = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$"
# Triton model directory names end up in URLs and metric labels.
MODEL_NAME = r"^[A-Za-z0-9_.-]+$"
# A Kubernetes resource quantity (apimachinery resource.Quantity, decimal and binary SI).
QUANTITY = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
# Label keys and values (apimachinery IsQualifiedName/IsValidLabelValue: optional subdomain prefix, 63-char name).
LABEL_KEY = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"
# An object's kind, e.g. Deployment (CamelCase by API convention).
KIND = r"^[A-Z][A-Za-z0-9]*$"

# The image reference grammar of https://github.com/distribution/reference/blob/main/regexp.go:
# [domain[:port]/]path[:tag][@digest]. \w is spelled out: Go's is ASCII-only, Python's and Rust's are not.
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
IMAGE_REFERENCE = (
    rf"^(?:(?P<domain>{_DOMAIN})/)?(?P<path>{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$"
)
IMAGE_PATH_MAX = 255
"""distribution/reference's RepositoryNameTotalLengthMax: the path after the registry, at most 255 characters."""
SHA256_DIGEST = r"^sha256:[0-9a-f]{64}$"
"""The only digest a pin may use: what registries serve and `crane digest` prints (go-digest's sha256 form)."""

# Largest values of the protobuf fields config.pbtxt settings land in
# (https://github.com/triton-inference-server/common/blob/main/protobuf/model_config.proto).
INT32_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


PATTERN_NAMES = {
    PROM_DURATION: "a Prometheus duration such as 30s, 5m or 1h30m",
    GO_DURATION: "a duration such as 90s, 10m or 1h30m (units h, m, s)",
    GO_DURATION_OR_NEVER: "a duration such as 720h (units h, m, s), or Never",
    DNS_LABEL: "a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with a letter or digit)",
    DNS1035_LABEL: "a lowercase RFC 1035 label (a-z, 0-9 and '-', starting with a letter, ending with a letter or digit)",
    DNS_SUBDOMAIN: "a lowercase RFC 1123 subdomain (labels of a-z, 0-9 and '-', each starting and ending with a letter or digit, joined by single dots)",
    DNS_NAME: "a lowercase DNS name (RFC 1123: labels of 1-63 a-z, 0-9 and '-', each starting and ending with a letter or digit, joined by single dots)",
    MODEL_NAME: "a model folder name (letters, digits, '_', '.' and '-')",
    QUANTITY: "a Kubernetes quantity such as 500m, 4, 8Gi",
    LABEL_KEY: "a Kubernetes label key such as example.com/pool",
    LABEL_VALUE: "a Kubernetes label value (up to 63 letters, digits, '-', '_', '.')",
    KIND: "a Kubernetes kind in CamelCase, e.g. Service or Deployment",
    IMAGE_REFERENCE: "an image reference such as nvcr.io/nvidia/tritonserver:24.10-py3 (distribution/reference grammar: [registry/]repository[:tag][@digest], the repository in lowercase)",
}
"""What each pattern means, for error messages and the reference."""


class KeyProblemError(ValueError):
    """A model validator's finding about one of its keys, so the error names that key's path."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


class Strict(BaseModel):
    """Base for every config object: camelCase keys, unknown keys rejected, no coercion."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=False,
        extra="forbid",
        strict=True,
        frozen=True,
        use_attribute_docstrings=True,
        allow_inf_nan=False,
    )


def _image(image: str) -> re.Match[str]:
    """An image reference matched against the grammar; ValueError naming what is wrong."""
    found = re.fullmatch(IMAGE_REFERENCE, image)
    if found is None:
        raise ValueError(f"must be {PATTERN_NAMES[IMAGE_REFERENCE]}; got {excerpt(image)}")
    if len(found["path"]) > IMAGE_PATH_MAX:
        raise ValueError(
            f"image {excerpt(image)} has a repository path of {len(found['path'])} characters; at most {IMAGE_PATH_MAX}"
        )
    return found


def _pinned_image(image: str) -> str:
    found = _image(image)
    digest, tag = found["digest"], found["tag"]
    if digest is not None:
        if not re.fullmatch(SHA256_DIGEST, digest):
            raise ValueError(
                f"image {excerpt(image)} has digest {excerpt(digest)}; pin a sha256 digest: @sha256: and 64 lowercase hex digits"
            )
        return image
    if tag is None:
        raise ValueError(
            f"image {excerpt(image)} has no tag; pin a version such as nvcr.io/nvidia/tritonserver:24.10-py3"
        )
    if tag == "latest":
        raise ValueError(f"image {excerpt(image)} uses 'latest'; pin a version tag or a digest")
    return image


def _tagged_image(image: str) -> str:
    found = _image(image)
    if found["tag"] is None or found["digest"] is not None:
        raise ValueError(
            "each key is an image as the stack names it, with its tag and without a digest, "
            "e.g. nvcr.io/nvidia/tritonserver:24.10-py3"
        )
    return image


Image = Annotated[str, Field(pattern=IMAGE_REFERENCE), AfterValidator(_pinned_image)]
"""A container image that cannot change under the stack: a tag other than `latest`, or a sha256 digest."""
ImageTag = Annotated[str, AfterValidator(_tagged_image)]
"""An image by its tag, as `imageDigests` keys name them."""
ImageDigest = Annotated[str, Field(pattern=SHA256_DIGEST)]

_DURATION_UNITS = {"y": 365 * 86400, "w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 0.001}


def duration_seconds(duration: str) -> float:
    """Seconds in a duration that matched PROM_DURATION or GO_DURATION, e.g. 1h30m."""
    return sum(int(n) * _DURATION_UNITS[unit] for n, unit in re.findall(r"([0-9]+)(ms|[ywdhms])", duration))


def _within(low: str, high: str, what: str) -> Any:
    """An AfterValidator bounding a duration; `what` names it in the message."""

    def check(duration: str) -> str:
        if duration == "Never":  # Karpenter's expireAfter: nodes stay until they are empty
            return duration
        if not duration:
            raise ValueError(f"'' is not a duration; {what} must be between {low} and {high}")
        seconds = duration_seconds(duration)
        if seconds < duration_seconds(low):
            raise ValueError(f"{excerpt(duration)} is below {low}; {what} must be between {low} and {high}")
        if seconds > duration_seconds(high):
            raise ValueError(f"{excerpt(duration)} is above {high}; {what} must be between {low} and {high}")
        return duration

    return AfterValidator(check)


# Prometheus marks a series stale 5m after its last sample and KEDA reads the queue gauge at an
# instant, so an interval near 5m leaves gaps; 2m still survives one missed scrape.
ScrapeInterval = Annotated[str, Field(pattern=PROM_DURATION), _within("1s", "2m", "a scrape interval")]
AlertFor = Annotated[str, Field(pattern=PROM_DURATION), _within("0s", "1d", "an alert's `for`")]
# Node lifecycle delays of Karpenter and the cluster-autoscaler.
NodeDelay = Annotated[str, Field(pattern=GO_DURATION), _within("0s", "24h", "a node scale-down delay")]


def _inside_project(path: str) -> str:
    if PurePath(path).is_absolute():
        raise ValueError(
            f"{excerpt(path)} is an absolute path; give a folder relative to the project root, inside it, e.g. rendered/dev"
        )
    resolved = (PROJECT_ROOT / path).resolve()
    if resolved == PROJECT_ROOT:
        raise ValueError(f"{excerpt(path)} is the project root itself; give a folder inside it, e.g. rendered/dev")
    if not resolved.is_relative_to(PROJECT_ROOT):
        raise ValueError(
            f"{excerpt(path)} leads outside the project (to {resolved}); give a folder inside the project root, "
            "e.g. rendered/dev"
        )
    return path


def _dns_host_url(url: str) -> str:
    """An http(s) URL whose host is a DNS name (RFC 1123) or an IP address, with a port that exists."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{excerpt(url)} has a port that is not a number from 0 to 65535") from None
    if port == 0:
        raise ValueError(f"{excerpt(url)} has port 0; give a port from 1 to 65535")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if len(host) > 253 or not re.fullmatch(DNS_NAME, host):
            raise ValueError(
                f"{excerpt(url)} has host {excerpt(host)}, which is neither {PATTERN_NAMES[DNS_NAME]} nor an IP address"
            ) from None
    return url


HttpUrl = Annotated[str, Field(pattern=r"^https?://"), AfterValidator(_dns_host_url)]
HttpsUrl = Annotated[str, Field(pattern=r"^https://"), AfterValidator(_dns_host_url)]

STACK_NAME = r"^[A-Za-z0-9_.-]+$"
STACK_NAME_MAX = 100
"""Pulumi's stack names: tokens.IsName (https://github.com/pulumi/pulumi/blob/master/sdk/go/common/tokens/names.go)
and the backends' 100-character limit (https://github.com/pulumi/pulumi/blob/master/pkg/backend/diy/store.go)."""


def stack_name_problem(name: str) -> str | None:
    """Why Pulumi would refuse `name` as a stack name (one from a `Pulumi.<name>.yaml` file included), or None."""
    rule = f"Pulumi stack names are 1-{STACK_NAME_MAX} letters, digits, '-', '_' and '.'"
    if not re.fullmatch(STACK_NAME, name):
        return f"stack name {excerpt(name)} has characters Pulumi does not allow; {rule}"
    if len(name) > STACK_NAME_MAX:
        return f"stack name {excerpt(name)} has {len(name)} characters; {rule}"
    return None


# Which apimachinery rule each kind's metadata.name follows; kinds not listed are DNS-1123 subdomains (253),
# custom resources included. Namespace: ValidateNamespaceName; Service: ValidateServiceName
# (https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/core/validation/validation.go);
# RBAC: ValidateRBACName, a path segment (https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/rbac/validation/validation.go).
_NAME_RULES: dict[str, tuple[str | None, int, str]] = {
    "Namespace": (
        DNS_LABEL,
        63,
        "DNS-1123 labels: up to 63 a-z, 0-9 and '-', starting and ending with a letter or digit",
    ),
    "Service": (
        DNS1035_LABEL,
        63,
        "DNS-1035 labels: up to 63 a-z, 0-9 and '-', starting with a letter, ending with a letter or digit",
    ),
    **dict.fromkeys(
        ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"),
        (None, 253, "path segments: up to 253 characters but '/' and '%', and not '.' or '..'"),
    ),
}
_SUBDOMAIN_RULE = (
    DNS_SUBDOMAIN,
    253,
    "DNS-1123 subdomains: up to 253 a-z, 0-9, '-' and '.', labels starting and ending with a letter or digit",
)


def object_name_problem(kind: str, name: str) -> str | None:
    """Why the API server would refuse `name` as the metadata.name of a `kind` object, or None."""
    pattern, limit, rule = _NAME_RULES.get(kind, _SUBDOMAIN_RULE)
    if pattern is None:
        valid = name not in (".", "..") and not any(c in name for c in "/%")
    else:
        valid = re.fullmatch(pattern, name) is not None
    if valid and 0 < len(name) <= limit:
        return None
    return f"{excerpt(name)} is not a valid {kind} name: {kind} names are {rule}"


NamespaceName = Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]
"""A Namespace's name: a DNS-1123 label."""


class KubernetesConfig(Strict):
    """Where the stack's objects go: a live cluster, or YAML files."""

    mode: Literal["deploy", "render"]
    """`deploy` applies to the cluster named by `context`; `render` writes manifests to `renderDir` and needs no cluster. Required: a stack never guesses its target. Production must deploy."""

    namespace: NamespaceName
    """Namespace for every namespaced object of the platform; created by the program with the Pod Security Standards `restricted` profile enforced."""

    context: str | None = None
    """kubeconfig context to deploy to. Required in `deploy` mode, so the active context is never used by accident."""

    kubeconfig: str | None = None
    """Path to a kubeconfig file for `deploy` mode. Unset: the provider's usual lookup (`KUBECONFIG`, then `~/.kube/config`), still pinned to `context`."""

    render_dir: Annotated[str, AfterValidator(_inside_project)] | None = None
    """Output folder for `render` mode, relative to the project root and inside it. Unset: `rendered/<stack>`."""

    kube_version: Annotated[str, Field(pattern=r"^v1\.[0-9]+\.[0-9]+$")] = "v1.34.0"
    """The Kubernetes version Helm charts are templated for in `render` mode (charts check it against their `kubeVersion`). In `deploy` mode the API server's own version is used and this key is refused."""

    @model_validator(mode="after")
    def _mode_fields(self) -> KubernetesConfig:
        if self.mode == "deploy" and not self.context:
            raise KeyProblemError(
                "context",
                "required key is missing: mode 'deploy' needs the kubeconfig context to deploy to "
                "(the active context is never used implicitly)",
            )
        if self.mode == "deploy" and self.render_dir is not None:
            raise KeyProblemError("renderDir", "applies only to mode 'render'; remove it or set mode: render")
        if self.mode == "deploy" and "kube_version" in self.model_fields_set:
            raise KeyProblemError(
                "kubeVersion",
                "applies only to mode 'render'; deploying, charts are templated for the API server's version",
            )
        for key, value in (("context", self.context), ("kubeconfig", self.kubeconfig)):
            if self.mode == "render" and value:
                raise KeyProblemError(
                    key,
                    f"{value!r} applies only to mode 'deploy'; render mode cannot be combined with a cluster connection",
                )
        return self


T = TypeVar("T")
Quantity = Annotated[str, Field(pattern=QUANTITY)]
LabelKey = Annotated[str, Field(pattern=LABEL_KEY, max_length=253)]
LabelValue = Annotated[str, Field(pattern=LABEL_VALUE, max_length=63)]
Labels = dict[LabelKey, LabelValue]
ObjectName = Annotated[str, Field(pattern=DNS_SUBDOMAIN, max_length=253)]
"""The name of an object whose kind takes DNS-1123 subdomains: Secrets, claims, StorageClasses, Nodes, classes."""

_QUANTITY_SCALE = {"m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_QUANTITY_SCALE.update({f"{p}i": 1024.0**n for n, p in enumerate("KMGTPE", start=1)})


def quantity_value(quantity: str) -> float:
    """A Kubernetes quantity string that matched QUANTITY, as a number."""
    number = quantity.rstrip("mkMGTPEi")
    return float(number) * _QUANTITY_SCALE[quantity[len(number) :]]


class Taint(Strict):
    """A node taint; Triton pods get the matching toleration."""

    key: LabelKey
    """Taint key."""

    value: LabelValue = ""
    """Taint value."""

    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"
    """What the taint does to pods that do not tolerate it."""


class KarpenterPool(Strict):
    """A Karpenter `karpenter.sh/v1` NodePool for the GPU nodes (AWS provider labels)."""

    instance_families: list[Annotated[str, Field(pattern=r"^[a-z0-9]+$")]] = []
    """EC2 instance families, e.g. `g5`, `p4d` (`karpenter.k8s.aws/instance-family`)."""

    gpu_names: list[Annotated[str, Field(pattern=r"^[a-z0-9-]+$")]] = []
    """GPU models, e.g. `a10g`, `l4` (`karpenter.k8s.aws/instance-gpu-name`). Set this or `instanceFamilies`."""

    capacity_types: list[Literal["on-demand", "spot", "reserved"]] = ["on-demand"]
    """`karpenter.sh/capacity-type` values the pool may launch."""

    node_class: ObjectName = "default"
    """Name of the EC2NodeClass (`karpenter.k8s.aws`) the nodes use."""

    consolidate_after: NodeDelay = "10m"
    """How long a node must be empty before Karpenter removes it (the seed: 10 minutes unneeded); 0s-24h."""

    expire_after: Annotated[str, Field(pattern=GO_DURATION_OR_NEVER), _within("1h", "8760h", "a node lifetime")] = (
        "720h"
    )
    """Node lifetime before Karpenter replaces it (fresh AMIs), 1h-8760h; `Never` keeps nodes until they are empty."""

    @model_validator(mode="after")
    def _identifies_gpus(self) -> KarpenterPool:
        if not self.instance_families and not self.gpu_names:
            raise ValueError("set instanceFamilies or gpuNames: without one Karpenter may launch nodes without GPUs")
        return self


class ClusterAutoscalerPool(Strict):
    """The Kubernetes cluster-autoscaler, scaling existing node groups."""

    cloud_provider: Literal["aws", "gce", "azure"]
    """`--cloud-provider`."""

    node_groups: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    """Node group names (ASG, MIG or VMSS); each is bounded by `minNodes`-`maxNodes` (`--nodes`)."""

    image: Image = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.31.0"
    """cluster-autoscaler image, pinned; match its minor version to the cluster's."""

    scale_down_delay_after_add: NodeDelay = "10m"
    """`--scale-down-delay-after-add` (the seed: 10m); 0s-24h."""

    scale_down_delay_after_delete: NodeDelay = "2m"
    """`--scale-down-delay-after-delete` (the seed: 2m); 0s-24h."""

    scale_down_unneeded_time: NodeDelay = "10m"
    """`--scale-down-unneeded-time` (the seed: 10m); 0s-24h."""

    service_account_annotations: dict[LabelKey, str] = {}
    """Annotations of its ServiceAccount, e.g. `eks.amazonaws.com/role-arn` for the cloud API permissions."""


class DevicePlugin(Strict):
    """The NVIDIA device plugin DaemonSet that advertises `nvidia.com/gpu`."""

    image: Image = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
    """Plugin image, pinned."""

    sharing: Literal["none", "time-slicing", "mig"] = "none"
    """GPU sharing: `time-slicing` lets small models share a GPU (dev); `mig` partitions large GPUs (production)."""

    time_slicing_replicas: Annotated[int, Field(ge=2, le=64)] = 4
    """With time-slicing, how many pods share each GPU."""

    mig_strategy: Literal["single"] = "single"
    """With MIG, the plugin's strategy: `single` advertises identical MIG slices as `nvidia.com/gpu`, which Triton pods request (`mixed` would advertise `nvidia.com/mig-*` resources instead)."""


class GpuPoolConfig(Strict):
    """The GPU node pool every Triton pod runs on."""

    gpus_per_node: Annotated[int, Field(ge=1, le=16)] = 1
    """Physical GPUs on each node of the pool. With time-slicing the device plugin advertises each several times; the capacity check counts physical GPUs (conservative), Karpenter's limit counts advertised ones."""

    min_nodes: Annotated[int, Field(ge=0, le=1000)] = 0
    """Nodes kept even when idle: the cluster-autoscaler's lower bound. Karpenter has no node minimum (must be 0; warm capacity comes from `replicas.min` and `overprovisioningReplicas`); a static pool's size is fixed (must equal `maxNodes`)."""

    manage: bool = True
    """Create the cluster-level pool objects (the `gpu-system` namespace, device plugin, node autoscaler, DCGM exporter). Exactly one stack per cluster may; others set false and only use the pool."""

    max_nodes: Annotated[int, Field(ge=1, le=1000)]
    """Ceiling of the node autoscaler. With `gpusPerNode` it bounds how many GPUs all Triton replicas together may ask for. Required."""

    resource_name: Literal["nvidia.com/gpu"] = "nvidia.com/gpu"
    """Extended resource the NVIDIA device plugin advertises."""

    node_labels: Labels = {"triton-platform/gpu-pool": "inference"}
    """Labels every node of the pool carries; Triton pods select on them."""

    taints: list[Taint] = [Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")]
    """Taints of the pool's nodes, which keep other workloads off the GPUs; Triton pods tolerate them."""

    autoscaler: Literal["karpenter", "cluster-autoscaler", "static"] = "static"
    """Node autoscaling: a Karpenter NodePool, the cluster-autoscaler, or a fixed pool of existing nodes."""

    karpenter: KarpenterPool | None = None
    """The NodePool, for autoscaler `karpenter`."""

    cluster_autoscaler: ClusterAutoscalerPool | None = None
    """The autoscaler, for `cluster-autoscaler`."""

    static_nodes: list[ObjectName] = []
    """For `static`: existing nodes to label and taint (NodePatch); empty if they already carry `nodeLabels` and `taints`."""

    device_plugin: DevicePlugin = DevicePlugin()
    """The NVIDIA device plugin."""

    overprovisioning_replicas: Annotated[int, Field(ge=0, le=100)] = 0
    """Low-priority placeholder pods holding a GPU each, evicted the moment Triton needs the GPU: warm spare nodes that cut cold starts."""

    dcgm_exporter: bool = False
    """Run NVIDIA's DCGM exporter DaemonSet (with a ServiceMonitor) for GPU metrics beyond Triton's own."""

    dcgm_exporter_image: Image = "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04"
    """DCGM exporter image, pinned."""

    overprovisioning_image: Image = "registry.k8s.io/pause:3.10"
    """Image of the `overprovisioningReplicas` placeholder pods, pinned: they only hold a GPU, so the pause image."""

    @model_validator(mode="after")
    def _node_bounds(self) -> GpuPoolConfig:
        if self.min_nodes > self.max_nodes:
            raise KeyProblemError(
                "minNodes", f"{self.min_nodes} is above maxNodes ({self.max_nodes}); minNodes must be <= maxNodes"
            )
        needs = {"karpenter": self.karpenter, "cluster-autoscaler": self.cluster_autoscaler}
        for mode, settings in needs.items():
            key = "karpenter" if mode == "karpenter" else "clusterAutoscaler"
            if self.autoscaler == mode and settings is None:
                raise KeyProblemError(key, f"required key is missing: autoscaler {mode!r} needs its settings")
            if self.autoscaler != mode and settings is not None:
                raise KeyProblemError(key, f"applies only to autoscaler {mode!r}, not {self.autoscaler!r}")
        if self.autoscaler != "static" and self.static_nodes:
            raise KeyProblemError("staticNodes", f"applies only to autoscaler 'static', not {self.autoscaler!r}")
        if self.autoscaler == "karpenter" and self.min_nodes:
            raise KeyProblemError(
                "minNodes",
                f"{self.min_nodes}, but a Karpenter NodePool has no node minimum; set 0 and keep warm capacity with "
                "the deployments' replicas.min or overprovisioningReplicas",
            )
        if self.autoscaler == "static" and self.min_nodes != self.max_nodes:
            raise KeyProblemError(
                "minNodes",
                f"{self.min_nodes}, but a static pool has a fixed size; set minNodes = maxNodes ({self.max_nodes})",
            )
        return self

    @property
    def max_gpus(self) -> int:
        return self.max_nodes * self.gpus_per_node


class ReplicaRange(Strict):
    """Replica bounds of one Triton Deployment."""

    min: Annotated[int, Field(ge=0, le=1000)]
    """Warm floor. 0 lets KEDA scale the deployment to zero (cold starts of 30-60 s on the first request)."""

    max: Annotated[int, Field(ge=1, le=1000)]
    """Ceiling for the autoscaler; with autoscaling disabled it must equal `min`."""

    @model_validator(mode="after")
    def _ordered(self) -> ReplicaRange:
        if self.min > self.max:
            raise KeyProblemError("min", f"{self.min} is above max ({self.max}); min must be <= max")
        return self


class QueuePolicy(Strict):
    """Triton `dynamic_batching.default_queue_policy`."""

    max_queue_size: Annotated[int, Field(ge=0, le=UINT32_MAX)] | None = None
    """Requests the model's queue holds before Triton rejects new ones; 0 means unbounded."""

    default_timeout_microseconds: Annotated[int, Field(ge=0, le=UINT64_MAX)] | None = None
    """How long a request may wait in the queue; 0 means no timeout. At most the p95 latency SLO: a request queued longer has missed it."""

    timeout_action: Literal["REJECT", "DELAY"] | None = None
    """What Triton does with a request that timed out in the queue."""

    allow_timeout_override: bool | None = None
    """Whether a request's own timeout may override `defaultTimeoutMicroseconds`."""


class DynamicBatching(Strict):
    """Triton `dynamic_batching`. Unset fields keep the model's base config.pbtxt."""

    max_queue_delay_microseconds: Annotated[int, Field(ge=0, le=10_000_000)] | None = None
    """How long the batcher waits to fill a batch; the latency it may add to each request."""

    preferred_batch_size: list[Annotated[int, Field(ge=1, le=INT32_MAX)]] | None = None
    """Batch sizes the batcher aims for. NVIDIA advises against them for most models; set them only for engines tuned to specific sizes."""

    default_queue_policy: QueuePolicy | None = None
    """Queue bound and timeout, so overload is rejected quickly instead of queueing without limit. With a single model instance, Triton 24.10's batcher then stalls requests for 500 ms at a time (`bench/batcher_stall.py`): give such a model 2 or more instances."""


class InstanceGroup(Strict):
    """Triton `instance_group`: model copies per replica."""

    count: Annotated[int, Field(ge=1, le=64)] | None = None
    """Model instances that run concurrently in each Triton replica; unset keeps the base config's count."""

    kind: Literal["KIND_GPU", "KIND_CPU", "KIND_AUTO"] | None = None
    """Where the instances run; unset keeps the base config's kind. KIND_AUTO uses the pod's GPU when it has one and the CPU otherwise, so one config serves the GPU pool and CPU-only test servers alike."""


class LatestVersions(Strict):
    """Serve the newest versions."""

    num_versions: Annotated[int, Field(ge=1, le=100)]
    """How many of the newest versions to serve."""


class AllVersions(Strict):
    """Serve every version folder."""


def listed_once(items: list[T], what: str) -> list[T]:
    """`items`, or a ValueError naming each one listed more than once."""
    duplicates = sorted({str(item) for item in items if items.count(item) > 1})
    if duplicates:
        raise ValueError(f"{what} listed twice: {', '.join(duplicates)}; list each once")
    return items


class SpecificVersions(Strict):
    """Serve exactly these versions."""

    versions: Annotated[list[Annotated[int, Field(ge=1, le=INT64_MAX)]], Field(min_length=1)]
    """Version folder numbers, each once; each must exist in the model repository."""

    @field_validator("versions")
    @classmethod
    def _unique_versions(cls, versions: list[int]) -> list[int]:
        return listed_once(versions, "versions")


class VersionPolicy(Strict):
    """Triton `version_policy`: exactly one of `latest`, `all`, `specific`."""

    latest: LatestVersions | None = None
    """The newest `numVersions` versions."""

    all: AllVersions | None = None
    """Every version (`all: {}`)."""

    specific: SpecificVersions | None = None
    """The listed versions."""

    @model_validator(mode="after")
    def _exactly_one(self) -> VersionPolicy:
        chosen = [k for k in ("latest", "all", "specific") if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError(f"set exactly one of latest, all, specific; got {chosen or 'none'}")
        return self


class Warmup(Strict):
    """Triton `model_warmup`: requests run at load, before the model reports ready."""

    batch_sizes: Annotated[list[Annotated[int, Field(ge=1, le=UINT32_MAX)]], Field(min_length=1)]
    """One warmup request per batch size, over every input of the model; each must be <= the model's max batch size."""

    data: Literal["zero", "random"] = "zero"
    """Input contents: zeros, or random values."""


class ModelSettings(Strict):
    """Per-environment settings for one model, laid over its base config.pbtxt. Unset fields keep the base value."""

    max_batch_size: Annotated[int, Field(ge=0, le=4096)] | None = None
    """Largest batch Triton forms; 0 turns batching off. It may lower the base config's max_batch_size, never raise it (the base states what the model supports); the defaults' value applies only to models whose base batches."""

    dynamic_batching: DynamicBatching | None = None
    """Dynamic batcher settings."""

    instance_group: InstanceGroup | None = None
    """Instances per replica."""

    version_policy: VersionPolicy | None = None
    """Which versions to serve. A model's own policy replaces the defaults' whole."""

    warmup: Warmup | None = None
    """Warm the model up at load, so the first real requests do not pay for lazy initialisation. A model's own warmup replaces the defaults' whole, and the base config's."""


class ComputeResources(Strict):
    """CPU and memory of the Triton container."""

    cpu: Quantity
    """CPU cores, e.g. `4` or `500m`."""

    memory: Quantity
    """Memory, e.g. `16Gi`."""


class ContainerResources(Strict):
    """Requests and limits of the Triton container (GPUs come from `gpusPerPod`)."""

    requests: ComputeResources = ComputeResources(cpu="2", memory="8Gi")
    """What the scheduler reserves."""

    limits: ComputeResources = ComputeResources(cpu="4", memory="8Gi")
    """The ceiling. A memory limit equal to the request avoids OOM kills under node pressure."""

    @model_validator(mode="after")
    def _limits_cover_requests(self) -> ContainerResources:
        for resource in ("cpu", "memory"):
            request, limit = getattr(self.requests, resource), getattr(self.limits, resource)
            if quantity_value(limit) < quantity_value(request):
                raise KeyProblemError(
                    "limits", f"{resource} limit {limit} is below its request {request}; limits must be >= requests"
                )
        return self


class DeploymentConfig(Strict):
    """One Triton Deployment and the models it serves."""

    models: Annotated[list[Annotated[str, Field(pattern=MODEL_NAME)]], Field(min_length=1)]
    """Model directories of `model_repo/` this deployment loads."""

    replicas: ReplicaRange
    """Replica range; KEDA scales within it."""

    gpus_per_pod: Annotated[int, Field(ge=1, le=16)] = 1
    """GPUs each Triton pod requests."""

    resources: ContainerResources = ContainerResources()
    """CPU and memory of each Triton pod."""

    @field_validator("models")
    @classmethod
    def _unique_models(cls, models: list[str]) -> list[str]:
        return listed_once(models, "models")


class PvcSource(Strict):
    """A PersistentVolumeClaim holding the model repository."""

    claim_name: ObjectName
    """Name of the claim."""

    create: bool = False
    """Create the claim (kept on `pulumi destroy`, protected in production) instead of using an existing one. A created claim starts empty, so it needs `origin`."""

    size: Quantity = "50Gi"
    """Requested size when `create` is true."""

    storage_class_name: ObjectName | None = None
    """StorageClass when `create` is true; unset uses the cluster default."""

    access_mode: Literal["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce"] = "ReadOnlyMany"
    """How pods mount it (Triton always read-only). With `origin`, the loader Job writes into it, so it must be ReadWriteMany (or ReadWriteOnce for a single replica); ReadWriteOnce cannot serve replicas on several nodes."""

    origin: str | None = None
    """`s3://bucket/prefix` or `gs://bucket/prefix` that `stackctl publish-models` publishes this stack's repository to (an S3 endpoint as `s3://https://host:port/bucket/prefix`). Set: before the Deployments roll, a Job copies `<origin>/<digest>/` into the claim's `repositories/<digest>/` and the pods mount that folder, so every model change rolls the pods. Credentials as for `s3`/`gcs` (`credentialsSecret`, else workload identity). Unset: the claim holds the version folders at its root, copied in by hand (see `revision`)."""

    loader_image: Image = "docker.io/rclone/rclone:1.60.1"
    """Image of the loader Job (rclone, the version the tests run), pinned."""

    @field_validator("origin")
    @classmethod
    def _origin_uri(cls, origin: str) -> str:
        source = "gcs" if origin.startswith("gs://") else "s3"
        if not origin.startswith(("s3://", "gs://")):
            raise ValueError(f"must be s3://<bucket>/<prefix> or gs://<bucket>/<prefix>; got {origin!r}")
        parse_store_uri(origin, source)
        return origin

    @model_validator(mode="after")
    def _fillable(self) -> PvcSource:
        if self.create and self.origin is None:
            raise KeyProblemError(
                "origin",
                "required key is missing: a claim the stack creates starts empty, and Triton would find no model; "
                "set pvc.origin to the s3:// or gs:// URI `stackctl publish-models` publishes to (a Job then "
                "fills the claim), or use an existing, filled claim (create: false)",
            )
        if self.origin is not None and self.access_mode == "ReadOnlyMany":
            raise KeyProblemError(
                "accessMode",
                "the loader Job writes the repository from pvc.origin into the claim, and ReadOnlyMany cannot be "
                "written; use ReadWriteMany (Triton still mounts it read-only)",
            )
        return self

    def store(self) -> StoreUri | None:
        """Where the loader copies from, parsed."""
        if self.origin is None:
            return None
        return parse_store_uri(self.origin, "gcs" if self.origin.startswith("gs://") else "s3")


class StoreEgress(Strict):
    """Addresses pods reading the object store may connect to: a NetworkPolicy names addresses, never host names."""

    cidr: str
    """An IPv4 or IPv6 network, e.g. `10.0.0.0/16` for a VPC endpoint or proxy, or `0.0.0.0/0` for any address."""

    ports: Annotated[list[Annotated[int, Field(ge=1, le=65535)]], Field(min_length=1)]
    """TCP ports on those addresses."""

    @field_validator("cidr")
    @classmethod
    def _network(cls, cidr: str) -> str:
        try:
            ipaddress.ip_network(cidr, strict=True)
        except ValueError as err:
            raise ValueError(f"{cidr!r} is not a network in CIDR form (e.g. 10.0.0.0/16): {err}") from None
        return cidr


class ModelRepositoryConfig(Strict):
    """Where Triton's pods get the model files."""

    source: Literal["bundled", "pvc", "s3", "gcs"]
    """`bundled`: the model files of `model_repo/` ship in a ConfigMap (small dev models only, up to 900 KiB). `pvc`: a PersistentVolumeClaim. `s3`/`gcs`: object storage; Triton reads `<uri>/<digest>`, what `stackctl publish-models` uploads."""

    pvc: PvcSource | None = None
    """The claim, for source `pvc`."""

    uri: str | None = None
    """`s3://bucket/prefix` or `gs://bucket/prefix`, for source `s3` or `gcs`; a private S3 endpoint as `s3://https://host:port/bucket/prefix`. Each published version lives under `<uri>/<digest>/`."""

    revision: Annotated[str, Field(min_length=1, max_length=63)] | None = None
    """Only for a claim filled by hand (source `pvc` without `pvc.origin`): label of its current contents. Pulumi cannot see those files: change this after copying new ones in and the pods roll to load them. Published repositories (s3, gcs, `pvc.origin`) are addressed by their content digest instead."""

    credentials_secret: ObjectName | None = None
    """Secret with the object-store credentials (for `s3`, `gcs` and the loader of `pvc.origin`): for S3 its keys become the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION); for GCS its `credentials.json` key is the service-account key. Unset: the pod's workload identity (see `serviceAccountAnnotations`)."""

    store_egress: list[StoreEgress] | None = None
    """Where Triton and the loader Job may connect to read the object store (s3, gcs, `pvc.origin`); every other destination but DNS is denied. Unset: any address, on the store's port only (443, or the private endpoint's), plus GKE's metadata server (169.254.169.254, port 80) for `gcs` without `credentialsSecret`. Narrow it to your VPC endpoint's or egress proxy's network, and add the workload-identity endpoint your cloud's credentials come from (a node-local metadata address) when no `credentialsSecret` is set."""

    @model_validator(mode="after")
    def _source_fields(self) -> ModelRepositoryConfig:
        if self.source == "pvc" and self.pvc is None:
            raise KeyProblemError("pvc", "required key is missing: source 'pvc' needs the claim (pvc.claimName)")
        if self.source != "pvc" and self.pvc is not None:
            raise KeyProblemError("pvc", f"applies only to source 'pvc', not {self.source!r}")
        scheme = SCHEMES.get(self.source)
        if scheme and self.uri is None:
            raise KeyProblemError("uri", f"source {self.source!r} needs uri {scheme}<bucket>/<prefix>; got None")
        if scheme and self.uri is not None:
            try:
                parse_store_uri(self.uri, self.source)
            except ValueError as err:
                raise KeyProblemError("uri", str(err)) from None
        elif self.uri is not None:
            raise KeyProblemError("uri", f"applies only to sources 's3' and 'gcs', not {self.source!r}")
        if self.credentials_secret is not None and self.store() is None:
            raise KeyProblemError(
                "credentialsSecret",
                f"applies only to sources 's3' and 'gcs' and to a pvc with origin, not {self.source!r}"
                + (" without pvc.origin" if self.source == "pvc" else ""),
            )
        if self.store_egress is not None and self.store() is None:
            raise KeyProblemError(
                "storeEgress", f"applies only to sources 's3' and 'gcs' and to a pvc with origin, not {self.source!r}"
            )
        if self.revision is not None and self.store() is not None:
            where = "pvc.origin" if self.source == "pvc" else f"source {self.source!r}"
            raise KeyProblemError(
                "revision",
                f"does not apply with {where}: the pods read the published repository under its content digest, "
                "so a model change rolls them by itself; remove revision and run `stackctl publish-models`",
            )
        if self.revision is not None and self.source == "bundled":
            raise KeyProblemError(
                "revision", "does not apply to source 'bundled': the bundled files roll the pods by content; remove it"
            )
        return self

    def store(self) -> StoreUri | None:
        """The object store the stack's repository is published to: the uri, or the claim's origin."""
        if self.source in SCHEMES and self.uri is not None:
            return parse_store_uri(self.uri, self.source)
        return self.pvc.store() if self.pvc is not None else None

    def egress(self) -> list[StoreEgress]:
        """`storeEgress`, or its default: any address on the store's port. Empty without an object store."""
        store = self.store()
        if store is None:
            return []
        if self.store_egress is not None:
            return self.store_egress
        rules = [StoreEgress(cidr=cidr, ports=[store.port]) for cidr in ("0.0.0.0/0", "::/0")]
        if store.backend == "gcs" and self.credentials_secret is None:
            # GKE workload identity: tokens come from the metadata server, metadata.google.internal on port 80
            # (cloud.google.com/compute/docs/metadata/querying-metadata).
            rules.append(StoreEgress(cidr="169.254.169.254/32", ports=[80]))
        return rules


class Drain(Strict):
    """Graceful shutdown: endpoints drain, then Triton finishes in-flight requests."""

    pre_stop_seconds: Annotated[int, Field(ge=0, le=300)] = 10
    """Sleep in preStop, so load balancers stop sending before Triton stops accepting."""

    exit_timeout_seconds: Annotated[int, Field(ge=1, le=3600)] = 30
    """Triton's `--exit-timeout-secs`: how long it waits for in-flight requests. terminationGracePeriodSeconds is preStop + this + 15 s."""


class IngressConfig(Strict):
    """Ingress for clients outside the cluster: one HTTP and one gRPC host per deployment."""

    enabled: bool = False
    """Create the Ingresses."""

    class_name: ObjectName = "nginx"
    """IngressClass; the gRPC Ingress uses ingress-nginx's `backend-protocol: GRPC` annotation."""

    base_domain: Annotated[str, Field(pattern=DNS_NAME, max_length=253)] | None = None
    """Hosts are `<deployment>.<baseDomain>` (HTTP) and `<deployment>-grpc.<baseDomain>` (gRPC). Required when enabled."""

    tls_secret_name: ObjectName | None = None
    """TLS certificate Secret. Required when enabled: gRPC through ingress-nginx needs HTTP/2, which needs TLS."""

    max_request_body: Quantity = "64m"
    """Largest request body the ingress passes (ingress-nginx `proxy-body-size`); its 1m default is too small for tensors."""

    controller_namespace: NamespaceName = "ingress-nginx"
    """Namespace of the ingress controller, which the NetworkPolicy admits to the inference ports."""

    @model_validator(mode="after")
    def _complete(self) -> IngressConfig:
        for key, value in (("baseDomain", self.base_domain), ("tlsSecretName", self.tls_secret_name)):
            if self.enabled and not value:
                raise KeyProblemError(key, "required key is missing: an enabled ingress needs it")
        return self


class InferenceClient(Strict):
    """Pods allowed to call the inference ports (8000, 8001)."""

    namespace: NamespaceName
    """Their namespace."""

    pod_labels: Labels = {}
    """Their labels; empty admits every pod of the namespace."""


class ServingConfig(Strict):
    """The Triton serving stack."""

    image: Image = "nvcr.io/nvidia/tritonserver:24.10-py3"
    """Triton image, pinned by tag or digest (`latest` and untagged images are rejected). The default runs Triton 2.51.0, the release the tests run."""

    p95_latency_slo_ms: Annotated[int, Field(ge=1, le=600_000)]
    """The environment's p95 request latency objective, in ms. Alerts fire above it, and no model's queue delay may exceed it. Required."""

    deployments: Annotated[
        dict[Annotated[str, Field(pattern=DNS_LABEL, max_length=40)], DeploymentConfig], Field(min_length=1)
    ]
    """Triton Deployments by name; each serves a set of models."""

    model_defaults: ModelSettings = ModelSettings()
    """Settings applied to every model they fit (ensembles take only maxBatchSize), under any per-model settings in `triton-platform:models`."""

    model_repository: ModelRepositoryConfig
    """Where the model files come from. Required."""

    inference_clients: list[InferenceClient] = []
    """Who may call Triton's HTTP and gRPC ports besides the ingress controller; the NetworkPolicy admits nobody else."""

    ingress: IngressConfig = IngressConfig()
    """External access."""

    startup_timeout_seconds: Annotated[int, Field(ge=30, le=7200)] = 600
    """How long Triton may take to load every model before the startup probe restarts it."""

    drain: Drain = Drain()
    """Graceful shutdown."""

    shm_size_limit: Quantity = "1Gi"
    """Size of the in-memory /dev/shm the Python backend uses for tensors."""

    tmp_size_limit: Quantity = "10Gi"
    """Size of /tmp, where Triton downloads object-storage models."""

    service_account_annotations: dict[LabelKey, str] = {}
    """Annotations of Triton's ServiceAccount, e.g. `eks.amazonaws.com/role-arn` or `iam.gke.io/gcp-service-account` for workload identity."""


ChartVersion = Annotated[str, Field(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")]
ChartRepository = Annotated[str, Field(pattern=r"^(https|oci)://")]


class HelmChart(Strict):
    """A pinned Helm chart, from its repository or from a local folder."""

    repository: ChartRepository
    """Chart repository URL."""

    version: ChartVersion
    """Exact chart version. With `path`, the folder's `Chart.yaml` must declare this version."""

    values: dict[str, Any] = {}
    """Chart values merged over the platform's own (maps merge key by key; anything else replaces). For what the platform does not set: resources, retention, storage, or turning off a subchart an offline mirror lacks. The result is previewed and policy-checked like every object."""

    path: str | None = None
    """A chart folder (unpacked, dependencies in its `charts/`), relative to the project root or absolute, used instead of `repository`: for air-gapped clusters and mirrors. Unset: the chart is fetched from `repository`."""

    @model_validator(mode="after")
    def _local_chart(self) -> HelmChart:
        if self.path is None:
            return self
        if "repository" in self.model_fields_set:
            raise KeyProblemError("path", "give either `repository` or `path`, not both")
        folder = PROJECT_ROOT / self.path
        manifest = folder / "Chart.yaml"
        if not manifest.is_file():
            raise KeyProblemError("path", f"{self.path!r} is not a chart folder: no Chart.yaml in {folder}")
        declared = (yaml.safe_load(manifest.read_text()) or {}).get("version")
        if str(declared) != self.version:
            raise KeyProblemError(
                "path", f"{self.path!r} holds chart version {declared}, but `version` pins {self.version}"
            )
        return self


class PrometheusStackChart(HelmChart):
    """The kube-prometheus-stack chart (prometheus-community/helm-charts)."""

    repository: ChartRepository = "https://prometheus-community.github.io/helm-charts"
    """Chart repository URL."""

    version: ChartVersion = "79.7.1"
    """Exact chart version. With `path`, the folder's `Chart.yaml` must declare this version."""


class KedaChart(HelmChart):
    """The KEDA chart (kedacore/charts)."""

    repository: ChartRepository = "https://kedacore.github.io/charts"
    """Chart repository URL."""

    version: ChartVersion = "2.20.2"
    """Exact chart version; 2.20.2 is the operator the local cluster's tests run. With `path`, the folder's `Chart.yaml` must declare this version."""


class ScalePolicy(Strict):
    """One direction of the HPA's `behavior`: how fast replicas may change."""

    stabilization_seconds: Annotated[int, Field(ge=0, le=3600)]
    """HPA `stabilizationWindowSeconds`: recommendations over this window are considered (max for down, min for up)."""

    percent: Annotated[int, Field(ge=1, le=1000)]
    """A `Percent` policy: change by up to this share of the current replicas per period."""

    pods: Annotated[int, Field(ge=1, le=1000)] | None = None
    """A `Pods` policy: change by up to this many pods per period. With both, the larger change wins (`selectPolicy: Max`)."""

    period_seconds: Annotated[int, Field(ge=1, le=1800)]
    """Length of a policy period (the HPA API allows 1-1800)."""


class Fallback(Strict):
    """What KEDA does when it cannot read the triggers (Prometheus down, a query error, a vanished series)."""

    failure_threshold: Annotated[int, Field(ge=1, le=100)] = 3
    """The fallback applies once more than this many consecutive metric reads failed (the HPA reads every 15 s)."""

    replicas: Annotated[int, Field(ge=1, le=1000)]
    """Replica count to hold; with `currentReplicasIfHigher` a deployment already above it stays where it is."""

    behavior: Literal["static", "currentReplicas", "currentReplicasIfHigher"] = "currentReplicasIfHigher"
    """KEDA fallback behavior; the default never scales down because metrics went missing."""


class KedaInstall(Strict):
    """Where KEDA comes from."""

    mode: Literal["install", "existing"] = "existing"
    """`install`: the pinned KEDA Helm chart into `namespace`, before any ScaledObject. `existing`: KEDA already runs."""

    namespace: NamespaceName = "keda"
    """KEDA's namespace."""

    chart: KedaChart = KedaChart()
    """The KEDA chart, for mode `install`."""


class PrometheusAuth(Strict):
    """Credentials KEDA sends to Prometheus, through a TriggerAuthentication."""

    mode: Literal["bearer", "basic"]
    """`bearer` reads key `bearerToken`; `basic` reads `username` and `password`."""

    secret_name: ObjectName
    """Secret in the platform namespace holding those keys."""


class SimulationConfig(Strict):
    """Inputs of `stackctl simulate` that the cluster, not the program, decides."""

    model: Annotated[str, Field(pattern=MODEL_NAME)] | None = None
    """Model whose batching and latency profile drive the simulation. Unset: the deployment's first model with a profile."""

    profile: str | None = None
    """Latency profile tau(b) of that model, a JSON file written by `bench/latency_profile.py`, relative to the project root. Unset: `bench/results/profiles/<model>.json`."""

    gpu_memory_ratio: Annotated[float, Field(ge=0, le=1)] | None = None
    """GPU memory used/total of one serving pod (its models' footprint; read it off the dashboard's GPU memory panel). Unset: the GPU-memory trigger is left out of the simulation."""

    node_provision_seconds: Annotated[int, Field(ge=0, le=3600)] = 120
    """Time for the autoscaler to bring up a GPU node (launch, boot, GPU driver, device plugin)."""

    pod_start_seconds: Annotated[int, Field(ge=1, le=3600)] = 60
    """Image pull, model load and first readiness of a pod on a node already up (seeds: 30-60 s)."""


ScalingSignal = Literal["busy-ratio", "queue-depth"]
"""The signals `scaling.signal` may name (components/scaling_signal.py queries them, simulator/signals.py models them)."""


class ScalingConfig(Strict):
    """KEDA autoscaling on Triton's Prometheus metrics."""

    enabled: bool = True
    """KEDA owns the replica count. When false, each deployment runs `replicas.min` replicas and `replicas.max` must equal it."""

    polling_interval_seconds: Annotated[int, Field(ge=1, le=3600)] = 30
    """KEDA `pollingInterval`: how often KEDA's own loop checks the triggers. That loop only scales between 0 and 1; above 1 the HPA (15 s sync) drives scaling, so with `replicas.min >= 1` it matters little."""

    signal: ScalingSignal = "busy-ratio"
    """The load trigger. `busy-ratio`: the share of time each pod's busiest model keeps its instances running batches, against `busyRatioTarget`; it measures overload, not the batcher's own waiting (bench/scaling_signals.py). `queue-depth`: pending requests per replica against `queueDepthTarget`, which with a batching delay rises with load long before saturation."""

    queue_depth_target: Annotated[float, Field(gt=0)] = 10.0
    """Pending requests per replica (`nv_inference_pending_request_count`) the `queue-depth` signal aims for."""

    busy_ratio_target: Annotated[float, Field(gt=0, le=1)] = 0.75
    """Share of time each model instance runs a batch that the `busy-ratio` signal aims for."""

    activation_queue_depth: Annotated[float, Field(ge=0)] = 0.0
    """KEDA `activationThreshold`: pending requests above which a deployment at zero wakes up. Inert while `replicas.min >= 1`, which autoscaling requires."""

    gpu_memory_ratio_target: Annotated[float, Field(gt=0, le=1)] = 0.8
    """GPU memory used/total per replica above which the autoscaler adds replicas. Set it above the idle footprint of the loaded models (dashboard: GPU memory), or the deployment sits at `replicas.max`."""

    prometheus_address: HttpUrl | None = None
    """Prometheus URL KEDA queries. Unset: `http://prometheus-operated.<monitoring.prometheus.namespace>.svc:9090`, the operator's Service."""

    prometheus_auth: PrometheusAuth | None = None
    """Credentials for Prometheus, if it needs them."""

    fallback: Fallback | None = None
    """Behaviour when the metrics cannot be read. Required in production."""

    scale_up: ScalePolicy = ScalePolicy.model_validate(
        {"stabilizationSeconds": 0, "percent": 100, "pods": 3, "periodSeconds": 30}
    )
    """How fast to add replicas (the seed: 100% or 3 pods per 30 s, whichever is more, no stabilization)."""

    scale_down: ScalePolicy = ScalePolicy.model_validate(
        {"stabilizationSeconds": 300, "percent": 25, "periodSeconds": 60}
    )
    """How fast to remove replicas (the seed: 25% per 60 s after a 300 s window)."""

    paused: bool = False
    """Pause autoscaling for maintenance (`autoscaling.keda.sh/paused`); replicas stay where they are."""

    paused_replicas: Annotated[int, Field(ge=0, le=1000)] | None = None
    """Pause at this replica count (`autoscaling.keda.sh/paused-replicas`), for maintenance; it must fit every deployment's range."""

    keda: KedaInstall = KedaInstall()
    """Where KEDA comes from."""

    simulation: SimulationConfig = SimulationConfig()
    """Cluster timings and the model profile `stackctl simulate` uses for this stack."""

    @model_validator(mode="after")
    def _targets_of_the_signal(self) -> ScalingConfig:
        # A target the chosen signal never reads would look tuned while doing nothing.
        unread = {
            "busy-ratio": {"queue_depth_target": "queueDepthTarget", "activation_queue_depth": "activationQueueDepth"},
            "queue-depth": {"busy_ratio_target": "busyRatioTarget"},
        }[self.signal]
        given = [key for field, key in unread.items() if field in self.model_fields_set]
        if given:
            raise ValueError(
                f"{' and '.join(given)} {'are' if len(given) > 1 else 'is'} only read by another signal; "
                f"signal {self.signal!r} reads {'busyRatioTarget' if self.signal == 'busy-ratio' else 'queueDepthTarget'}"
                f": remove {' and '.join(given)} or set signal"
            )
        return self


class AlertsConfig(Strict):
    """Alert thresholds and how long a condition must last before it fires (`for:`)."""

    latency_for: AlertFor = "5m"
    """How long p95 latency must stay above the SLO."""

    queue_time_ms: Annotated[float, Field(gt=0)] = 20.0
    """Average queue time per request above which the queue alert fires, in ms."""

    queue_time_for: AlertFor = "5m"
    """How long the queue time must stay above `queueTimeMs`."""

    failure_ratio: Annotated[float, Field(gt=0, lt=1)] = 0.01
    """Failed/total inference requests above which the failure alert fires."""

    failure_for: AlertFor = "5m"
    """How long the failure ratio must stay above `failureRatio`."""

    gpu_memory_ratio: Annotated[float, Field(gt=0, le=1)] = 0.8
    """GPU memory used/total above which the GPU memory alert fires."""

    gpu_memory_for: AlertFor = "10m"
    """How long GPU memory must stay above `gpuMemoryRatio`."""

    gpu_utilization_low: Annotated[float, Field(gt=0, lt=1)] = 0.3
    """GPU utilization below which the cost alert fires."""

    gpu_utilization_low_for: AlertFor = "2h"
    """How long utilization must stay below `gpuUtilizationLow`."""

    backlog_at_max_for: AlertFor = "10m"
    """How long the scaling signal may stay above its target (`scaling.busyRatioTarget` or `queueDepthTarget`) while a deployment runs at `replicas.max`."""

    replicas_unavailable_for: AlertFor = "10m"
    """How long a deployment may have fewer available replicas than desired."""

    model_missing_for: AlertFor = "10m"
    """How long a configured model may report no metrics (not loaded) while its deployment is scraped."""

    target_down_for: AlertFor = "5m"
    """How long a Triton metrics endpoint may be unreachable."""

    keda_errors_for: AlertFor = "5m"
    """How long KEDA may fail to read a trigger (its fallback replicas apply meanwhile)."""


class PrometheusPeer(Strict):
    """The Prometheus that scrapes Triton; the NetworkPolicy admits it to the metrics port."""

    namespace: NamespaceName = "monitoring"
    """Its namespace."""

    pod_labels: Labels = {"app.kubernetes.io/name": "prometheus"}
    """Its pod labels."""


class SecretRef(Strict):
    """A key of an existing Kubernetes Secret in the platform namespace."""

    name: ObjectName
    """Secret name."""

    key: Annotated[str, Field(pattern=r"^[-._a-zA-Z0-9]+$")]
    """Key in the Secret."""


class Credential(Strict):
    """A receiver credential: a Pulumi secret value (`secure:` in the stack file), or an existing Secret's key."""

    value: str | None = None
    """The credential itself; must be a Pulumi secret (`pulumi config set --secret --path ...`), never plain text."""

    secret: SecretRef | None = None
    """Or: where an existing Secret holds it."""

    @model_validator(mode="after")
    def _exactly_one(self) -> Credential:
        if (self.value is None) == (self.secret is None):
            raise ValueError("set exactly one of value (a Pulumi secret) and secret (an existing Secret's key)")
        return self


class SlackReceiver(Strict):
    """Slack incoming webhook."""

    webhook_url: Credential
    """The webhook URL."""

    channel: Annotated[str, Field(min_length=1)]
    """Channel, e.g. `#ml-alerts`."""


class PagerDutyReceiver(Strict):
    """PagerDuty Events API v2."""

    routing_key: Credential
    """The integration's routing key."""


class WebhookReceiver(Strict):
    """A generic webhook."""

    url: Credential
    """The URL to POST alerts to."""


class Receiver(Strict):
    """Where Alertmanager sends a class of alerts: one or more integrations."""

    slack: SlackReceiver | None = None
    """Post to Slack."""

    pagerduty: PagerDutyReceiver | None = None
    """Page through PagerDuty."""

    webhook: WebhookReceiver | None = None
    """POST to a webhook."""

    @model_validator(mode="after")
    def _has_integration(self) -> Receiver:
        if not (self.slack or self.pagerduty or self.webhook):
            raise ValueError("a receiver needs at least one of slack, pagerduty, webhook")
        return self


Severity = Literal["critical", "warning", "info"]


class MonitoringConfig(Strict):
    """Prometheus scraping, rules, Alertmanager routing and Grafana dashboards."""

    mode: Literal["install", "existing"] = "existing"
    """`install`: the kube-prometheus-stack chart, pinned, in `prometheus.namespace`. `existing`: an operator already runs; only the platform's ServiceMonitor, rules, routing and dashboards are created."""

    chart: PrometheusStackChart = PrometheusStackChart()
    """The chart, for mode `install`."""

    prometheus: PrometheusPeer = PrometheusPeer()
    """Which Prometheus scrapes Triton."""

    selector_labels: Labels = {"release": "kube-prometheus-stack"}
    """Labels the Prometheus Operator selects ServiceMonitors, rules and AlertmanagerConfigs by (kube-prometheus-stack's `release` label)."""

    receivers: dict[Annotated[str, Field(pattern=DNS_LABEL, max_length=63)], Receiver] = {}
    """Alertmanager receivers by name."""

    routes: dict[Severity, Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]] = {}
    """Receiver for each severity; a severity without one is dropped (dev)."""

    runbook_base_url: HttpsUrl = "https://github.com/triton-platform/triton-platform/blob/main/docs/runbooks.md"
    """Every alert's runbook_url is this plus `#<alert name in lower case>`."""

    grafana_folder: Annotated[str, Field(min_length=1)] = "Triton"
    """Grafana folder the dashboards land in (sidecar annotation)."""

    scrape_interval: ScrapeInterval = "15s"
    """How often Prometheus scrapes Triton's metrics port; 1s-2m (Prometheus marks a series stale 5m after its last sample)."""

    alerts: AlertsConfig = AlertsConfig()
    """Alert thresholds; each `...For` duration is 0s-1d."""


Environment = Literal["dev", "staging", "production"]


def _stated_reason(reason: str) -> str:
    # min_length alone counts spaces: a reason must say something, since every preview prints it.
    if not reason.strip():
        raise ValueError(f"{excerpt(reason)} is blank; say why this object may break the rule (at least 20 characters)")
    if len(reason.strip()) < 20:
        raise ValueError(
            f"{excerpt(reason)} has {len(reason.strip())} characters besides surrounding whitespace; "
            "say why this object may break the rule in at least 20"
        )
    return reason


class PolicyException(Strict):
    """One object allowed to break one rule of the policy pack (`policy/`), with the reason on record."""

    policy: Literal[POLICY_NAMES]  # type: ignore[valid-type]
    """The policy's name, as in the README's policy table."""

    kind: Annotated[str, Field(pattern=KIND, max_length=63)]
    """Kind of the object, e.g. `Service`."""

    name: Annotated[str, Field(min_length=1, max_length=253)]
    """`metadata.name` of the object, valid for its kind; it must be an object the stack creates (`stackctl synth` lists them)."""

    reason: Annotated[str, Field(min_length=20), AfterValidator(_stated_reason)]
    """Why this object may break the rule (at least 20 characters besides surrounding whitespace); every preview prints it."""

    @model_validator(mode="after")
    def _name_fits_kind(self) -> PolicyException:
        problem = object_name_problem(self.kind, self.name)
        if problem:
            raise KeyProblemError("name", problem)
        return self


class PlatformConfig(Strict):
    """A whole stack's configuration: one attribute per `triton-platform:<key>`."""

    environment: Environment
    """Tier of the stack. Production gets the strictest checks: it must deploy, never render. Required."""

    kubernetes: KubernetesConfig
    """Kubernetes provider target. Required."""

    gpu_pool: GpuPoolConfig
    """GPU node pool. Required."""

    serving: ServingConfig
    """Triton deployments. Required."""

    models: dict[Annotated[str, Field(pattern=MODEL_NAME)], ModelSettings] = {}
    """Per-model settings by model directory name; each overrides `serving.modelDefaults`."""

    scaling: ScalingConfig = ScalingConfig()
    """Autoscaling."""

    monitoring: MonitoringConfig = MonitoringConfig()
    """Monitoring and alert thresholds."""

    image_digests: dict[ImageTag, ImageDigest] = {}
    """What each image tag of the stack resolves to, e.g. `nvcr.io/nvidia/tritonserver:24.10-py3: sha256:<64 hex>` (`crane digest <image>` or `docker buildx imagetools inspect <image>` prints it; take the multi-arch index digest). Every image listed runs as `<image>@<digest>`, so a re-pushed tag cannot change what runs. Production needs one for every image it runs (`stackctl validate` names each missing one); dev and staging may run tags."""

    policy_exceptions: list[PolicyException] = []
    """Objects exempt from a policy-pack rule, each with its reason. Explicit and visible: every preview with `--policy-pack policy` lists them as advisory notes."""


def pinned(image: str, digests: dict[str, str]) -> str:
    """`image` as it should run: `<image>@<digest>` when `imageDigests` lists its tag."""
    return f"{image}@{digests[image]}" if image in digests else image


def section_key(field_name: str) -> str:
    """The Pulumi config key of a top-level section, e.g. ``triton-platform:gpuPool``."""
    return f"{PROJECT}:{to_camel(field_name)}"


SECTION_KEYS: dict[str, str] = {section_key(name): name for name in PlatformConfig.model_fields}
