"""Every rule of the policy pack (policy/rules.py): what the program emits passes; a violating object fails with its message."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from offline.synth import SynthResult
from platform_config.paths import PROJECT_ROOT
from policy.resource import EXCEPTIONS_ANNOTATION, Resource
from policy.rules import (
    POLICY_NAMES,
    RULES,
    Rule,
    granted_exceptions,
    unknown_exception_targets,
    violations,
)
from tests.conftest import STACKS, synth_stack
from tests.support.invented_names import INVENTED_FLAG
from triton_platform.serving.triton_serving_args import DEFAULT_LOADER_IMAGE

RULE = {rule.name: rule for rule in RULES}


def built(synth: SynthResult) -> list[Resource]:
    """The objects as the pack sees them, with the exceptions the stack's config grants."""
    granted: dict[tuple[str, str], dict[str, str]] = {}
    for exception in synth.stack.config.policy_exceptions:
        granted.setdefault((exception.kind, exception.name), {})[exception.policy] = exception.reason
    out = []
    for r in synth.resources:
        if r.type.startswith("kubernetes:"):
            found = Resource(r.type, r.inputs, r.protect)
            given = granted.get((found.kind, found.name), {})
            out.append(Resource(r.type, r.inputs, r.protect, given, synth.stack.config.environment))
    return out


def find(stack: str, kind: str, name: str) -> Resource:
    return next(r for r in built(synth_stack(stack)) if r.kind == kind and r.name == name)


def changed(resource: Resource, edit: Callable[[dict[str, Any]], None], protect: bool | None = None) -> Resource:
    props = copy.deepcopy(dict(resource.props))
    edit(props)
    return Resource(resource.type, props, resource.protect if protect is None else protect)


def triton(props: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in props["spec"]["template"]["spec"]["containers"] if c["name"] == "triton")


def check(rule: str, resource: Resource) -> list[str]:
    return violations(RULE[rule], resource)[0]


TRITON_IMAGE = "nvcr.io/nvidia/tritonserver:24.10-py3"
PINNED_AT_DEPLOY = {"production": {TRITON_IMAGE, DEFAULT_LOADER_IMAGE}}
"""The committed production stack's images by tag (no public digest for them): the deploy workflow pins them."""
"""What a committed stack leaves to `stackctl pin-images` in the deploy workflow: no public source pairs it with
its digest, and a digest is never written by hand (stacks/Pulumi.production.yaml)."""


def by_tag(message: str) -> str:
    """The image a production-image-digests message names."""
    return message.split(" runs ", 1)[1].split(" by tag;", 1)[0]


def policy_findings(resources: list[Resource], unpinned: set[str]) -> list[tuple[str, str, str, str]]:
    """Every rule's findings on a stack's objects but images by tag, which must be exactly `unpinned` (what the
    deploy workflow's `stackctl pin-images` resolves): (rule, kind, name, message)."""
    found = []
    for rule in RULES:
        if rule.name == "production-image-digests":
            assert {by_tag(m) for r in resources for m in violations(rule, r)[0]} == unpinned
        elif rule.check:
            found += [(rule.name, r.kind, r.name, m) for r in resources for m in violations(rule, r)[0]]
        else:
            assert rule.stack_check is not None
            found += [
                (rule.name, r.kind, r.name, m) for r, m in rule.stack_check(resources) if not r.exception(rule.name)
            ]
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_the_program_passes_every_rule(stack: str) -> None:
    resources = built(synth_stack(stack))
    for rule in RULES:
        if rule.name == "production-image-digests":
            found_images = {by_tag(m) for r in resources for m in violations(rule, r)[0]}
            assert found_images == PINNED_AT_DEPLOY.get(stack, set())
        elif rule.check:
            found = {(r.kind, r.name): violations(rule, r)[0] for r in resources}
            assert {k: v for k, v in found.items() if v} == {}, rule.name
        else:
            assert rule.stack_check is not None
            found_stack = [(r.kind, r.name, m) for r, m in rule.stack_check(resources) if not r.exception(rule.name)]
            assert found_stack == [], rule.name


