"""Value formats: images, DNS and object names, integer widths, duration bounds, paths, stack names, exceptions."""

from __future__ import annotations

from typing import Any

import pytest

from platform_config.paths import PROJECT_ROOT
from platform_config.types import stack_name_problem
from tests.conftest import K8S, MODELS, MONITORING, POOL, SCALING, SERVING, Mutation, errors_of, setting, validate
from triton_platform.args.durations import PROM_DURATION
from triton_platform.args.excerpts import excerpt
from triton_platform.args.formats import (
    AZURE_CLIENT_ID,
    DNS_LABEL,
    DNS_NAME,
    DNS_SUBDOMAIN,
    IMAGE_REFERENCE,
    KIND,
    LABEL_KEY,
    LABEL_VALUE_FORMAT,
    NAMESPACE,
    OBJECT_NAME,
    PATTERN_NAMES,
    Format,
    object_name_problem,
)

EXCEPTIONS = "triton-platform:policyExceptions"
DIGESTS = "triton-platform:imageDigests"
DIGEST = "sha256:" + "ab" * 32
CLIENT_ID = "0b1f5d63-7c1a-4f5e-9d2b-3a4c5e6f7a8b"
REFERENCE = PATTERN_NAMES[IMAGE_REFERENCE]
CLUSTER_AUTOSCALER = (
    setting(POOL, "autoscaler", value="cluster-autoscaler"),
    setting(POOL, "clusterAutoscaler", value={"cloudProvider": "aws", "nodeGroups": ["gpu"]}),
    # An autoscaled pool's wake from zero adds a node and the image pull to dev's budget (platform_config/wake.py).
    setting(SERVING, "deployments", "general", "wake", "budgetSeconds", value=600),
)

# --- images ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("stack", "key", "path", "extra"),
    [
        ("dev", SERVING, ("image",), ()),
        ("dev", POOL, ("devicePlugin", "image"), ()),
        ("dev", POOL, ("dcgmExporterImage",), ()),
        ("dev", POOL, ("overprovisioningImage",), ()),
        ("dev", POOL, ("clusterAutoscaler", "image"), CLUSTER_AUTOSCALER),
        ("production", SERVING, ("modelRepository", "pvc", "loaderImage"), ()),
    ],
)
def test_every_image_field_must_be_pinned(stack: str, key: str, path: tuple[str, ...], extra: tuple[Any, ...]) -> None:
    image = "registry.example.com/team/tool:latest"
    [error] = errors_of(stack, *extra, setting(key, *path, value=image))
    dotted = ".".join(path)
    assert error == f"{key}.{dotted}: image {image!r} uses 'latest'; pin a version tag or a digest"
    assert validate(stack, *extra, setting(key, *path, value="registry.example.com/team/tool:1.2.3"))


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("nvcr.io/NVIDIA/tritonserver:24.10-py3", f"must be {REFERENCE}; got 'nvcr.io/NVIDIA/tritonserver:24.10-py3'"),
        ("nvcr.io//tritonserver:24.10-py3", f"must be {REFERENCE}; got 'nvcr.io//tritonserver:24.10-py3'"),
        ("nvcr.io/nvidia/tritonserver:", f"must be {REFERENCE}; got 'nvcr.io/nvidia/tritonserver:'"),
        ("nvcr.io/nvidia/triton..server:1", f"must be {REFERENCE}; got 'nvcr.io/nvidia/triton..server:1'"),
        ("", f"must be {REFERENCE}; got ''"),
        (
            "nvcr.io/nvidia/tritonserver:" + "t" * 129,
            f"must be {REFERENCE}; got {excerpt('nvcr.io/nvidia/tritonserver:' + 't' * 129)}",
        ),
        (
            "nvcr.io/nvidia/tritonserver",
            "image 'nvcr.io/nvidia/tritonserver' has no tag; pin a version such as nvcr.io/nvidia/tritonserver:24.10-py3",
        ),
        (
            "nvcr.io/nvidia/tritonserver@sha256:" + "a" * 32,
            f"image {excerpt('nvcr.io/nvidia/tritonserver@sha256:' + 'a' * 32)} has digest {excerpt('sha256:' + 'a' * 32)}; "
            "pin a sha256 digest: @sha256: and 64 lowercase hex digits",
        ),
        (
            "nvcr.io/nvidia/tritonserver@sha256:" + "A" * 64,
            f"image {excerpt('nvcr.io/nvidia/tritonserver@sha256:' + 'A' * 64)} has digest {excerpt('sha256:' + 'A' * 64)}; "
            "pin a sha256 digest: @sha256: and 64 lowercase hex digits",
        ),
        (
            "nvcr.io/nvidia/tritonserver@sha512:" + "a" * 128,
            f"image {excerpt('nvcr.io/nvidia/tritonserver@sha512:' + 'a' * 128)} has digest {excerpt('sha512:' + 'a' * 128)}; "
            "pin a sha256 digest: @sha256: and 64 lowercase hex digits",
        ),
        (
            "registry.example.com/" + "a" * 256 + ":1",
            f"image {excerpt('registry.example.com/' + 'a' * 256 + ':1')} has a repository path of 256 characters; at most 255",
        ),
    ],
)
def test_images_follow_the_distribution_reference_grammar(image: str, expected: str) -> None:
    [error] = errors_of("dev", setting(SERVING, "image", value=image))
    assert error == f"{SERVING}.image: {expected}"


