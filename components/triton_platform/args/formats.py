"""The formats of values the components put into manifests, each with the rule of the software that consumes
it and its source: the one owner of these facts, for the components' Args and the stack schema alike.

A `Format` names itself in errors (`must be <what>; got <value>`), so a value is refused with the same words
whether it came from the stack file, Python, YAML or TypeScript.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import unicodedata
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from triton_platform.args import kubernetes_values
from triton_platform.args.durations import PROM_DURATION, duration_seconds
from triton_platform.args.excerpts import excerpt

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
# Annotation keys are qualified names too (ValidateAnnotations).
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

# Helm charts: an exact SemVer version, from an https or OCI repository (helm.sh/docs/topics/registries).
CHART_VERSION = r"^[0-9]+\.[0-9]+\.[0-9]+$"
CHART_REPOSITORY = r"^(https|oci)://"
URL = r"^https?://"
SECURE_URL = r"^https://"
# A Kubernetes version as Helm's --kube-version takes it (helm.sh/helm/v3 pkg/chartutil/capabilities.go).
KUBE_VERSION = r"^v?[0-9]+\.[0-9]+(\.[0-9]+)?$"

# A time of day, 24-hour: what a cron `minute hour` pair can say (KEDA's cron trigger, robfig/cron's 5-field parser).
CLOCK_TIME = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"

# A managed identity's client ID is a GUID, which Azure prints in lower case and takes in either
# (https://learn.microsoft.com/en-us/azure/aks/workload-identity-overview; the webhook hands it on as AZURE_CLIENT_ID).
UUID = r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"
# A Google service account's email: an account ID of 6-30 characters in a project of 6-30
# (https://cloud.google.com/iam/docs/service-accounts-create).
GCP_SERVICE_ACCOUNT_EMAIL = r"^[a-z][a-z0-9-]{4,28}[a-z0-9]@[a-z][a-z0-9-]{4,28}[a-z0-9]\.iam\.gserviceaccount\.com$"

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
    SHA256_DIGEST: "a sha256 digest: sha256: and 64 lowercase hex digits",
    URL: "an http:// or https:// URL",
    SECURE_URL: "an https:// URL",
    CHART_VERSION: "an exact chart version such as 2.20.2",
    CHART_REPOSITORY: "a chart repository URL starting https:// or oci://",
    KUBE_VERSION: "a Kubernetes version such as v1.34.0",
    CLOCK_TIME: "a 24-hour time of day HH:MM such as 06:30",
    UUID: "a managed identity's client ID, a UUID such as 0b1f5d63-7c1a-4f5e-9d2b-3a4c5e6f7a8b",
    GCP_SERVICE_ACCOUNT_EMAIL: "a Google service account email, <name>@<project>.iam.gserviceaccount.com",
    IMAGE_REFERENCE: "an image reference such as nvcr.io/nvidia/tritonserver:24.10-py3 (distribution/reference grammar: [registry/]repository[:tag][@digest], the repository in lowercase)",
}
"""What each pattern means, for error messages and the reference."""


def pattern_matches(pattern: str, value: str) -> bool:
    """Whether `value` matches `pattern` as pydantic's Rust engine matches the same pattern in the stack schema: a
    final `$` at the end of the text only, where Python's `$` also matches before a final newline."""
    if re.search(pattern, value) is None:
        return False
    return not (pattern.endswith("$") and value.endswith("\n"))


@dataclass(frozen=True)
class Format:
    """A string format: a pattern with its meaning, a length bound, and any rule a pattern cannot state."""

    pattern: str | None = None
    max_length: int | None = None
    rule: Callable[[str], str | None] | None = None
    """The problem with a value that matched the pattern, or None."""

    def problem(self, value: str) -> str | None:
        """Why `value` is not of this format, or None."""
        # Searched, as pydantic applies a `pattern`: the anchors are in the patterns that need them.
        if self.pattern is not None and not pattern_matches(self.pattern, value):
            return (
                f"must be {PATTERN_NAMES.get(self.pattern, f'a string matching {self.pattern}')}; got {excerpt(value)}"
            )
        if self.max_length is not None and len(value) > self.max_length:
            return f"{excerpt(value)} has {len(value)} characters; at most {self.max_length}"
        return None if self.rule is None else self.rule(value)


