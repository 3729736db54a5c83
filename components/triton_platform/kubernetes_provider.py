"""The stack's explicit Kubernetes provider: a named cluster context, or YAML files.

Whether the provider deploys is its own argument: it renders when `render_dir` is given, and
deploys to `context` otherwise. Nothing here asks how the program is being run.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict
from urllib.parse import urlsplit

import pulumi
import pulumi_kubernetes as k8s
import yaml

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


def unreachable_reason(target: KubernetesTarget, timeout: float = 5.0) -> str | None:
    """Why the deploy target cannot be reached, naming the context; None when its API server answers a connection.

    Only a TCP connection is tried: credentials are the provider's business. Without this the
    provider reports "cluster is unreachable" per object, without saying which context was meant,
    and previews go on as if the cluster were empty.
    """
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
        return f"kubeconfig context {context!r} is not defined in {where} (contexts there: {known})"
    cluster = clusters.get((contexts[context].get("context") or {}).get("cluster", ""), {}).get("cluster") or {}
    server = str(cluster.get("server") or "")
    if cluster.get("proxy-url") or os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy"):
        return None  # reached through a proxy: only the provider can tell
    url = urlsplit(server)
    if not url.hostname:
        return f"kubeconfig context {context!r} names no API server address (cluster server {server!r} in {where})"
    try:
        with socket.create_connection((url.hostname, url.port or 443), timeout=timeout):
            return None
    except OSError as err:
        return f"the API server of kubeconfig context {context!r}, {server}, cannot be reached: {err.strerror or err}"


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
