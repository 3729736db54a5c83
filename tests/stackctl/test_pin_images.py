"""`stackctl pin-images`: the images a stack runs, each tag resolved to its digest under imageDigests.

The unit tests list images from the program's objects (and chart-like ones made here), resolve them with a fake
resolver or a fake `crane` script, and write the stack file; the real_tools test runs go-containerregistry's own
registry on loopback and crane against it, for production with its charts.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import stat
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline import image_digests as pins
from offline.chart_template import PROJECT_HELM, HelmTemplater
from offline.mock_runtime import Registered
from offline.synth import SynthResult, synthesize
from platform_config.paths import stack_file
from policy.resource import Resource
from policy.rules import RULES, violations
from stackctl.commands.pin_images import pinned_text
from stackctl.main import main
from tests.conftest import synth_stack
from tests.support import local_registry
from tests.support.local_cluster import SHARED_CHARTS

DIGEST = "sha256:" + "1" * 64
TODAY = f"{datetime.now(UTC):%Y-%m-%d}"
NOTE = f"  # resolved by stackctl pin-images, {TODAY}"


class FakeRegistry:
    """A resolver answering from a dict of reference -> digest; any other reference is a missing tag."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, bool]] = []

    def digest(self, ref: str, insecure: bool) -> str:
        self.asked.append((ref, insecure))
        if ref not in self.answers:
            raise pins.ResolveError(f"`crane digest {ref}` failed: Error: MANIFEST_UNKNOWN: {ref}")
        return self.answers[ref]


def digest_of(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def chart_object(kind: str, name: str, props: dict[str, Any]) -> Registered:
    """An object as a chart's ConfigGroup lists it under synth (offline/synth.py, group_members)."""
    type_ = f"kubernetes:{'apps/v1' if kind == 'Deployment' else 'monitoring.coreos.com/v1'}:{kind}"
    return Registered(
        urn=f"urn:pulumi:production::triton-platform::{type_}::{name}",
        type=type_,
        name=name,
        parent="",
        custom=True,
        provider="",
        protect=False,
        retain_on_delete=False,
        dependencies=(),
        inputs={"apiVersion": "v1", "kind": kind, "metadata": {"name": name}, **props},
    )


OPERATOR = chart_object(
    "Deployment",
    "kube-prometheus-stack-operator",
    {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "operator",
                            "image": "quay.io/prometheus-operator/prometheus-operator:v0.86.2",
                            "args": [
                                "--prometheus-config-reloader=quay.io/prometheus-operator/prometheus-config-reloader:v0.86.2"
                            ],
                        }
                    ]
                }
            }
        }
    },
)
PROMETHEUS = chart_object(
    "Prometheus", "kube-prometheus-stack-prometheus", {"spec": {"image": "quay.io/prometheus/prometheus:v3.7.3"}}
)
BY_DIGEST = chart_object(
    "Deployment",
    "already-by-digest",
    {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": f"ghcr.io/x/y:1.0@{DIGEST}"}]}}}},
)


def production_with_charts(*extra: Registered) -> SynthResult:
    """Production's own objects (no Helm: the mocks' run) and chart-like objects as a chart's group lists them."""
    result = synth_stack("production")
    return replace(result, resources=[*result.resources, OPERATOR, PROMETHEUS, BY_DIGEST, *extra])


# --- listing -------------------------------------------------------------------------------------------------------


def test_every_running_image_is_listed_once_with_its_state_and_places() -> None:
    result = production_with_charts()
    digests = dict(result.stack.config.image_digests)
    images = {image.name: image for image in pins.list_images(result, digests)}
    # The program's own, pinned in the stack file: it names them <tag>@<digest>, listed under their tag.
    assert images["registry.k8s.io/pause:3.10"].state == "reviewed"
    assert images["registry.k8s.io/pause:3.10"].pinned == digests["registry.k8s.io/pause:3.10"]
    # The charts': containers, an operator's image flag, an operator resource's spec.image.
    assert images["quay.io/prometheus-operator/prometheus-operator:v0.86.2"].state == "unpinned"
    assert images["quay.io/prometheus-operator/prometheus-config-reloader:v0.86.2"].places == [
        "Deployment kube-prometheus-stack-operator container operator flag --prometheus-config-reloader"
    ]
    assert images["quay.io/prometheus/prometheus:v3.7.3"].places == [
        "Prometheus kube-prometheus-stack-prometheus spec.image"
    ]
    assert images[f"ghcr.io/x/y:1.0@{DIGEST}"].state == "by digest"
    # Triton's image, once for its two Deployments' init containers and containers.
    triton = next(image for name, image in images.items() if name.startswith("nvcr.io/nvidia/tritonserver:"))
    assert len(triton.places) == 4
    assert {image.state for image in images.values()} == {"reviewed", "unpinned", "by digest"}


def test_a_pin_the_program_does_not_apply_is_a_notice() -> None:
    result = production_with_charts()
    digests = {**result.stack.config.image_digests, "quay.io/prometheus/prometheus:v3.7.3": DIGEST}
    outcome = pins.listed(result, digests)
    prometheus = next(image for image in outcome.images if image.name == "quay.io/prometheus/prometheus:v3.7.3")
    assert prometheus.state == "reviewed"
    assert (
        "quay.io/prometheus/prometheus:v3.7.3 is pinned in triton-platform:imageDigests, but Prometheus "
        "kube-prometheus-stack-prometheus spec.image still run it by tag: the program does not apply the pin there"
    ) in outcome.notices


# --- references and mirrors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "registry", "path"),
    [
        ("nvcr.io/nvidia/tritonserver:24.10-py3", "nvcr.io", "nvidia/tritonserver:24.10-py3"),
        ("docker.io/grafana/grafana:12.3.0", "docker.io", "grafana/grafana:12.3.0"),
        ("grafana/grafana:12.3.0", "docker.io", "grafana/grafana:12.3.0"),
        ("busybox:1.36", "docker.io", "library/busybox:1.36"),
        ("index.docker.io/busybox:1.36", "docker.io", "library/busybox:1.36"),
        ("localhost:5000/team/app:1", "localhost:5000", "team/app:1"),
    ],
)
def test_an_images_registry_is_distributions_with_docker_hubs_names_made_explicit(
    image: str, registry: str, path: str
) -> None:
    assert pins.registry_and_path(image) == (registry, path)


