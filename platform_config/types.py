"""Field types every config section shares: names, durations, images, URLs, quantities, charts.

Each carries the rule of the software that consumes the value, with its source, so a section
module only names what its fields are.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import PurePath
from typing import Annotated, Any
from urllib.parse import urlsplit

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from platform_config.errors import excerpt
from platform_config.paths import PROJECT_ROOT
from triton_platform import kubernetes_values
from triton_platform.durations import PROM_DURATION, duration_seconds
from triton_platform.helm_chart import ChartSource

# The subset of Go's time.ParseDuration that Karpenter and the cluster-autoscaler are given.
GO_DURATION = r"^([0-9]+(s|m|h))+$"
GO_DURATION_OR_NEVER = r"^(([0-9]+(s|m|h))+|Never)$"
# Names as apimachinery validates them
# (https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go):
# IsDNS1123Label (namespaces), IsDNS1035Label (Services: a letter first), IsDNS1123Subdomain (most other objects).
DNS_LABEL = kubernetes_values.DNS_LABEL
DNS1035_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
# A host name (RFC 1123 section 2.1): a subdomain whose every label is 1-63 characters.
DNS_NAME = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$"
# Triton model directory names end up in URLs and metric labels.
MODEL_NAME = r"^[A-Za-z0-9_.-]+$"
# A Kubernetes resource quantity (apimachinery resource.Quantity, decimal and binary SI).
QUANTITY = kubernetes_values.QUANTITY
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
    """A model validator's finding about one of its keys, so the error names that key's path.

    `key` is the path below the model, dotted for a nested key (`simulation.gpuMemoryRatio`): keys are camelCase.
    """

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


def within(low: str, high: str, what: str) -> Any:
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
ScrapeInterval = Annotated[str, Field(pattern=PROM_DURATION), within("1s", "2m", "a scrape interval")]
AlertFor = Annotated[str, Field(pattern=PROM_DURATION), within("0s", "1d", "an alert's `for`")]
# Node lifecycle delays of Karpenter and the cluster-autoscaler.
NodeDelay = Annotated[str, Field(pattern=GO_DURATION), within("0s", "24h", "a node scale-down delay")]


def inside_project(kind: str, example: str) -> Any:
    """An AfterValidator for a path relative to the project root that stays inside it, links followed.

    The stack file is reviewed and versioned with the project: a path that leaves it makes what the
    stack does depend on one machine's files, which no review sees and no other checkout has.
    `kind` ("folder", "file") and `example` word the message.
    """

    def check(path: str) -> str:
        if PurePath(path).is_absolute():
            raise ValueError(
                f"{excerpt(path)} is an absolute path; give a {kind} relative to the project root, inside it, "
                f"e.g. {example}"
            )
        try:
            resolved = (PROJECT_ROOT / path).resolve()
        except (RuntimeError, OSError):
            # Python 3.11's resolve() raises RuntimeError on a symlink loop (3.13's OSError).
            raise ValueError(f"{excerpt(path)} is a symlink loop; give a {kind} inside the project root") from None
        if resolved == PROJECT_ROOT:
            raise ValueError(f"{excerpt(path)} is the project root itself; give a {kind} inside it, e.g. {example}")
        if not resolved.is_relative_to(PROJECT_ROOT):
            raise ValueError(
                f"{excerpt(path)} leads outside the project (to {resolved}); give a {kind} inside the project root, "
                f"e.g. {example}"
            )
        return path

    return AfterValidator(check)


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


Quantity = Annotated[str, Field(pattern=QUANTITY)]
LabelKey = Annotated[str, Field(pattern=LABEL_KEY, max_length=253)]
LabelValue = Annotated[str, Field(pattern=LABEL_VALUE, max_length=63)]
Labels = dict[LabelKey, LabelValue]
ObjectName = Annotated[str, Field(pattern=DNS_SUBDOMAIN, max_length=253)]
"""The name of an object whose kind takes DNS-1123 subdomains: Secrets, claims, StorageClasses, Nodes, classes."""


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

    def source(self) -> ChartSource:
        """The chart as components take it: a folder as an absolute path."""
        if self.path is not None:
            return {"version": self.version, "path": str((PROJECT_ROOT / self.path).resolve()), "values": self.values}
        return {"version": self.version, "repository": self.repository, "values": self.values}

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
