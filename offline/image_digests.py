"""`stackctl pin-images`: every image a stack would run, each tag resolved to its digest into `imageDigests`.

The images are those the policy pack's `production-image-digests` rule names (`policy.rules.running_images`) on
every Kubernetes object the program registers, the charts' objects included (`offline.synth` with Helm). Each is:
- by digest where it is named (`<image>@sha256:...`): pinned, nothing to do;
- a tag `triton-platform:imageDigests` pins already (the program then names it `<tag>@<digest>`): a reviewed pin,
  kept; the registry is asked all the same, and a different answer is a notice that the tag moved;
- any other tag: resolved with crane (`crane digest <ref>`: the digest of what the tag names, a multi-arch image's
  index, so that every node pulls its own platform's image from it; go-containerregistry cmd/crane/doc/
  crane_digest.md) and written under `imageDigests` by the planner's round-trip patch (planner/stack_patch.py),
  every comment and key kept where it was.

A pull-through mirror (`--mirror <registry>=<host[:port]>`) is asked instead of the registry it mirrors, and the
digest recorded under the original name: a mirror serves the content it mirrors, byte for byte, so the digest is
the same. Plain HTTP is only for a loopback mirror (crane's `--insecure`); crane itself may speak plain HTTP to a
private (RFC 1918) address whatever it is told (go-containerregistry pkg/name/registry.go, `Registry.Scheme`), so
such a mirror is refused, and so is an image whose own registry is one (`crane_plain_http`). A mirror that stands
in for no registry the stack's images are asked at is refused before any registry is asked.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from offline.synth import KUBERNETES_PREFIX, SynthResult
from platform_config.errors import bounded
from platform_config.paths import PROJECT_ROOT, display_path
from policy.resource import Resource
from policy.resource_rules import running_images
from triton_platform.args.formats import tagged_image_problem

DIGESTS_KEY = "triton-platform:imageDigests"
POLICY = "production-image-digests"
SHA256 = re.compile(r"sha256:[0-9a-f]{64}")

CRANE_VERSION = "v0.22.1"
"""The crane the Makefile builds (CRANE_VERSION there) and the deploy workflow installs."""
CRANE_INSTALL = f"go install github.com/google/go-containerregistry/cmd/crane@{CRANE_VERSION}"
CRANE_README = "https://github.com/google/go-containerregistry/blob/main/cmd/crane/README.md"
CRANE_ENV = "TRITON_CRANE"
PROJECT_CRANE = PROJECT_ROOT / ".tools" / "bin" / f"crane-{CRANE_VERSION}"
CRANE_SECONDS = 120
"""How long one `crane digest` may take: a registry that answers at all answers in seconds."""
CRANE_WORKERS = 8
"""Digests asked at once: each is one or two HTTP requests, mostly waiting."""

DOCKER_HUB = "docker.io"
"""The registry of an image named without one (distribution/reference's `docker.io`; crane's `index.docker.io`)."""

# A registry as a reference names it: a host (a DNS name, an IPv4 address or a bracketed IPv6 one) and an optional
# port (distribution/reference reference.go, `domainAndPort`).
_HOST = (
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])"
)
REGISTRY = re.compile(rf"(?P<host>{_HOST})(?::(?P<port>[0-9]{{1,5}}))?")


class CraneMissingError(ValueError):
    """No crane to resolve digests with."""


class ResolveError(Exception):
    """crane could not resolve a reference: its own error line."""


class Resolver(Protocol):
    def digest(self, ref: str, insecure: bool) -> str:
        """The digest `ref` names now (`sha256:...`); ResolveError naming why not."""


@dataclass(frozen=True)
class Mirror:
    registry: str
    host: str
    """`host[:port]` of the mirror."""

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)


def split_host(value: str) -> tuple[str, int | None]:
    """(host, port) of `host[:port]`; ValueError naming what is wrong."""
    found = REGISTRY.fullmatch(value)
    if found is None:
        raise ValueError(
            f"{value!r} is not a host[:port] (a DNS name or an IP address, then an optional :port; no scheme, no path)"
        )
    port = int(found["port"]) if found["port"] is not None else None
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"{value!r} has port {port}; a port is from 1 to 65535")
    return found["host"].strip("[]"), port


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def is_loopback(host_port: str) -> bool:
    """`localhost`, a `.localhost` name (RFC 6761: always this machine), 127.0.0.0/8 or ::1."""
    host, _ = split_host(host_port)
    address = _address(host)
    if address is not None:
        return address.is_loopback
    return host.lower() == "localhost" or host.lower().endswith(".localhost")


RFC1918 = tuple(ipaddress.ip_network(block) for block in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


_CRANE_LOCAL = re.compile(r".*\.localhost(?::\d{1,5})?")
_CRANE_LOOPBACK = re.compile(r"127\.0\.0\.1(?::\d{1,5})?")
_CRANE_IPV6_LOOPBACK = re.compile(r"::1|\[::1\](?::\d{1,5})?")


def crane_plain_http(registry: str) -> bool:
    """Whether crane (CRANE_VERSION) may ask this registry over plain HTTP by its own rules, told nothing: an
    RFC 1918 IPv4 address, `localhost:<port>`, a `.localhost` name, 127.0.0.1 or ::1, as it reads the registry's
    name (go-containerregistry v0.22.1 pkg/name/registry.go, `Registry.Scheme` and `isRFC1918`; then
    pkg/v1/remote/transport/ping.go races HTTPS with plain HTTP and takes the HTTP answer when HTTPS fails)."""
    address = _address(registry.split(":", maxsplit=1)[0])
    if isinstance(address, ipaddress.IPv4Address) and any(address in block for block in RFC1918):
        return True
    return registry.startswith("localhost:") or any(
        rule.fullmatch(registry) for rule in (_CRANE_LOCAL, _CRANE_LOOPBACK, _CRANE_IPV6_LOOPBACK)
    )


def parse_mirror(value: str) -> Mirror:
    """`<registry>=<host[:port]>`; ValueError naming the value and what is allowed."""
    allowed = "give --mirror <registry>=<host[:port]>, e.g. --mirror docker.io=mirror.example.com:5000"
    registry, equals, host = value.partition("=")
    if not equals or not registry or not host:
        raise ValueError(f"--mirror {value!r} is not <registry>=<host[:port]>; {allowed}")
    for part, what in ((registry, "registry"), (host, "mirror")):
        if "://" in part:
            raise ValueError(
                f"--mirror {value!r}: the {what} {part!r} has a scheme; crane speaks HTTPS, and plain HTTP only to a "
                f"loopback mirror: {allowed}"
            )
        try:
            split_host(part)
        except ValueError as err:
            raise ValueError(f"--mirror {value!r}: the {what} {err}; {allowed}") from None
    address = _address(split_host(host)[0])
    if address is not None and not address.is_loopback and address.is_private:
        raise ValueError(
            f"--mirror {value!r}: crane reaches a private address such as {host!r} over plain HTTP whatever it is "
            "told (go-containerregistry pkg/name/registry.go, Registry.Scheme), and plain HTTP is only for a "
            "loopback mirror; give the mirror's DNS name, served over HTTPS"
        )
    return Mirror(registry.lower(), host)


def mirrors_by_registry(mirrors: Sequence[Mirror]) -> dict[str, Mirror]:
    """The mirrors by the registry they stand in for; ValueError for a registry given twice."""
    out: dict[str, Mirror] = {}
    for mirror in mirrors:
        if mirror.registry in out:
            raise ValueError(
                f"--mirror gives registry {mirror.registry!r} twice ({out[mirror.registry].host}, {mirror.host}); "
                "one mirror each"
            )
        out[mirror.registry] = mirror
    return out


def registry_and_path(image: str) -> tuple[str, str]:
    """An image's registry and the rest (`<repository>:<tag>`), Docker Hub's implicit names made explicit
    (distribution/reference normalize.go: no registry is docker.io, a one-part repository is under library/)."""
    first, slash, rest = image.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, path = first.lower(), rest
    else:
        registry, path = DOCKER_HUB, image
    if registry in (DOCKER_HUB, "index.docker.io") and "/" not in path:
        path = f"library/{path}"
    return ("docker.io" if registry == "index.docker.io" else registry), path


def reference(image: str, mirrors: Mapping[str, Mirror]) -> tuple[str, bool]:
    """The reference crane asks for `image` and whether over plain HTTP: at its registry's mirror if given."""
    registry, path = registry_and_path(image)
    mirror = mirrors.get(registry)
    if mirror is None:
        return image, False
    return f"{mirror.host}/{path}", mirror.loopback