def test_a_mirror_is_asked_for_its_registrys_images_over_https_unless_on_loopback() -> None:
    mirrors = pins.mirrors_by_registry(
        [pins.parse_mirror("docker.io=mirror.example.com:5000"), pins.parse_mirror("quay.io=127.0.0.1:5001")]
    )
    assert pins.reference("busybox:1.36", mirrors) == ("mirror.example.com:5000/library/busybox:1.36", False)
    assert pins.reference("quay.io/prometheus/prometheus:v3.7.3", mirrors) == (
        "127.0.0.1:5001/prometheus/prometheus:v3.7.3",
        True,
    )
    assert pins.reference("nvcr.io/nvidia/tritonserver:24.10-py3", mirrors) == (
        "nvcr.io/nvidia/tritonserver:24.10-py3",
        False,
    )
    assert all(pins.parse_mirror(f"r.io={host}").loopback for host in ("localhost:1", "[::1]:5000", "x.localhost"))


BAD_MIRRORS = {
    "docker.io": "--mirror 'docker.io' is not <registry>=<host[:port]>",
    "=mirror:5000": "--mirror '=mirror:5000' is not <registry>=<host[:port]>",
    "docker.io=http://127.0.0.1:5000": "the mirror 'http://127.0.0.1:5000' has a scheme",
    "docker.io=mirror.example.com/path": "the mirror 'mirror.example.com/path' is not a host[:port]",
    "docker.io=mirror:70000": "the mirror 'mirror:70000' has port 70000; a port is from 1 to 65535",
    "docker.io=10.0.0.7:5000": "crane reaches a private address such as '10.0.0.7:5000' over plain HTTP",
}