def image_problem(image: str) -> str | None:
    """Why `image` is not an image reference (distribution/reference), or None."""
    found = re.fullmatch(IMAGE_REFERENCE, image)
    if found is None:
        return f"must be {PATTERN_NAMES[IMAGE_REFERENCE]}; got {excerpt(image)}"
    if len(found["path"]) > IMAGE_PATH_MAX:
        return (
            f"image {excerpt(image)} has a repository path of {len(found['path'])} characters; at most {IMAGE_PATH_MAX}"
        )
    return None


def pinned_image_problem(image: str) -> str | None:
    """Why `image` could change under a stack (no tag, `latest`, a digest not sha256), or None."""
    problem = image_problem(image)
    if problem is not None:
        return problem
    found = re.fullmatch(IMAGE_REFERENCE, image)
    assert found is not None
    digest, tag = found["digest"], found["tag"]
    if digest is not None:
        if not re.fullmatch(SHA256_DIGEST, digest):
            return f"image {excerpt(image)} has digest {excerpt(digest)}; pin a sha256 digest: @sha256: and 64 lowercase hex digits"
        return None
    if tag is None:
        return f"image {excerpt(image)} has no tag; pin a version such as nvcr.io/nvidia/tritonserver:24.10-py3"
    if tag == "latest":
        return f"image {excerpt(image)} uses 'latest'; pin a version tag or a digest"
    return None


def tagged_image_problem(image: str) -> str | None:
    """Why `image` is not an image named by its tag alone (as image-digest keys name them), or None."""
    problem = image_problem(image)
    if problem is not None:
        return problem
    found = re.fullmatch(IMAGE_REFERENCE, image)
    assert found is not None
    if found["tag"] is None or found["digest"] is not None:
        return (
            f"{excerpt(image)} is not an image named by its tag without a digest, as the images are named where "
            "they are set, e.g. nvcr.io/nvidia/tritonserver:24.10-py3"
        )
    return None


def url_host_problem(url: str) -> str | None:
    """Why `url`'s host is neither a DNS name (RFC 1123) nor an IP address, or its port does not exist; or None."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:
        return f"{excerpt(url)} has a port that is not a number from 0 to 65535"
    if port == 0:
        return f"{excerpt(url)} has port 0; give a port from 1 to 65535"
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if len(host) > 253 or not re.fullmatch(DNS_NAME, host):
            return (
                f"{excerpt(url)} has host {excerpt(host)}, which is neither {PATTERN_NAMES[DNS_NAME]} nor an IP address"
            )
    return None


def runbook_base_problem(url: str) -> str | None:
    """Why `url` cannot be the page every alert's runbook link is made from (prometheus_alert.runbook_link), or None.

    A link is the page with the alert's anchor as its fragment (RFC 3986 section 3.5: one fragment, after the one
    '#'), so a base with a fragment of its own would make links with two; a query is kept in each link as it is.
    """
    parts = urlsplit(url)
    if parts.fragment or url.endswith("#"):
        return (
            f"{excerpt(url)} has a fragment, {excerpt('#' + parts.fragment)}; each alert's runbook link sets its own "
            f"(#<alert name in lower case>), so give the page without one, e.g. "
            f"{excerpt(urlunsplit(parts._replace(fragment='')))}"
        )
    return url_host_problem(url)


def network_problem(cidr: str) -> str | None:
    """Why `cidr` is not an IPv4 or IPv6 network in CIDR form, or None."""
    try:
        ipaddress.ip_network(cidr, strict=True)
    except ValueError as err:
        return f"{excerpt(cidr)} is not a network in CIDR form (e.g. 10.0.0.0/16): {err}"
    return None


@functools.cache
def _time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def time_zone_problem(name: str) -> str | None:
    """Why `name` is not an IANA time zone (what Go's time.LoadLocation, which KEDA's cron trigger calls, reads),
    or None. Where this machine has no time zone database, the name's form alone is checked."""
    known = _time_zones()
    if known and name not in known:
        return f"{excerpt(name)} is not an IANA time zone name such as UTC or Europe/Berlin"
    if not known and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*", name):
        return f"{excerpt(name)} is not an IANA time zone name such as UTC or Europe/Berlin"
    return None


def volume_size_problem(size: str) -> str | None:
    """Why `size`, a quantity, is no volume's size, or None: the API server refuses a claim of 0 (and a fraction of
    a byte is no size), so a volume is at least 1Mi."""
    if kubernetes_values.quantity_value(size) < 2**20:
        return f"{excerpt(size)} is below 1Mi; a volume holds at least 1Mi (the API server refuses a claim of 0)"
    return None