@dataclass(frozen=True)
class Crane:
    """`crane digest`, the binary found by `find_crane`."""

    binary: str

    def digest(self, ref: str, insecure: bool) -> str:
        command = [self.binary, "digest", *(["--insecure"] if insecure else []), ref]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=CRANE_SECONDS, check=False)
        except subprocess.TimeoutExpired:
            raise ResolveError(f"`crane digest {ref}` gave no answer within {CRANE_SECONDS} s") from None
        answer = done.stdout.strip()
        if done.returncode != 0:
            raise ResolveError(f"`crane digest {ref}` failed: {error_line(done.stderr)}")
        if not SHA256.fullmatch(answer):
            raise ResolveError(f"`crane digest {ref}` answered {answer[:100]!r}, not a sha256:<64 hex> digest")
        return answer


def error_line(stderr: str) -> str:
    """crane's own error line (cobra prints `Error: ...` last), else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error:")]
    return bounded((errors or lines or ["(no message)"])[-1])


def find_crane(environment: Mapping[str, str] | None = None) -> Crane:
    """`TRITON_CRANE`; else the crane `make crane` builds; else a crane on PATH. CraneMissingError otherwise."""
    env = os.environ if environment is None else environment
    named = env.get(CRANE_ENV)
    if named:
        if Path(named).is_file():
            return Crane(named)
        why = f"{CRANE_ENV}={named} is not a file"
    elif PROJECT_CRANE.is_file():
        return Crane(str(PROJECT_CRANE))
    else:
        found = shutil.which("crane", path=env.get("PATH"))
        if found is not None:
            return Crane(found)
        why = f"{CRANE_ENV} is unset, {display_path(PROJECT_CRANE)} is not built and no `crane` is on PATH"
    raise CraneMissingError(
        f"crane, which resolves each tag to its digest, is missing: {why}; run `make crane`, or install it with "
        f"`{CRANE_INSTALL}` (go-containerregistry's crane: {CRANE_README})"
    )


State = Literal["by digest", "reviewed", "unpinned"]
STATES: tuple[State, ...] = ("by digest", "reviewed", "unpinned")


@dataclass
class Image:
    """One image the stack runs, by the name its objects give it (a reviewed pin's digest taken off)."""

    name: str
    state: State
    places: list[str] = field(default_factory=list)
    """`<kind> <name> <where>` of each object and container that runs it."""
    pinned: str | None = None
    """The digest it runs by: its reviewed pin, or the one written where it is named."""
    unapplied: list[str] = field(default_factory=list)
    """The places that run a reviewed pin's tag all the same: the program does not apply the pin there."""


def list_images(result: SynthResult, digests: Mapping[str, str]) -> list[Image]:
    """Every image the stack's objects run, once each, in the order the objects first name them."""
    found: dict[str, Image] = {}
    for registered in result.resources:
        if not registered.type.startswith(KUBERNETES_PREFIX):
            continue
        resource = Resource(registered.type, registered.inputs, registered.protect)
        for where, named in running_images(resource):
            base, at, digest = named.partition("@")
            image = found.get(base if base in digests else named)
            if image is None:
                if base in digests:
                    image = Image(base, "reviewed", pinned=digests[base])
                elif at:
                    image = Image(named, "by digest", pinned=digest)
                else:
                    image = Image(named, "unpinned")
                found[image.name] = image
            place = f"{resource.kind} {resource.name} {where}"
            image.places.append(place)
            if image.state == "reviewed" and not at:
                image.unapplied.append(place)
    return list(found.values())


@dataclass
class Outcome:
    images: list[Image]
    resolved: dict[str, str] = field(default_factory=dict)
    """New pins: image -> digest."""
    failures: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def _places(image: Image) -> str:
    shown = ", ".join(image.places[:3])
    return shown + (f" and {len(image.places) - 3} more" if len(image.places) > 3 else "")


def unrecordable(image: Image) -> str | None:
    """Why `image` cannot be a key of imageDigests (no tag, `latest`), or None."""
    problem = tagged_image_problem(image.name)
    if problem is None:
        return None
    return (
        f"{image.name} ({_places(image)}) cannot be pinned under {DIGESTS_KEY}, whose keys are images named by "
        f"their tag: {problem}"
    )


def resolve(
    result: SynthResult, digests: Mapping[str, str], mirrors: Mapping[str, Mirror], resolver: Resolver
) -> Outcome:
    """Each unpinned image resolved, each reviewed pin checked against its registry; every failure, not the first."""
    outcome = Outcome(list_images(result, digests))
    asked = [image for image in outcome.images if image.state != "by digest"]
    todo: list[Image] = []
    for image in asked:
        problem = unrecordable(image) if image.state == "unpinned" else None
        if problem:
            outcome.failures.append(problem)
        else:
            todo.append(image)

    for image in list(todo):
        registry = reference(image.name, mirrors)[0].partition("/")[0]
        if crane_plain_http(registry) and not is_loopback(registry):
            todo.remove(image)
            outcome.failures.append(
                f"{image.name} ({_places(image)}): crane would ask {registry} over plain HTTP (an RFC 1918 address: "
                "go-containerregistry pkg/name/registry.go, Registry.Scheme), where anyone on the network path can "
                "answer with another image's digest, and that digest is what production would run; serve the "
                "registry over HTTPS by a DNS name, or resolve it at a loopback mirror "
                f"(--mirror {registry}=localhost:PORT)"
            )

    def ask(image: Image) -> tuple[str | None, str | None]:
        ref, insecure = reference(image.name, mirrors)
        try:
            return resolver.digest(ref, insecure), None
        except ResolveError as err:
            return None, str(err)

    with ThreadPoolExecutor(max_workers=CRANE_WORKERS) as pool:
        answers = list(pool.map(ask, todo))
    for image, (digest, error) in zip(todo, answers, strict=True):
        if image.state == "unpinned":
            if digest is None:
                outcome.failures.append(f"{image.name} ({_places(image)}): {error}")
            else:
                outcome.resolved[image.name] = digest
        elif digest is None:
            outcome.notices.append(
                f"{image.name}: its reviewed pin {image.pinned} is kept; it could not be checked: {error}"
            )
        elif digest != image.pinned:
            outcome.notices.append(
                f"{image.name} moved: the registry now answers {digest}, {DIGESTS_KEY} pins {image.pinned}; the pin "
                "is kept (it was reviewed); to take the new image, delete its line and run stackctl pin-images again"
            )
    outcome.notices += offline_notices(result, digests, outcome)
    return outcome


def unused_mirrors(images: Sequence[Image], mirrors: Mapping[str, Mirror]) -> list[str]:
    """A problem per mirror that stands in for no registry an image of the stack is asked at: a misspelled
    registry would otherwise send every image to its own registry without a word."""
    registries = sorted({registry_and_path(image.name)[0] for image in images if image.state != "by digest"})
    return [
        f"--mirror {mirror.registry}={mirror.host}: no image the stack asks a registry for is from "
        f"{mirror.registry!r} (they are from {', '.join(registries) or 'no registry'}); name the registry as the "
        "images do, or leave the mirror out"
        for registry, mirror in sorted(mirrors.items())
        if registry not in registries
    ]


def listed(result: SynthResult, digests: Mapping[str, str]) -> Outcome:
    """What --check reports: the images, and the notices that need no registry."""
    outcome = Outcome(list_images(result, digests))
    outcome.notices += offline_notices(result, digests, outcome)
    return outcome


def offline_notices(result: SynthResult, digests: Mapping[str, str], outcome: Outcome) -> list[str]:
    """Pins the program does not apply somewhere, pins no object uses, and exceptions from the digest rule that
    pinning every image of their object ends."""
    running = {image.name for image in outcome.images}
    notices = [
        f"{image.name} is pinned in {DIGESTS_KEY}, but {', '.join(image.unapplied)} still run it by tag: the "
        "program does not apply the pin there"
        for image in outcome.images
        if image.unapplied
    ]
    notices += [
        f"{DIGESTS_KEY} pins {name}, which no object of the stack runs (a chart or default upgraded?); kept"
        for name in digests
        if name not in running
    ]
    unpinned = {image.name for image in outcome.images if image.state == "unpinned"} - outcome.resolved.keys()
    for exception in result.stack.config.policy_exceptions:
        if exception.policy != POLICY:
            continue
        places = [
            image
            for image in outcome.images
            if any(place.startswith(f"{exception.kind} {exception.name} ") for place in image.places)
        ]
        if places and not any(image.name in unpinned for image in places):
            notices.append(
                f"triton-platform:policyExceptions grants {POLICY} to {exception.kind} {exception.name}, whose images "
                "are all pinned now: the exception can go"
            )
    return notices