@pytest.mark.parametrize(
    "image",
    [
        "ubuntu:22.04",
        "localhost:5000/triton/server:24.10-py3",
        "[::1]:5000/tritonserver:24.10",
        "Registry.Example.com/a__b/c-d.e:V1_x",
        "nvcr.io/nvidia/tritonserver:latest@sha256:" + "0" * 64,
        "nvcr.io/nvidia/tritonserver@sha256:" + "0" * 64,
        "registry.example.com/" + "a" * 255 + ":1",
    ],
)
def test_well_formed_pinned_images_pass(image: str) -> None:
    assert validate("dev", setting(SERVING, "image", value=image)).serving.image == image


def test_image_digest_keys_follow_the_same_grammar() -> None:
    [error] = errors_of("dev", setting(DIGESTS, value={"Nvcr.io/NVIDIA/triton:1": DIGEST}))
    assert error == f"{DIGESTS}[\"Nvcr.io/NVIDIA/triton:1\"] (key): must be {REFERENCE}; got 'Nvcr.io/NVIDIA/triton:1'"
    [error] = errors_of("dev", setting(DIGESTS, value={f"nvcr.io/nvidia/triton:1@{DIGEST}": DIGEST}))
    assert error.startswith(f'{DIGESTS}["nvcr.io/nvidia/triton:1@sha256:abab')
    assert error.endswith(
        "… is not an image named by its tag without a digest, as the images are named where they are set, "
        "e.g. nvcr.io/nvidia/tritonserver:24.10-py3"
    )


def test_the_overprovisioning_image_is_configurable() -> None:
    image = "registry.example.com/mirror/pause:3.10"
    config = validate("production", setting(POOL, "overprovisioningImage", value=image))
    assert config.gpu_pool.overprovisioning_image == image