def prometheus_volume_problem(size: str) -> str | None:
    """Why `size` is too small for Prometheus' volume, or None: its `retentionSize` is 85% of the volume in whole
    GiB (prometheus_storage.retention_size), which below 2Gi is `0GB`, and Prometheus reads 0 as no size limit."""
    problem = volume_size_problem(size)
    if problem is None and kubernetes_values.quantity_value(size) < 2 * 2**30:
        return (
            f"{excerpt(size)} is below 2Gi: Prometheus' retentionSize, 85% of the volume in whole GiB, would be 0GB, "
            "which Prometheus reads as no limit, so the volume would fill and scraping stop"
        )
    return problem


def priority_class_problem(name: str) -> str | None:
    """Why `name` may not name a PriorityClass the platform creates, or None: the API server reserves `system-`
    (kubernetes pkg/apis/scheduling/validation, ValidatePriorityClass: only Kubernetes' own classes start so)."""
    if name.startswith("system-"):
        return (
            f"{excerpt(name)} starts with 'system-', which the API server reserves for Kubernetes' own classes "
            "(system-cluster-critical, system-node-critical); choose another name"
        )
    return None


def duration_within(low: str, high: str, what: str) -> Callable[[str], str | None]:
    """A rule bounding a duration that matched its pattern; `what` names it in the message. `Never` passes
    (Karpenter's expireAfter: nodes stay until they are empty)."""

    def problem(duration: str) -> str | None:
        if duration == "Never":
            return None
        if not duration:
            return f"'' is not a duration; {what} must be between {low} and {high}"
        seconds = duration_seconds(duration)
        if seconds < duration_seconds(low):
            return f"{excerpt(duration)} is below {low}; {what} must be between {low} and {high}"
        if seconds > duration_seconds(high):
            return f"{excerpt(duration)} is above {high}; {what} must be between {low} and {high}"
        return None

    return problem


# Characters that change what a terminal or a CI log shows, or where a line ends, instead of showing themselves:
# Unicode's control characters (Cc: C0 with newline, carriage return and escape, DEL, C1 with CSI), its line and
# paragraph separators (Zl, Zp), and the bidirectional controls that reorder text as it is displayed (Unicode
# Technical Standard #39, and https://trojansource.codes). A value printed by `stackctl` or written to a GitHub
# Actions output must hold none of them.
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def control_character_problem(value: str) -> str | None:
    """Why `value` cannot be printed as it is (its first control, line-breaking or bidirectional character), or
    None. The value is shown escaped (`excerpt`), never raw."""
    for position, char in enumerate(value):
        if char in _BIDI_CONTROLS or unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            return (
                f"{excerpt(value)} holds the control character {char!a} at position {position}; give printable "
                "text: no newline, carriage return, escape sequence or other control character"
            )
    return None


PRINTABLE = Format(rule=control_character_problem)
"""Free text that reaches a terminal or a CI log as it is (a kubeconfig context's name)."""


# Workload identities, as the clouds' identity webhooks read them from a ServiceAccount annotation
# (triton_platform/kube/workload_identity.py).
AWS_PARTITIONS = ("aws", "aws-cn", "aws-us-gov", "aws-eusc", "aws-iso", "aws-iso-b", "aws-iso-e", "aws-iso-f")
"""AWS's partitions, an ARN's second field: the `id`s of the AWS SDKs' partitions.json
(https://github.com/aws/aws-sdk-js-v3/blob/main/packages/util-endpoints/src/lib/aws/partitions.json; the ARN
format is https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html)."""
IAM_ROLE_NAME = r"[A-Za-z0-9+=,.@_-]+"
IAM_ROLE_NAME_MAX = 64
IAM_PATH = r"/([\x21-\x7e]+/)?"
IAM_PATH_MAX = 512
"""IAM's rules for a role (CreateRole, https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateRole.html;
"IAM and AWS STS quotas", https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html): a name of
1-64 letters, digits and `+=,.@_-`; a path of 1-512 characters, `/` or printable ASCII between slashes."""
IAM_ROLE_ARN_FORM = "an IAM role ARN, arn:<partition>:iam::<12-digit account>:role/[<path>/]<name>"