GENERAL = ("production", "Deployment", "triton-general")
OVERPROVISIONING = ("production", "Deployment", "gpu-overprovisioning")


@pytest.mark.parametrize(
    ("rule", "target", "edit", "message"),
    [
        (
            "ephemeral-storage",
            GENERAL,
            lambda p: triton(p)["resources"]["limits"].pop("ephemeral-storage"),
            "container triton has no ephemeral-storage limits",
        ),
        (
            "ephemeral-storage",
            GENERAL,
            lambda p: p["spec"]["template"]["spec"]["volumes"][0]["emptyDir"].pop("sizeLimit"),
            "emptyDir volume tmp has no sizeLimit",
        ),
        (
            "production-image-digests",
            OVERPROVISIONING,
            lambda p: p["spec"]["template"]["spec"]["containers"][0].update(image="registry.k8s.io/pause:3.10"),
            "container placeholder runs registry.k8s.io/pause:3.10 by tag; production runs every image by digest: "
            "`stackctl pin-images` resolves it into triton-platform:imageDigests (docs/deploying.md: Images by "
            "digest)",
        ),
        (
            "pod-security-restricted",
            GENERAL,
            lambda p: triton(p)["securityContext"].update(allowPrivilegeEscalation=True),
            "container triton must set securityContext.allowPrivilegeEscalation: false",
        ),
        (
            "pod-security-restricted",
            GENERAL,
            lambda p: triton(p)["securityContext"]["capabilities"].update(add=["NET_ADMIN"]),
            "container triton adds capabilities ['NET_ADMIN']; only NET_BIND_SERVICE is allowed",
        ),
        (
            "pod-security-restricted",
            GENERAL,
            lambda p: (
                triton(p)["securityContext"].pop("runAsNonRoot"),
                p["spec"]["template"]["spec"]["securityContext"].pop("runAsNonRoot"),
            ),
            "container triton must run as non-root (runAsNonRoot: true on the pod or container)",
        ),
        (
            "pod-security-restricted",
            GENERAL,
            lambda p: p["spec"]["template"]["spec"]["securityContext"].pop("seccompProfile"),
            "container triton must use seccompProfile RuntimeDefault (got none)",
        ),
        (
            "no-host-access",
            GENERAL,
            lambda p: p["spec"]["template"]["spec"].update(hostNetwork=True),
            "host namespace hostNetwork is enabled",
        ),
        (
            "no-host-access",
            GENERAL,
            lambda p: p["spec"]["template"]["spec"]["volumes"].append({"name": "host", "hostPath": {"path": "/"}}),
            "volume host is a hostPath",
        ),
        (
            "read-only-root-filesystem",
            GENERAL,
            lambda p: triton(p)["securityContext"].update(readOnlyRootFilesystem=False),
            "container triton must set securityContext.readOnlyRootFilesystem: true (mount an emptyDir where it writes)",
        ),
        (
            "resources-and-pinned-images",
            GENERAL,
            lambda p: triton(p)["resources"]["limits"].pop("memory"),
            "container triton has no limits for memory",
        ),
        (
            "resources-and-pinned-images",
            GENERAL,
            lambda p: triton(p).update(image="nvcr.io/nvidia/tritonserver:latest"),
            "container triton image 'nvcr.io/nvidia/tritonserver:latest' must be pinned to a tag other than latest, or a digest",
        ),
        (
            "resources-and-pinned-images",
            GENERAL,
            lambda p: triton(p).update(image="localhost:5000/tritonserver"),
            "container triton image 'localhost:5000/tritonserver' must be pinned to a tag other than latest, or a digest",
        ),
        (
            "triton-health",
            GENERAL,
            lambda p: triton(p)["resources"]["limits"].pop("nvidia.com/gpu"),
            "the tritonserver container has no nvidia.com/gpu limit",
        ),
        (
            "triton-health",
            GENERAL,
            lambda p: triton(p).pop("startupProbe"),
            "the tritonserver container has no startupProbe",
        ),
        (
            "triton-api-surface",
            GENERAL,
            lambda p: triton(p)["args"].append(f"{INVENTED_FLAG}=32"),
            f"unknown tritonserver flag {INVENTED_FLAG}",
        ),
        (
            "triton-api-surface",
            GENERAL,
            lambda p: triton(p).update(
                args=[a for a in triton(p)["args"] if "restricted" not in a] + ["--model-control-mode=explicit"]
            ),
            "model control mode explicit needs --http-restricted-api to restrict model-repository, model-config",
        ),
        (
            "no-load-balancer",
            ("production", "Service", "triton-general"),
            lambda p: p["spec"].update(type="LoadBalancer"),
            "Service type LoadBalancer exposes the server outside the cluster; use the Ingress or ClusterIP",
        ),
        (
            "keda-scaling-safety",
            ("production", "ScaledObject", "triton-general"),
            lambda p: p["spec"]["triggers"][0]["metadata"].update(ignoreNullValues="true"),
            'trigger 0 (prometheus) must set ignoreNullValues: "false" so a missing metric is an error',
        ),
        (
            "keda-scaling-safety",
            ("production", "ScaledObject", "triton-general"),
            lambda p: p["spec"].pop("fallback"),
            "production ScaledObjects need a fallback (replicas to hold while metrics fail)",
        ),
        (
            "no-plaintext-secrets",
            ("production", "ConfigMap", "triton-general-dashboard"),
            lambda p: p["data"].update(notes="alerts go to https://hooks.slack.com/services/T000/B000/XXXX"),
            "data key 'notes' looks like a secret",
        ),
        (
            "no-plaintext-secrets",
            GENERAL,
            lambda p: triton(p).setdefault("env", []).append({"name": "API_TOKEN", "value": "s3cr3t-value-123"}),
            "container triton env API_TOKEN holds a secret-looking value; use valueFrom.secretKeyRef",
        ),
    ],
)
def test_a_violation_is_reported(
    rule: str, target: tuple[str, str, str], edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    original = find(*target)
    assert check(rule, original) == []
    assert message in check(rule, changed(original, edit))


def test_unprotected_production_storage_is_reported() -> None:
    claim = find("production", "PersistentVolumeClaim", "triton-model-repository")
    assert claim.protect
    assert check("protected-model-storage", claim) == []
    assert check("protected-model-storage", changed(claim, lambda p: None, protect=False)) == [
        "production model storage must be protected (pulumi protect)"
    ]


def stack_violations(rule: Rule, resources: list[Resource]) -> list[tuple[str, str, str]]:
    assert rule.stack_check is not None
    return [(r.kind, r.name, m) for r, m in rule.stack_check(resources) if not r.exception(rule.name)]


def replace(resources: list[Resource], kind: str, name: str, new: Resource | None) -> list[Resource]:
    out = [r for r in resources if not (r.kind == kind and r.name == name)]
    return [*out, new] if new else out


def test_a_triton_deployment_without_pdb_or_spread_is_reported() -> None:
    resources = built(synth_stack("production"))
    rule = RULE["triton-availability"]
    no_pdb = replace(resources, "PodDisruptionBudget", "triton-general", None)
    assert stack_violations(rule, no_pdb) == [
        ("Deployment", "triton-general", "no PodDisruptionBudget selects its pods")
    ]

    def unspread(p: dict[str, Any]) -> None:
        p["spec"]["template"]["spec"].pop("topologySpreadConstraints")
        p["spec"]["template"]["spec"]["affinity"].pop("podAntiAffinity")

    deployment = find("production", "Deployment", "triton-general")
    bare = replace(resources, "Deployment", "triton-general", changed(deployment, unspread))
    assert stack_violations(rule, bare) == [
        ("Deployment", "triton-general", "no pod anti-affinity or topology spread constraint")
    ]


def test_a_drain_that_would_stall_or_take_the_last_ready_triton_is_reported() -> None:
    resources = built(synth_stack("production"))
    rule = RULE["triton-drain"]
    assert stack_violations(rule, resources) == []

    def default_policy(p: dict[str, Any]) -> None:
        p["spec"].pop("unhealthyPodEvictionPolicy")

    pdb = find("production", "PodDisruptionBudget", "triton-ranker")
    stalling = replace(resources, "PodDisruptionBudget", "triton-ranker", changed(pdb, default_policy))
    assert stack_violations(rule, stalling) == [
        (
            "PodDisruptionBudget",
            "triton-ranker",
            "unhealthyPodEvictionPolicy is not AlwaysAllow: an unready Triton (a failed model load, a GPU fault) "
            "blocks every node drain",
        )
    ]

    def one_replica(p: dict[str, Any]) -> None:
        p["spec"]["minReplicaCount"] = 1

    scaled = find("production", "ScaledObject", "triton-ranker")
    single = replace(resources, "ScaledObject", "triton-ranker", changed(scaled, one_replica))
    assert stack_violations(rule, single) == [
        (
            "Deployment",
            "triton-ranker",
            "runs as few as 1 replicas (ScaledObject 'triton-ranker' minReplicaCount): a node drain takes the last "
            "ready pod; keep at least 2",
        )
    ]
    # Dev runs one replica by design: the floor is production's rule.
    assert stack_violations(rule, built(synth_stack("dev"))) == []


def test_a_namespace_without_default_deny_egress_is_reported() -> None:
    resources = built(synth_stack("production"))
    rule = RULE["namespace-egress-policy"]
    bare = replace(resources, "NetworkPolicy", "default-deny-egress", None)
    assert sorted(stack_violations(rule, bare)) == [
        (
            "Namespace",
            namespace,
            "runs pods but has no NetworkPolicy denying egress (podSelector {}, policyTypes [Egress])",
        )
        for namespace in ("gpu-system", "triton-production")
    ]


def test_ephemeral_storage_leaves_chart_objects_to_their_charts() -> None:
    deployment = find("production", "Deployment", "triton-general")

    def as_chart(p: dict[str, Any]) -> None:
        p["metadata"]["labels"]["app.kubernetes.io/part-of"] = "kube-prometheus-stack"
        triton(p)["resources"]["limits"].pop("ephemeral-storage")

    assert check("ephemeral-storage", changed(deployment, as_chart)) == []


DIGEST = "sha256:" + "0" * 64
BY_TAG = (
    "runs by tag; production runs every image by digest: `stackctl pin-images` resolves it into "
    "triton-platform:imageDigests (docs/deploying.md: Images by digest)"
)


def chart_object(kind: str, spec: dict[str, Any], environment: str | None) -> Resource:
    """An object of a chart: no labels of the platform's, so no environment label; the stack's environment."""
    props = {"kind": kind, "metadata": {"name": "x", "labels": {"app.kubernetes.io/part-of": "keda-operator"}}}
    return Resource(f"kubernetes:test:{kind}", {**props, "spec": spec}, False, {}, environment)


@pytest.mark.parametrize(
    ("kind", "spec", "where", "image"),
    [
        (
            "Deployment",
            {
                "template": {
                    "spec": {"containers": [{"name": "keda-operator", "image": "ghcr.io/kedacore/keda:2.20.2"}]}
                }
            },
            "container keda-operator",
            "ghcr.io/kedacore/keda:2.20.2",
        ),
        (
            "Prometheus",
            {"image": "quay.io/prometheus/prometheus:v3.7.3"},
            "spec.image",
            "quay.io/prometheus/prometheus:v3.7.3",
        ),
        (
            "Deployment",
            {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "operator",
                                "image": f"quay.io/prometheus-operator/prometheus-operator:v0.86.2@{DIGEST}",
                                "args": ["--prometheus-config-reloader=quay.io/prometheus-operator/reloader:v0.86.2"],
                            }
                        ]
                    }
                }
            },
            "container operator flag --prometheus-config-reloader",
            "quay.io/prometheus-operator/reloader:v0.86.2",
        ),
    ],
)
def test_production_refuses_a_chart_image_by_tag_wherever_it_runs(
    kind: str, spec: dict[str, Any], where: str, image: str
) -> None:
    """The charts' images too (issue: images resolved at deploy, charts' included): a chart object carries no
    environment label, so it takes its stack's; a dev stack's chart runs by tag."""
    assert check("production-image-digests", chart_object(kind, spec, "production")) == [
        f"{where} {BY_TAG.replace('runs by tag', f'runs {image} by tag')}"
    ]
    assert check("production-image-digests", chart_object(kind, spec, "dev")) == []


