"""The stack's explicit Kubernetes provider: a named cluster context, or YAML files.

Whether the provider deploys is its own argument: it renders when `render_dir` is given, and
deploys to `context` otherwise. Nothing here asks how the program is being run.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict
from urllib.parse import urlsplit

import pulumi
import pulumi_kubernetes as k8s
import yaml

from triton_platform.excerpts import excerpt
from triton_platform.formats import control_character_problem


class KubernetesProviderArgs(TypedDict):
    """Where the provider sends objects: exactly one of `render_dir` and `context`."""

    render_dir: NotRequired[str]
    """Folder the provider writes every object into as YAML, instead of applying it; no cluster is contacted.
    Default: unset, the provider deploys to `context`."""

    context: NotRequired[str]
    """kubeconfig context the provider deploys to; required unless `render_dir` is set, so the active context
    is never used by accident. Default: unset."""

    kubeconfig: NotRequired[str]
    """Path of the kubeconfig file that defines `context`; only when deploying.
    Default: client-go's lookup, `$KUBECONFIG`, then `~/.kube/config`."""


@dataclass(frozen=True)
class KubernetesTarget:
    """A provider's validated arguments: it renders into `render_dir`, or deploys to `context`."""

    name: str
    """The provider's resource name."""
    render_dir: str | None
    context: str | None
    kubeconfig: str | None

    @property
    def deploys(self) -> bool:
        """True when the provider applies objects to a cluster."""
        return self.render_dir is None


def kubernetes_target(name: str, args: KubernetesProviderArgs) -> KubernetesTarget:
    """`args` checked: every problem in one ValueError, each line naming the provider and the argument."""
    render_dir = args.get("render_dir") or None
    context = args.get("context") or None
    kubeconfig = args.get("kubeconfig") or None
    problems: list[str] = []
    if render_dir is None and context is None:
        problems.append(
            "args.context: required unless args.render_dir is set (the active kubeconfig context is never used)"
        )
    if render_dir is not None and context is not None:
        problems.append(
            f"args.context: {context!r} cannot be combined with args.render_dir {render_dir!r}; "
            "a provider renders or deploys, not both"
        )
    if render_dir is not None and kubeconfig is not None:
        problems.append(f"args.kubeconfig: {kubeconfig!r} applies only when deploying; args.render_dir is set")
    # Names printed as they are (the preflight's report, the CI's context): no control character may forge a line.
    for key, value in (("context", context), ("kubeconfig", kubeconfig)):
        if value is not None and (problem := control_character_problem(value)) is not None:
            problems.append(f"args.{key}: {problem}")
    if problems:
        raise ValueError("\n".join(f"Kubernetes provider {name}: {problem}" for problem in problems))
    return KubernetesTarget(name, render_dir, context, kubeconfig)


def kubeconfig_paths(target: KubernetesTarget) -> list[Path]:
    """The files the provider reads, in client-go's order: `kubeconfig`, else $KUBECONFIG, else ~/.kube/config."""
    if target.kubeconfig:
        return [Path(target.kubeconfig).expanduser()]
    listed = [Path(p).expanduser() for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return listed or [Path.home() / ".kube" / "config"]


def _named(entries: Any) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in entries or [] if isinstance(e, dict) and "name" in e}


class KubeconfigError(ValueError):
    """The deploy context's cluster cannot be read from the kubeconfig: the message names the context and files."""


def context_cluster(target: KubernetesTarget) -> dict[str, Any]:
    """The `cluster` entry of the target's context, as client-go merges the kubeconfig files; KubeconfigError."""
    context = target.context or ""
    paths = kubeconfig_paths(target)
    contexts: dict[str, dict[str, Any]] = {}
    clusters: dict[str, dict[str, Any]] = {}
    for path in paths:
        if path.is_file():
            document = yaml.safe_load(path.read_text()) or {}
            # client-go merges the files; the first one to name an entry wins.
            contexts = {**_named(document.get("contexts")), **contexts}
            clusters = {**_named(document.get("clusters")), **clusters}
    where = ", ".join(str(p) for p in paths)
    if context not in contexts:
        known = ", ".join(sorted(contexts)) or "none"
        raise KubeconfigError(f"kubeconfig context {context!r} is not defined in {where} (contexts there: {known})")
    cluster = clusters.get((contexts[context].get("context") or {}).get("cluster", ""), {}).get("cluster") or {}
    if not urlsplit(str(cluster.get("server") or "")).hostname:
        raise KubeconfigError(
            f"kubeconfig context {context!r} names no API server address (cluster server "
            f"{str(cluster.get('server') or '')!r} in {where})"
        )
    return cluster