def iam_role_arn_problem(arn: str) -> str | None:
    """Why IAM would refuse `arn` as a role's ARN (`arn:<partition>:iam::<account>:role/<path><name>`), or None."""
    fields = arn.split(":", 5)
    if len(fields) != 6 or fields[0] != "arn" or fields[2:4] != ["iam", ""] or not fields[5].startswith("role/"):
        return f"must be {IAM_ROLE_ARN_FORM}; got {excerpt(arn)}"
    partition, account, resource = fields[1], fields[4], fields[5]
    if partition not in AWS_PARTITIONS:
        return (
            f"{excerpt(arn)} has partition {excerpt(partition)}, which AWS does not have; use one of "
            f"{', '.join(AWS_PARTITIONS)}"
        )
    if not re.fullmatch(r"[0-9]{12}", account):
        return f"{excerpt(arn)} has account {excerpt(account)}; an AWS account ID is 12 digits"
    head, _, name = resource.removeprefix("role").rpartition("/")
    path = f"{head}/"
    if not name:
        return f"{excerpt(arn)} names no role: give the role's name after role/ (and its path, if any, before it)"
    if len(name) > IAM_ROLE_NAME_MAX:
        return f"{excerpt(arn)} has a role name of {len(name)} characters; IAM allows at most {IAM_ROLE_NAME_MAX}"
    if not re.fullmatch(IAM_ROLE_NAME, name):
        return f"{excerpt(arn)} has role name {excerpt(name)}; an IAM role name is letters, digits and + = , . @ _ -"
    if len(path) > IAM_PATH_MAX:
        return f"{excerpt(arn)} has a path of {len(path)} characters; IAM allows at most {IAM_PATH_MAX}"
    if not re.fullmatch(IAM_PATH, path):
        return f"{excerpt(arn)} has path {excerpt(path)}; an IAM path is printable ASCII between slashes, no spaces"
    return None


IAM_ROLE_ARN = Format(rule=iam_role_arn_problem)
AZURE_CLIENT_ID = Format(UUID)
GCP_SERVICE_ACCOUNT = Format(GCP_SERVICE_ACCOUNT_EMAIL)

NAMESPACE = Format(DNS_LABEL, 63)
"""A Namespace's name: a DNS-1123 label."""
DEPLOYMENT_KEY = Format(DNS_LABEL, 40)
"""A name the components prefix and suffix into object names, e.g. `triton-<key>-...`."""
OBJECT_NAME = Format(DNS_SUBDOMAIN, 253)
"""The name of an object whose kind takes DNS-1123 subdomains: Secrets, claims, StorageClasses, Nodes, classes."""
HOST_NAME = Format(DNS_NAME, 253)
LABEL_KEY_FORMAT = Format(LABEL_KEY, 253)
"""A label or annotation key (a qualified name)."""
LABEL_VALUE_FORMAT = Format(LABEL_VALUE, 63)
MODEL = Format(MODEL_NAME)
QUANTITY_FORMAT = Format(QUANTITY)
IMAGE = Format(rule=pinned_image_problem)
"""A container image that cannot change under the stack: a tag other than `latest`, or a sha256 digest."""
IMAGE_TAG = Format(rule=tagged_image_problem)
IMAGE_DIGEST = Format(SHA256_DIGEST)
HTTP_URL = Format(URL, rule=url_host_problem)
HTTPS_URL = Format(SECURE_URL, rule=url_host_problem)
RUNBOOK_BASE_URL = Format(SECURE_URL, rule=runbook_base_problem)
NETWORK = Format(rule=network_problem)
VOLUME_SIZE = Format(QUANTITY, rule=volume_size_problem)
PROMETHEUS_VOLUME = Format(QUANTITY, rule=prometheus_volume_problem)
PRIORITY_CLASS = Format(DNS_SUBDOMAIN, 253, rule=priority_class_problem)
"""The name of a PriorityClass a component creates."""
CLOCK = Format(CLOCK_TIME)
TIME_ZONE = Format(rule=time_zone_problem)
NODE_DELAY = Format(GO_DURATION, rule=duration_within("0s", "24h", "a node scale-down delay"))
NODE_LIFETIME = Format(GO_DURATION_OR_NEVER, rule=duration_within("1h", "8760h", "a node lifetime"))
SCRAPE_INTERVAL = Format(PROM_DURATION, rule=duration_within("1s", "2m", "a scrape interval"))
"""Prometheus marks a series stale 5m after its last sample and KEDA reads the queue gauge at an instant, so an
interval near 5m leaves gaps; 2m still survives one missed scrape."""
ALERT_FOR = Format(PROM_DURATION, rule=duration_within("0s", "1d", "an alert's `for`"))


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