@pytest.mark.parametrize("value", BAD_MIRRORS)
def test_a_bad_mirror_is_a_usage_error_naming_the_value_and_what_is_allowed(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["pin-images", "--stack", "dev", "--mirror", value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "stackctl pin-images: error: argument --mirror: " in err
    assert BAD_MIRRORS[value] in err
    assert "Traceback" not in err


def test_a_registry_mirrored_twice_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["pin-images", "--stack", "dev", "--check", "--mirror", "quay.io=a.example", "--mirror", "quay.io=b.example"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "stackctl pin-images: --mirror gives registry 'quay.io' twice (a.example, b.example); one mirror each\n"
    )


CRANE_SCHEMES = {
    # go-containerregistry v0.22.1 pkg/name/registry.go, Registry.Scheme: plain HTTP may answer for these...
    "10.0.0.7:5000": True,
    "172.16.4.1": True,
    "192.168.1.10:443": True,
    "localhost:5000": True,
    "registry.localhost": True,
    "registry.localhost:5000": True,
    "127.0.0.1:5000": True,
    "::1": True,
    "[::1]:5000": True,
    # ...and HTTPS alone for these: the rules are crane's, not the addresses' meaning.
    "172.32.0.1": False,
    "127.0.0.2:5000": False,
    "registry.local": False,
    "localhost": False,
    "[fd00::1]:5000": False,
    "[2001:db8::1]:5000": False,
    "mirror.example.com": False,
}


@pytest.mark.parametrize(("registry", "plain"), CRANE_SCHEMES.items())
def test_where_crane_may_speak_plain_http_follows_its_own_rules(registry: str, plain: bool) -> None:
    assert pins.crane_plain_http(registry) is plain


def test_an_image_at_a_private_address_is_refused_not_asked_over_plain_http() -> None:
    private, local = "10.0.0.7:5000/team/server:1.0", "localhost:5000/team/server:1.0"
    result = production_with_charts(
        chart_object(
            "Deployment",
            "private",
            {
                "spec": {
                    "template": {
                        "spec": {"containers": [{"name": "a", "image": private}, {"name": "b", "image": local}]}
                    }
                }
            },
        )
    )
    digests = dict(result.stack.config.image_digests)
    registry = FakeRegistry({image.name: digest_of(image.name) for image in pins.list_images(result, digests)})
    outcome = pins.resolve(result, digests, {}, registry)
    assert outcome.failures == [
        f"{private} (Deployment private container a): crane would ask 10.0.0.7:5000 over plain HTTP (an RFC 1918 "
        "address: go-containerregistry pkg/name/registry.go, Registry.Scheme), where anyone on the network path "
        "can answer with another image's digest, and that digest is what production would run; serve the registry "
        "over HTTPS by a DNS name, or resolve it at a loopback mirror (--mirror 10.0.0.7:5000=localhost:PORT)"
    ]
    asked = [ref for ref, _ in registry.asked]
    assert private not in asked
    assert local in asked  # loopback: this machine
    assert private not in outcome.resolved


def test_a_mirror_that_stands_in_for_no_registry_of_the_stack_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["pin-images", "--stack", "dev", "--check", "--mirror", "qauy.io=mirror.example.com"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "stackctl pin-images: --mirror qauy.io=mirror.example.com: no image the stack asks a registry for is from "
        "'qauy.io' (they are from "
    )
    assert err.endswith("); name the registry as the images do, or leave the mirror out\n")
    assert "nvcr.io" in err


# --- resolving -------------------------------------------------------------------------------------------------


def test_every_failure_of_a_run_is_named_and_a_moved_tag_is_a_notice() -> None:
    result = production_with_charts()
    digests = dict(result.stack.config.image_digests)
    moved = "registry.k8s.io/pause:3.10"
    answers = {image.name: digest_of(image.name) for image in pins.list_images(result, digests)}
    answers.update({name: digest for name, digest in digests.items() if name != moved})
    missing = ["quay.io/prometheus/prometheus:v3.7.3", "quay.io/prometheus-operator/prometheus-operator:v0.86.2"]
    for name in missing:
        del answers[name]
    registry = FakeRegistry(answers)
    outcome = pins.resolve(result, digests, {}, registry)
    assert sorted(outcome.failures) == [
        "quay.io/prometheus-operator/prometheus-operator:v0.86.2 (Deployment kube-prometheus-stack-operator "
        "container operator): `crane digest quay.io/prometheus-operator/prometheus-operator:v0.86.2` failed: "
        "Error: MANIFEST_UNKNOWN: quay.io/prometheus-operator/prometheus-operator:v0.86.2",
        "quay.io/prometheus/prometheus:v3.7.3 (Prometheus kube-prometheus-stack-prometheus spec.image): `crane "
        "digest quay.io/prometheus/prometheus:v3.7.3` failed: Error: MANIFEST_UNKNOWN: "
        "quay.io/prometheus/prometheus:v3.7.3",
    ]
    assert outcome.notices == [
        f"{moved} moved: the registry now answers {digest_of(moved)}, triton-platform:imageDigests pins "
        f"{digests[moved]}; the pin is kept (it was reviewed); to take the new image, delete its line and run "
        "stackctl pin-images again"
    ]
    # Nothing by digest where named is asked for; every tag is, once.
    asked = [ref for ref, _ in registry.asked]
    assert sorted(asked) == sorted(set(asked))
    assert not any("@" in ref for ref in asked)
    assert "quay.io/prometheus-operator/prometheus-config-reloader:v0.86.2" in outcome.resolved


def test_an_image_without_a_tag_cannot_be_pinned_under_its_tag() -> None:
    latest = chart_object(
        "Deployment", "loose", {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    )
    result = production_with_charts(latest)
    outcome = pins.resolve(result, result.stack.config.image_digests, {}, FakeRegistry({}))
    problem = next(failure for failure in outcome.failures if failure.startswith("busybox "))
    assert problem.startswith(
        "busybox (Deployment loose container c) cannot be pinned under triton-platform:imageDigests, whose keys are "
        "images named by their tag: 'busybox' is not an image named by its tag"
    )


# --- writing ---------------------------------------------------------------------------------------------------


def comments(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("#")]


def test_new_pins_go_under_image_digests_in_name_order_with_every_comment_kept() -> None:
    before = stack_file("production").read_text()
    resolved = {"quay.io/prometheus/prometheus:v3.7.3": DIGEST, "ghcr.io/kedacore/keda:2.20.2": DIGEST}
    after = pinned_text(before, resolved, f"resolved by stackctl pin-images, {TODAY}")
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert added == [f"    {name}: {DIGEST}{NOTE}" for name in sorted(resolved)]
    assert comments(after) == comments(before)
    loaded = yaml.safe_load(after)["config"]["triton-platform:imageDigests"]
    assert loaded == {**yaml.safe_load(before)["config"]["triton-platform:imageDigests"], **resolved}


def test_comments_below_image_digests_stay_with_the_key_they_describe() -> None:
    before = (
        "config:\n"
        "  triton-platform:environment: production\n"
        "  # Pinned by stackctl pin-images.\n"
        "  triton-platform:imageDigests:\n"
        "    # The pause image.\n"
        f"    registry.k8s.io/pause:3.10: {DIGEST}  # reviewed\n"
        "  # Why the exceptions are here.\n"
        "  triton-platform:policyExceptions: []\n"
    )
    after = pinned_text(before, {"quay.io/a/b:1": DIGEST}, "note")
    assert after == before.replace(
        "  # Why the exceptions", f"    quay.io/a/b:1: {DIGEST}  # note\n  # Why the exceptions"
    )


def test_a_stack_without_image_digests_gets_the_section_above_the_files_last_comment() -> None:
    before = stack_file("dev").read_text()
    after = pinned_text(before, {"quay.io/a/b:1": DIGEST}, "note")
    tail = before.splitlines()[-2:]  # dev's last comment and the key it describes
    assert after.splitlines()[-4:] == ["  triton-platform:imageDigests:", f"    quay.io/a/b:1: {DIGEST}  # note", *tail]


# --- the command, with a fake crane ------------------------------------------------------------------------------

FAKE_CRANE = """#!/bin/sh
# crane digest [--insecure] REF: REF's sha256, or crane's error for a reference holding 'missing'.
for ref; do :; done
case "$ref" in
  *missing*) echo "2026/01/01 00:00:00 HEAD request failed" >&2
             echo "Error: GET https://$ref: MANIFEST_UNKNOWN: manifest unknown" >&2; exit 1 ;;
esac
printf '%s' "$ref" | sha256sum | sed 's/^/sha256:/; s/ .*//'
"""


@pytest.fixture
def fake_crane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    crane = tmp_path / "bin" / "fake-crane"  # not "crane": the real-tools guard knows that name
    crane.parent.mkdir()
    crane.write_text(FAKE_CRANE)
    crane.chmod(crane.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(pins.CRANE_ENV, str(crane))
    return crane


def copied(stack: str, folder: Path, edit: str = "") -> Path:
    path = folder / f"Pulumi.{stack}.yaml"
    path.write_text(stack_file(stack).read_text() + edit)
    return path


def run_command(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_the_command_writes_what_crane_answers_and_check_then_passes(fake_crane: Path, tmp_path: Path) -> None:
    path = copied("staging", tmp_path)
    before = path.read_text()
    code, out, err = run_command(["pin-images", "--config", str(path), "--check"])
    assert (code, path.read_text()) == (1, before)
    unpinned = re.findall(r"^  would resolve (\S+) ", out, re.MULTILINE)
    assert unpinned, out
    code, out, err = run_command(["pin-images", "--config", str(path), "--mirror", "nvcr.io=localhost:5000"])
    assert code == 0, err
    pinned = yaml.safe_load(path.read_text())["config"]["triton-platform:imageDigests"]
    mirror = {"nvcr.io": pins.parse_mirror("nvcr.io=localhost:5000")}
    expected = {image: digest_of(pins.reference(image, mirror)[0]) for image in unpinned}
    assert pinned == expected
    assert comments(path.read_text())[: len(comments(before))] == comments(before)
    assert f"wrote {len(unpinned)} digests under triton-platform:imageDigests in {path}" in out
    code, out, err = run_command(["pin-images", "--config", str(path), "--check", "--json"])
    result = json.loads(out)
    assert (code, result["passed"], result["written"]) == (0, True, False)
    assert {row["image"]: row["digest"] for row in result["images"]} == expected


def test_a_tag_crane_cannot_resolve_is_named_with_cranes_error_and_nothing_is_written(
    fake_crane: Path, tmp_path: Path
) -> None:
    path = copied("staging", tmp_path)
    before = path.read_text()
    # Every tag at a mirror whose name makes the fake crane answer as for a tag the registry lacks.
    argv = ["pin-images", "--config", str(path), "--mirror", "nvcr.io=missing.example"]
    code, _, err = run_command(argv)
    assert (code, path.read_text()) == (2, before)
    lines = err.splitlines()
    assert lines[-1].endswith(f"unpinned images could not be resolved; {path} is left as it is")
    failure = next(line for line in lines if "nvcr.io/nvidia/tritonserver:" in line)
    assert re.fullmatch(
        r"stackctl pin-images: nvcr\.io/nvidia/tritonserver:\S+ \(Deployment \S+ .*\): `crane digest "
        r"missing\.example/nvidia/tritonserver:\S+` failed: Error: GET https://missing\.example/nvidia/tritonserver"
        r":\S+: MANIFEST_UNKNOWN: manifest unknown",
        failure,
    ), failure


def test_crane_missing_is_named_with_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(pins.CRANE_ENV, raising=False)
    monkeypatch.setattr(pins, "PROJECT_CRANE", tmp_path / ".tools" / "bin" / "crane-v0.22.1")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["pin-images", "--stack", "staging"]) == 2
    assert capsys.readouterr().err == (
        "stackctl pin-images: crane, which resolves each tag to its digest, is missing: TRITON_CRANE is unset, "
        f"{tmp_path}/.tools/bin/crane-v0.22.1 is not built and no `crane` is on PATH; run `make crane`, or install "
        "it with `go install github.com/google/go-containerregistry/cmd/crane@v0.22.1` (go-containerregistry's "
        "crane: https://github.com/google/go-containerregistry/blob/main/cmd/crane/README.md)\n"
    )


# --- the real tools: go-containerregistry's registry on loopback, crane, production with its charts ----------


@pytest.fixture
def loopback_registry() -> Iterator[str]:
    with local_registry.loopback_registry() as registry:
        yield registry


def production_run(argv: list[str]) -> tuple[int, str, str]:
    return run_command(["pin-images", *argv])


@pytest.mark.real_tools
def test_production_is_pinned_from_a_loopback_registry_and_the_policy_then_passes(
    loopback_registry: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_CHART_MIRROR", str(SHARED_CHARTS))
    monkeypatch.setenv(pins.CRANE_ENV, str(local_registry.CRANE))
    path = copied("production", tmp_path)
    before = path.read_text()
    code, out, _ = production_run(["--config", str(path), "--check", "--json"])
    listed = [row for row in json.loads(out)["images"] if row["state"] != "by digest"]
    assert code == 1
    assert any(row["state"] == "unpinned" for row in listed)
    # Every registry the stack names, mirrored by the one loopback registry: their repositories must not collide.
    paths = {row["image"]: pins.registry_and_path(row["image"]) for row in listed}
    assert len({path for _, path in paths.values()}) == len(paths)
    mirrors = [f"--mirror={registry}={loopback_registry}" for registry in sorted({r for r, _ in paths.values()})]
    pushed = tmp_path / "layers"
    pushed.mkdir()
    held_back = next(row["image"] for row in listed if row["image"].startswith("nvcr.io/nvidia/tritonserver:"))
    digests = {
        image: local_registry.push(loopback_registry, rest, pushed)
        for image, (_, rest) in paths.items()
        if image != held_back
    }

    # A tag the registry does not have: named with crane's own error, nothing written.
    code, _, err = production_run(["--config", str(path), *mirrors])
    assert (code, path.read_text()) == (2, before)
    _, rest = paths[held_back]
    assert re.search(
        rf"^stackctl pin-images: {re.escape(held_back)} \(Deployment triton-general .*\): `crane digest "
        rf"{re.escape(loopback_registry)}/{re.escape(rest)}` failed: Error: GET http://{re.escape(loopback_registry)}"
        rf"/v2/nvidia/tritonserver/manifests/[^ ]+: NAME_UNKNOWN: Unknown name$",
        err,
        re.MULTILINE,
    ), err

    digests[held_back] = local_registry.push(loopback_registry, rest, pushed)
    code, out, err = production_run(["--config", str(path), *mirrors])
    assert code == 0, err
    after = path.read_text()
    written = yaml.safe_load(after)["config"]["triton-platform:imageDigests"]
    reviewed = yaml.safe_load(before)["config"]["triton-platform:imageDigests"]
    unpinned = [row["image"] for row in listed if row["state"] == "unpinned"]
    # What crane answers for the pushed images, read from the registry; the reviewed pins kept as they were.
    assert written == {**reviewed, **{image: digests[image] for image in unpinned}}
    assert comments(after)[: len(comments(before))] == comments(before)
    assert [line for line in after.splitlines() if line not in before.splitlines()] == [
        f"    {image}: {digests[image]}{NOTE}" for image in sorted(unpinned)
    ]
    # The loopback registry's images are not the ones reviewed: every reviewed tag "moved".
    for image in reviewed:
        assert f"stackctl pin-images: notice: {image} moved: the registry now answers {digests[image]}" in err

    # The program runs what was written: the policy pack's digest rule passes every object, the charts' included.
    result = synthesize(path, "production", HelmTemplater(str(PROJECT_HELM), SHARED_CHARTS))
    rule = next(rule for rule in RULES if rule.name == pins.POLICY)
    found = [
        f"{resource.kind} {resource.name}: {message}"
        for registered in result.resources
        if registered.type.startswith("kubernetes:")
        for resource in [Resource(registered.type, registered.inputs, registered.protect, environment="production")]
        for message in violations(rule, resource)[0]
    ]
    assert found == []