def _proxied(cluster: Mapping[str, Any]) -> bool:
    return bool(cluster.get("proxy-url") or os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy"))


def unreachable_reason(target: KubernetesTarget, timeout: float = 5.0) -> str | None:
    """Why the deploy target cannot be reached, naming the context; None when its API server answers a connection.

    Only a TCP connection is tried: credentials are the provider's business. Without this the
    provider reports "cluster is unreachable" per object, without saying which context was meant,
    and previews go on as if the cluster were empty.
    """
    try:
        cluster = context_cluster(target)
    except KubeconfigError as err:
        return str(err)
    if _proxied(cluster):
        return None  # reached through a proxy: only the provider can tell
    server = str(cluster["server"])
    url = urlsplit(server)
    try:
        with socket.create_connection((url.hostname, url.port or 443), timeout=timeout):
            return None
    except OSError as err:
        return (
            f"the API server of kubeconfig context {target.context!r}, {server}, cannot be reached: "
            f"{err.strerror or err}"
        )


VERSION_SECONDS = 10.0
"""The whole of the API server's answer to GET /version: it answers in milliseconds."""
MAX_VERSION_BYTES = 64 * 1024
"""Its answer is a few hundred bytes."""
_GIT_VERSION = re.compile(r"(v1\.[0-9]+\.[0-9]+)(?:[-+][0-9A-Za-z.+-]*)?")


class ServerVersionError(ValueError):
    """The API server's version could not be read: the message names the context and why."""


def server_version(target: KubernetesTarget, *, deadline: float = VERSION_SECONDS) -> str:
    """The deploy context's API server version, `v1.MINOR.PATCH` (its `gitVersion` without a vendor suffix such
    as `-eks-...`), from GET /version, which Kubernetes serves to anyone (the `system:public-info-viewer` role):
    asked without credentials, verified with the kubeconfig's CA, whole within `deadline` seconds and at most
    MAX_VERSION_BYTES; ServerVersionError otherwise, naming the context."""
    cluster = context_cluster(target)
    server = str(cluster["server"]).rstrip("/")
    where = f"the API server of kubeconfig context {target.context!r} ({server})"
    if _proxied(cluster):
        raise ServerVersionError(f"{where} is reached through a proxy, which only the provider speaks")
    context = ssl.create_default_context()
    if cluster.get("insecure-skip-tls-verify") is True:
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    elif cluster.get("certificate-authority-data"):
        context.load_verify_locations(cadata=base64.b64decode(str(cluster["certificate-authority-data"])).decode())
    elif cluster.get("certificate-authority"):
        context.load_verify_locations(cafile=str(cluster["certificate-authority"]))
    started = time.monotonic()
    try:
        with urllib.request.urlopen(f"{server}/version", timeout=deadline, context=context) as answer:
            body = b""
            while chunk := answer.read(4096):
                body += chunk
                if len(body) > MAX_VERSION_BYTES:
                    raise ServerVersionError(f"{where}: its /version answer exceeds {MAX_VERSION_BYTES} bytes")
                if time.monotonic() - started > deadline:
                    raise ServerVersionError(f"{where}: its /version answer took over {deadline:g} s")
    except urllib.error.HTTPError as err:
        raise ServerVersionError(f"{where} answers /version with HTTP {err.code} (anonymous access refused?)") from None
    except (OSError, ValueError) as err:
        if isinstance(err, ServerVersionError):
            raise
        raise ServerVersionError(f"{where}: /version cannot be read: {excerpt(str(err))}") from None
    try:
        document = json.loads(body)
    except ValueError:
        raise ServerVersionError(f"{where}: its /version answer is not JSON") from None
    git_version = document.get("gitVersion") if isinstance(document, dict) else None
    found = _GIT_VERSION.fullmatch(git_version) if isinstance(git_version, str) else None
    if found is None:
        raise ServerVersionError(
            f"{where}: its /version answer has no gitVersion v1.MINOR.PATCH; got {excerpt(git_version)}"
        )
    return found.group(1)


def check_reachable(target: KubernetesTarget, stack: str) -> None:
    """Stop a deploying run at once, with one message, when its context's API server cannot be reached."""
    reason = unreachable_reason(target)
    if reason is not None:
        raise pulumi.RunError(f"stack {stack}: {reason}")


def create_provider(target: KubernetesTarget) -> k8s.Provider:
    """The provider, with exactly one target and never the ambient kubeconfig context.

    No default namespace: every namespaced object names its own (a test holds the program to
    that), and a default would be stamped onto cluster-scoped custom resources in render mode,
    where the provider cannot ask the API server for scope.
    """
    return k8s.Provider(
        target.name,
        k8s.ProviderArgs(
            render_yaml_to_directory=target.render_dir,
            context=target.context,
            kubeconfig=target.kubeconfig,
        ),
    )


def provider_options(provider: k8s.Provider) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(providers={"kubernetes": provider})