# --- DNS and object names -----------------------------------------------------


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (
            setting(SERVING, "ingress", "baseDomain", value="models..example.com"),
            f"{SERVING}.ingress.baseDomain: must be {PATTERN_NAMES[DNS_NAME]}; got 'models..example.com'",
        ),
        (
            setting(SERVING, "ingress", "baseDomain", value=".example.com"),
            f"{SERVING}.ingress.baseDomain: must be {PATTERN_NAMES[DNS_NAME]}; got '.example.com'",
        ),
        (
            setting(SERVING, "ingress", "baseDomain", value="a" * 64 + ".example.com"),
            f"{SERVING}.ingress.baseDomain: must be {PATTERN_NAMES[DNS_NAME]}; got {'a' * 64 + '.example.com'!r}",
        ),
        (
            setting(SERVING, "ingress", "baseDomain", value="Example.com"),
            f"{SERVING}.ingress.baseDomain: must be {PATTERN_NAMES[DNS_NAME]}; got 'Example.com'",
        ),
        (
            setting(SERVING, "ingress", "tlsSecretName", value="tls..cert"),
            f"{SERVING}.ingress.tlsSecretName: must be {PATTERN_NAMES[DNS_SUBDOMAIN]}; got 'tls..cert'",
        ),
        (
            setting(SERVING, "ingress", "className", value="nginx."),
            f"{SERVING}.ingress.className: must be {PATTERN_NAMES[DNS_SUBDOMAIN]}; got 'nginx.'",
        ),
        (
            setting(SERVING, "ingress", "controllerNamespace", value="ingress.nginx"),
            f"{SERVING}.ingress.controllerNamespace: must be {PATTERN_NAMES[DNS_LABEL]}; got 'ingress.nginx'",
        ),
        (
            setting(POOL, "staticNodes", value=["node..1"]),
            f"{POOL}.staticNodes[0]: must be {PATTERN_NAMES[DNS_SUBDOMAIN]}; got 'node..1'",
        ),
        (
            setting(POOL, "nodeLabels", value={"example..com/pool": "gpu"}),
            f"{POOL}.nodeLabels[\"example..com/pool\"] (key): must be {PATTERN_NAMES[LABEL_KEY]}; got 'example..com/pool'",
        ),
    ],
)
def test_dns_names_have_no_empty_or_oversized_labels(mutation: Mutation, expected: str) -> None:
    assert errors_of("dev", mutation) == [expected]


def test_a_subdomain_may_be_253_characters_and_no_more() -> None:
    name = ".".join(["a" * 63] * 4)[:253]
    assert validate("dev", setting(SERVING, "ingress", "className", value=name))
    [error] = errors_of("dev", setting(SERVING, "ingress", "className", value=name + "a"))
    assert error == f"{SERVING}.ingress.className: {excerpt(name + 'a')} has 254 characters; at most 253"


def test_ingress_hosts_fit_a_dns_name() -> None:
    base = ".".join(["a" * 63] * 3) + "." + "b" * 50
    ingress = {"enabled": True, "baseDomain": base, "tlsSecretName": "tls"}
    [error] = errors_of("dev", setting(SERVING, "ingress", value=ingress))
    assert error == (
        f"{SERVING}.ingress.baseDomain: host {excerpt('general-grpc.' + base)} of deployment 'general' has 255 characters; "
        "a DNS name has at most 253, so shorten baseDomain or the deployment's name"
    )
    assert validate("dev", setting(SERVING, "ingress", value={**ingress, "baseDomain": base[2:]}))


@pytest.mark.parametrize(
    ("key", "path", "url", "expected"),
    [
        (
            SCALING,
            ("prometheusAddress",),
            "http://prometheus..monitoring.svc:9090",
            f"'http://prometheus..monitoring.svc:9090' has host 'prometheus..monitoring.svc', which is neither "
            f"{PATTERN_NAMES[DNS_NAME]} "
            "nor an IP address",
        ),
        (
            SCALING,
            ("prometheusAddress",),
            "http://prometheus:99999",
            "'http://prometheus:99999' has a port that is not a number from 0 to 65535",
        ),
        (
            SCALING,
            ("prometheusAddress",),
            "http://prometheus:0",
            "'http://prometheus:0' has port 0; give a port from 1 to 65535",
        ),
        (
            MONITORING,
            ("runbookBaseUrl",),
            "https:///runbooks.md",
            f"'https:///runbooks.md' has host '', which is neither {PATTERN_NAMES[DNS_NAME]} nor an IP address",
        ),
    ],
)
def test_url_hosts_are_dns_names_or_addresses(key: str, path: tuple[str, ...], url: str, expected: str) -> None:
    [error] = errors_of("dev", setting(key, *path, value=url))
    assert error == f"{key}.{'.'.join(path)}: {expected}"