def test_an_object_of_no_known_stack_is_held_to_digests_only_if_the_platform_built_it() -> None:
    """Without a stack file the pack reads, the tier is production's, strict by default; but an object the
    platform did not build (a program of your own using other charts) keeps its images its owner's choice."""
    spec = {"image": "quay.io/prometheus/alertmanager:v0.29.0"}
    assert check("production-image-digests", chart_object("Alertmanager", spec, None)) == []
    ours = chart_object("Alertmanager", spec, None)
    labels = {"app.kubernetes.io/part-of": "triton-platform"}
    platform_built = Resource(ours.type, {**ours.props, "metadata": {"name": "x", "labels": labels}})
    assert check("production-image-digests", platform_built) == [
        f"spec.image {BY_TAG.replace('runs by tag', 'runs quay.io/prometheus/alertmanager:v0.29.0 by tag')}"
    ]


def test_a_namespace_without_network_policy_is_reported() -> None:
    resources = built(synth_stack("dev"))
    rule = RULE["namespace-network-policy"]
    bare = [r for r in resources if not (r.kind == "NetworkPolicy" and r.namespace == "triton-dev")]
    assert stack_violations(rule, bare) == [("Namespace", "triton-dev", "no NetworkPolicy in this namespace")]


def test_a_scaled_deployment_with_replicas_is_reported() -> None:
    resources = built(synth_stack("production"))
    deployment = find("production", "Deployment", "triton-ranker")
    fixed = changed(deployment, lambda p: p["spec"].update(replicas=3))
    assert stack_violations(
        RULE["keda-no-static-replicas"], replace(resources, "Deployment", "triton-ranker", fixed)
    ) == [("Deployment", "triton-ranker", "scaled by KEDA, so it must not set spec.replicas")]