@pytest.mark.parametrize(
    "url", ["http://10.0.0.7:9090", "http://[fd00::7]:9090", "https://Prometheus.Example.com/prom", "http://prom:9090"]
)
def test_url_hosts_that_pass(url: str) -> None:
    assert validate("dev", setting(SCALING, "prometheusAddress", value=url))


@pytest.mark.parametrize(
    ("kind", "name", "expected"),
    [
        ("Deployment", "triton-general", None),
        ("Deployment", "a.b-c", None),
        ("Service", "triton-general", None),
        ("ClusterRole", "system:triton", None),
        (
            "Service",
            "2-triton",
            "'2-triton' is not a valid Service name: Service names are DNS-1035 labels: up to 63 a-z, 0-9 and '-', "
            "starting with a letter, ending with a letter or digit",
        ),
        (
            "Service",
            "a" * 64,
            f"{excerpt('a' * 64)} is not a valid Service name: Service names are DNS-1035 labels: up to 63 a-z, 0-9 and "
            "'-', starting with a letter, ending with a letter or digit",
        ),
        (
            "Namespace",
            "triton.dev",
            "'triton.dev' is not a valid Namespace name: Namespace names are DNS-1123 labels: up to 63 a-z, 0-9 "
            "and '-', starting and ending with a letter or digit",
        ),
        (
            "Deployment",
            "Triton_General",
            "'Triton_General' is not a valid Deployment name: Deployment names are DNS-1123 subdomains: up to 253 "
            "a-z, 0-9, '-' and '.', labels starting and ending with a letter or digit",
        ),
        (
            "ClusterRoleBinding",
            "a/b",
            "'a/b' is not a valid ClusterRoleBinding name: ClusterRoleBinding names are path segments: up to 253 "
            "characters but '/' and '%', and not '.' or '..'",
        ),
    ],
)
def test_object_names_follow_their_kinds_rule(kind: str, name: str, expected: str | None) -> None:
    assert object_name_problem(kind, name) == expected


# --- integers that fit config.pbtxt ---------------------------------------------


DEFAULT_BATCHING = (SERVING, "modelDefaults", "dynamicBatching")


@pytest.mark.parametrize(
    ("mutation", "where", "value", "limit"),
    [
        (
            setting(*DEFAULT_BATCHING, "preferredBatchSize", value=[2**31]),
            f"{SERVING}.modelDefaults.dynamicBatching.preferredBatchSize[0]",
            2**31,
            2**31 - 1,
        ),
        (
            setting(*DEFAULT_BATCHING, "defaultQueuePolicy", "maxQueueSize", value=2**32),
            f"{SERVING}.modelDefaults.dynamicBatching.defaultQueuePolicy.maxQueueSize",
            2**32,
            2**32 - 1,
        ),
        (
            setting(*DEFAULT_BATCHING, "defaultQueuePolicy", "defaultTimeoutMicroseconds", value=2**64),
            f"{SERVING}.modelDefaults.dynamicBatching.defaultQueuePolicy.defaultTimeoutMicroseconds",
            2**64,
            2**64 - 1,
        ),
        (
            setting(SERVING, "modelDefaults", "warmup", value={"batchSizes": [2**32]}),
            f"{SERVING}.modelDefaults.warmup.batchSizes[0]",
            2**32,
            2**32 - 1,
        ),
        (
            setting(MODELS, "ranker", "versionPolicy", value={"specific": {"versions": [2**63]}}),
            f"{MODELS}.ranker.versionPolicy.specific.versions[0]",
            2**63,
            2**63 - 1,
        ),
    ],
)
def test_config_pbtxt_integers_fit_their_protobuf_types(mutation: Mutation, where: str, value: int, limit: int) -> None:
    assert errors_of("dev", mutation) == [f"{where}: Input should be less than or equal to {limit}; got {value}"]


def test_specific_versions_are_listed_once() -> None:
    [error] = errors_of(
        "production", setting(MODELS, "ranker", "versionPolicy", value={"specific": {"versions": [1, 2, 1]}})
    )
    assert error == f"{MODELS}.ranker.versionPolicy.specific.versions: 1 is listed twice; list each once"


# --- durations ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0s", "'0s' is below 1s; a scrape interval must be between 1s and 2m"),
        ("500ms", "'500ms' is below 1s; a scrape interval must be between 1s and 2m"),
        ("1y", "'1y' is above 2m; a scrape interval must be between 1s and 2m"),
        ("2m1s", "'2m1s' is above 2m; a scrape interval must be between 1s and 2m"),
        ("", "'' is not a duration; a scrape interval must be between 1s and 2m"),
        ("30s1m", f"must be {PATTERN_NAMES[PROM_DURATION]}; got '30s1m'"),
    ],
)
def test_scrape_interval_is_bounded(value: str, expected: str) -> None:
    [error] = errors_of("dev", setting(MONITORING, "scrapeInterval", value=value))
    assert error == f"{MONITORING}.scrapeInterval: {expected}"


def test_scrape_interval_bounds_are_inclusive() -> None:
    assert validate("dev", setting(MONITORING, "scrapeInterval", value="1s"))
    assert validate("dev", setting(MONITORING, "scrapeInterval", value="1m60s"))


def test_alert_durations_are_bounded() -> None:
    [error] = errors_of("dev", setting(MONITORING, "alerts", "gpuUtilizationLowFor", value="1d1s"))
    assert (
        error
        == f"{MONITORING}.alerts.gpuUtilizationLowFor: '1d1s' is above 1d; an alert's `for` must be between 0s and 1d"
    )
    assert validate("dev", setting(MONITORING, "alerts", "latencyFor", value="0s"))
    assert validate("dev", setting(MONITORING, "alerts", "gpuUtilizationLowFor", value="24h"))


def test_node_durations_are_bounded() -> None:
    karpenter = (POOL, "karpenter")
    [error] = errors_of("production", setting(*karpenter, "consolidateAfter", value="25h"))
    assert (
        error
        == f"{POOL}.karpenter.consolidateAfter: '25h' is above 24h; a node scale-down delay must be between 0s and 24h"
    )
    [error] = errors_of("production", setting(*karpenter, "expireAfter", value="30m"))
    assert error == f"{POOL}.karpenter.expireAfter: '30m' is below 1h; a node lifetime must be between 1h and 8760h"
    assert validate("production", setting(*karpenter, "expireAfter", value="Never"))
    [error] = errors_of(
        "dev", *CLUSTER_AUTOSCALER, setting(POOL, "clusterAutoscaler", "scaleDownUnneededTime", value="48h")
    )
    assert error == (
        f"{POOL}.clusterAutoscaler.scaleDownUnneededTime: '48h' is above 24h; "
        "a node scale-down delay must be between 0s and 24h"
    )


# --- paths and stack names -------------------------------------------------------


@pytest.mark.parametrize(
    ("render_dir", "expected"),
    [
        (
            "/tmp/out",
            "'/tmp/out' is an absolute path; give a folder relative to the project root, inside it, e.g. rendered/dev",
        ),
        (
            "..",
            f"'..' leads outside the project (to {PROJECT_ROOT.parent}); give a folder inside the project root, e.g. rendered/dev",
        ),
        (
            "rendered/../../out",
            f"'rendered/../../out' leads outside the project (to {PROJECT_ROOT.parent / 'out'}); give a folder "
            "inside the project root, e.g. rendered/dev",
        ),
        (".", "'.' is the project root itself; give a folder inside it, e.g. rendered/dev"),
        ("rendered/..", "'rendered/..' is the project root itself; give a folder inside it, e.g. rendered/dev"),
    ],
)
def test_render_dir_stays_inside_the_project(render_dir: str, expected: str) -> None:
    [error] = errors_of("dev", setting(K8S, "renderDir", value=render_dir))
    assert error == f"{K8S}.renderDir: {expected}"