def _live(replicas_owner: str) -> Callable[[dict[str, Any]], None]:
    """The Deployment as the API server returns it: replicas set, and owned by `replicas_owner`."""

    def edit(props: dict[str, Any]) -> None:
        props["spec"]["replicas"] = 1
        props["metadata"]["managedFields"] = [
            {"manager": "pulumi-kubernetes-7a1b2c3d", "operation": "Apply", "fieldsV1": {"f:spec": {"f:template": {}}}},
            {"manager": replicas_owner, "operation": "Update", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        ]

    return edit


def test_after_an_update_only_replicas_the_program_owns_are_reported() -> None:
    """After `pulumi up` the policy sees the live object: defaulted or HPA-written replicas are not the program's."""
    resources = built(synth_stack("production"))
    deployment = find("production", "Deployment", "triton-ranker")
    rule = RULE["keda-no-static-replicas"]
    by_hpa = changed(deployment, _live("kube-controller-manager"))
    assert stack_violations(rule, replace(resources, "Deployment", "triton-ranker", by_hpa)) == []
    by_program = changed(deployment, _live("pulumi-kubernetes-7a1b2c3d"))
    assert stack_violations(rule, replace(resources, "Deployment", "triton-ranker", by_program)) == [
        ("Deployment", "triton-ranker", "scaled by KEDA, so it must not set spec.replicas")
    ]


def test_declared_exceptions_silence_a_rule_and_carry_their_reason() -> None:
    plugin = find("production", "DaemonSet", "nvidia-device-plugin")
    found, reason = violations(RULE["no-host-access"], plugin)
    assert found == []
    assert reason == "the kubelet's device-plugin directory is a host path by design"
    # Without its annotation the same object is reported.
    bare = changed(plugin, lambda p: p["metadata"].pop("annotations"))
    assert violations(RULE["no-host-access"], bare) == (["volume device-plugins is a hostPath"], None)


def test_config_exceptions_name_kind_object_and_reason() -> None:
    config = {
        "triton-platform:policyExceptions": [
            {"policy": "no-load-balancer", "kind": "Service", "name": "triton-general", "reason": "x" * 20}
        ]
    }
    granted = granted_exceptions(config)
    assert granted == {("Service", "triton-general"): {"no-load-balancer": "x" * 20}}
    service = find("production", "Service", "triton-general")
    exposed = changed(service, lambda p: p["spec"].update(type="LoadBalancer"))
    allowed = Resource(exposed.type, exposed.props, granted=granted[("Service", "triton-general")])
    assert violations(RULE["no-load-balancer"], allowed) == ([], "x" * 20)


def test_objects_without_an_environment_label_get_production_rules() -> None:
    scaled = find("dev", "ScaledObject", "triton-general")
    unlabelled = changed(scaled, lambda p: p["metadata"].pop("labels"))
    assert unlabelled.production
    without_fallback = changed(unlabelled, lambda p: p["spec"].pop("fallback", None))
    assert "production ScaledObjects need a fallback (replicas to hold while metrics fail)" in check(
        "keda-scaling-safety", without_fallback
    )


def test_a_malformed_exception_annotation_exempts_nothing() -> None:
    plugin = find("production", "DaemonSet", "nvidia-device-plugin")
    broken = changed(plugin, lambda p: p["metadata"]["annotations"].update({EXCEPTIONS_ANNOTATION: "{not json"}))
    assert broken.exception("no-host-access") is None
    assert json.loads(plugin.metadata["annotations"][EXCEPTIONS_ANNOTATION])


def test_every_policy_is_in_the_policy_doc_table() -> None:
    doc = (PROJECT_ROOT / "docs" / "policy.md").read_text()
    for name in POLICY_NAMES:
        assert f"| `{name}` |" in doc, name


def test_the_policy_pack_uses_the_programs_sdk() -> None:
    def pins(path: str) -> dict[str, str]:
        lines = (PROJECT_ROOT / path).read_text().splitlines()
        return dict(line.split("==") for line in lines if "==" in line and not line.startswith("#"))

    program, pack = pins("requirements.txt"), pins("policy/requirements.txt")
    assert pack["pulumi"] == program["pulumi"]
    assert pack["pyyaml"] == program["pyyaml"]


def test_an_exception_naming_no_object_of_the_stack_is_reported() -> None:
    resources = built(synth_stack("production"))
    granted = {
        ("Deployment", "triton-general"): {"production-image-digests": "r" * 20},
        ("Deployment", "triton-generall"): {"no-host-access": "r" * 20},
        ("Ingress", "triton-general"): {"no-load-balancer": "r" * 20, "namespace-network-policy": "r" * 20},
    }
    assert unknown_exception_targets(granted, resources) == [
        "triton-platform:policyExceptions grants no-host-access to Deployment 'triton-generall', which is no object "
        "of this stack; did you mean 'triton-general'? an exception names an object by kind and metadata.name",
        "triton-platform:policyExceptions grants namespace-network-policy, no-load-balancer to Ingress "
        "'triton-general', which is no object of this stack; an exception names an object by kind and metadata.name",
    ]


def test_the_committed_exceptions_name_objects_of_their_stack() -> None:
    for stack in STACKS:
        result = synth_stack(stack)
        granted = granted_exceptions(
            {"triton-platform:policyExceptions": [e.model_dump() for e in result.stack.config.policy_exceptions]}
        )
        assert unknown_exception_targets(granted, built(result)) == []