def test_a_render_dir_inside_the_project_passes() -> None:
    assert (
        validate("dev", setting(K8S, "renderDir", value="rendered/../out/dev")).kubernetes.render_dir
        == "rendered/../out/dev"
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("dev", None),
        ("team_a.prod-2", None),
        ("a" * 100, None),
        (
            "my stack",
            "stack name 'my stack' has characters Pulumi does not allow; Pulumi stack names are 1-100 letters, "
            "digits, '-', '_' and '.'",
        ),
        (
            "org/dev",
            "stack name 'org/dev' has characters Pulumi does not allow; Pulumi stack names are 1-100 letters, "
            "digits, '-', '_' and '.'",
        ),
        (
            "",
            "stack name '' has characters Pulumi does not allow; Pulumi stack names are 1-100 letters, digits, '-', '_' and '.'",
        ),
        (
            "a" * 101,
            f"stack name {excerpt('a' * 101)} has 101 characters; Pulumi stack names are 1-100 letters, digits, '-', '_' and '.'",
        ),
    ],
)
def test_stack_names_follow_pulumis_rules(name: str, expected: str | None) -> None:
    assert stack_name_problem(name) == expected


# --- policy exceptions -------------------------------------------------------------

GOOD_EXCEPTION = {
    "policy": "no-load-balancer",
    "kind": "Service",
    "name": "triton-general",
    "reason": "internal NLB for the on-prem gateway",
}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"kind": "service"}, f"[0].kind: must be {PATTERN_NAMES[KIND]}; got 'service'"),
        (
            {"name": "Triton-General"},
            "[0].name: 'Triton-General' is not a valid Service name: Service names are DNS-1035 labels: up to 63 "
            "a-z, 0-9 and '-', starting with a letter, ending with a letter or digit",
        ),
        (
            {"reason": " " * 25},
            f"[0].reason: {' ' * 25!r} is blank; say why this object may break the rule (at least 20 characters)",
        ),
        (
            {"reason": "          too short!          "},
            "[0].reason: '          too short!          ' has 10 characters besides surrounding whitespace; "
            "say why this object may break the rule in at least 20",
        ),
    ],
)
def test_policy_exceptions_are_well_formed(change: dict[str, str], expected: str) -> None:
    [error] = errors_of("production", setting(EXCEPTIONS, value=[{**GOOD_EXCEPTION, **change}]))
    assert error == f"{EXCEPTIONS}{expected}"


# --- the queue timeout and the SLO ------------------------------------------------

TIMEOUT = ("dynamicBatching", "defaultQueuePolicy", "defaultTimeoutMicroseconds")


def test_a_queue_timeout_above_the_slo_is_rejected() -> None:
    [error] = errors_of("production", setting(MODELS, "ranker", *TIMEOUT, value=200_001))
    assert error == (
        f"{MODELS}.ranker.dynamicBatching.defaultQueuePolicy.defaultTimeoutMicroseconds: queue timeout 200001 us "
        f"is above the p95 latency SLO of 200 ms ({SERVING}.p95LatencySloMs = 200000 us); a request queued that "
        "long has already missed the SLO, so the timeout must be <= 200000"
    )
    [error] = errors_of("production", setting(SERVING, "modelDefaults", *TIMEOUT, value=250_000))
    assert error.startswith(
        f"{SERVING}.modelDefaults.dynamicBatching.defaultQueuePolicy.defaultTimeoutMicroseconds: queue timeout 250000 us"
    )
    assert validate("production", setting(MODELS, "ranker", *TIMEOUT, value=200_000))
    assert validate("production", setting(MODELS, "ranker", *TIMEOUT, value=0))  # Triton's "no timeout"


def test_a_runbook_page_with_a_fragment_is_refused_at_its_key() -> None:
    """Each alert's link sets its own fragment (prometheus_alert.runbook_link): a base with one would make two '#'."""
    url = "https://wiki.example.com/runbooks#top"
    [error] = errors_of("dev", setting(MONITORING, "runbookBaseUrl", value=url))
    assert error == (
        f"{MONITORING}.runbookBaseUrl: '{url}' has a fragment, '#top'; each alert's runbook link sets its own "
        "(#<alert name in lower case>), so give the page without one, e.g. 'https://wiki.example.com/runbooks'"
    )


@pytest.mark.parametrize(
    ("value_format", "value"),
    [(NAMESPACE, "ml"), (OBJECT_NAME, "models"), (LABEL_VALUE_FORMAT, "inference"), (AZURE_CLIENT_ID, CLIENT_ID)],
    ids=["namespace", "object-name", "label-value", "client-id"],
)
def test_a_final_newline_is_refused_by_the_components_as_by_the_stack(value_format: Format, value: str) -> None:
    """Python's `$` matches before a final newline, the Rust engine pydantic runs the stack's patterns with does not:
    a component's Args must not take `ml\\n` where the stack file refuses it."""
    assert value_format.problem(value) is None
    assert value_format.pattern is not None
    assert value_format.problem(f"{value}\n") == (
        f"must be {PATTERN_NAMES[value_format.pattern]}; got {excerpt(value + chr(10))}"
    )


@pytest.mark.parametrize(
    ("key", "path", "value", "expected"),
    [
        (
            MONITORING,
            ("storage", "alertmanagerSize"),
            "0",
            "'0' is below 1Mi; a volume holds at least 1Mi (the API server refuses a claim of 0)",
        ),
        (
            SERVING,
            ("modelRepository", "pvc", "size"),
            "0Gi",
            "'0Gi' is below 1Mi; a volume holds at least 1Mi (the API server refuses a claim of 0)",
        ),
        (
            MONITORING,
            ("storage", "prometheusSize"),
            "500m",
            "'500m' is below 1Mi; a volume holds at least 1Mi (the API server refuses a claim of 0)",
        ),
        (
            MONITORING,
            ("storage", "prometheusSize"),
            "1500Mi",
            "'1500Mi' is below 2Gi: Prometheus' retentionSize, 85% of the volume in whole GiB, would be 0GB, which "
            "Prometheus reads as no limit, so the volume would fill and scraping stop",
        ),
        *(
            (
                key,
                path,
                "system-scaling",
                "'system-scaling' starts with 'system-', which the API server reserves for Kubernetes' own classes "
                "(system-cluster-critical, system-node-critical); choose another name",
            )
            for key, path in ((SCALING, ("keda", "priorityClassName")), (MONITORING, ("priorityClassName",)))
        ),
    ],
)
def test_sizes_and_names_the_api_server_refuses_or_that_defeat_their_purpose(
    key: str, path: tuple[str, ...], value: str, expected: str
) -> None:
    assert errors_of("production", setting(key, *path, value=value)) == [f"{key}.{'.'.join(path)}: {expected}"]


def test_the_smallest_sizes_that_work_pass() -> None:
    assert validate(
        "production",
        setting(MONITORING, "storage", "prometheusSize", value="2Gi"),
        setting(MONITORING, "storage", "alertmanagerSize", value="1Mi"),
    )


def test_the_platforms_priority_classes_have_one_name_each() -> None:
    taken = "is the name of {what} the platform also creates; each PriorityClass is one cluster-wide object: give this one another name"
    assert errors_of(
        "production", setting(SCALING, "keda", "priorityClassName", value="triton-production-monitoring")
    ) == [
        f"{SCALING}.keda.priorityClassName: 'triton-production-monitoring' "
        + taken.format(what=f"the class {MONITORING}.priorityClassName names")
    ]
    assert errors_of("production", setting(MONITORING, "priorityClassName", value="triton-production-inference")) == [
        f"{MONITORING}.priorityClassName: 'triton-production-inference' " + taken.format(what="the inference class")
    ]
