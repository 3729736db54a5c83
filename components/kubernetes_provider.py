"""The stack's explicit Kubernetes provider: a named cluster context, or YAML files."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.settings import get_monitor

from components.kubernetes_provider_config import KubernetesConfig

# Renders every stack, whatever its mode, into $TRITON_PLATFORM_RENDER_DIR/<stack>: for
# previews and end-to-end tests on machines with no cluster credentials. It changes
# where objects go, never what they are, and every preview says it is active.
RENDER_OVERRIDE_ENV = "TRITON_PLATFORM_RENDER_DIR"


def render_override() -> str | None:
    return os.environ.get(RENDER_OVERRIDE_ENV) or None


def render_dir(config: KubernetesConfig, stack: str) -> str | None:
    """Where the stack's manifests are written, relative to the project root (None when deploying)."""
    override = render_override()
    if override:
        return str(Path(override) / stack)
    if config.mode != "render":
        return None
    return config.render_dir or f"rendered/{stack}"


def provider_args(config: KubernetesConfig, stack: str) -> dict[str, str]:
    """Provider arguments: exactly one target, never the ambient kubeconfig context.

    No default namespace: every namespaced object names its own (a test holds the
    program to that), and a default would be stamped onto cluster-scoped custom
    resources in render mode, where the provider cannot ask the API server for scope.
    """
    directory = render_dir(config, stack)
    if directory is not None:
        return {"render_yaml_to_directory": directory}
    args = {"context": config.context or ""}
    if config.kubeconfig:
        args["kubeconfig"] = config.kubeconfig
    return args


def kubeconfig_paths(config: KubernetesConfig) -> list[Path]:
    """The files the provider reads, in client-go's order: `kubeconfig`, else $KUBECONFIG, else ~/.kube/config."""
    if config.kubeconfig:
        return [Path(config.kubeconfig).expanduser()]
    listed = [Path(p).expanduser() for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return listed or [Path.home() / ".kube" / "config"]


def _named(entries: Any) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in entries or [] if isinstance(e, dict) and "name" in e}


def unreachable_reason(config: KubernetesConfig, timeout: float = 5.0) -> str | None:
    """Why the deploy target cannot be reached, naming the context; None when its API server answers a connection.

    Only a TCP connection is tried: credentials are the provider's business. Without this the
    provider reports "cluster is unreachable" per object, without saying which context was meant,
    and previews go on as if the cluster were empty.
    """
    context = config.context or ""
    paths = kubeconfig_paths(config)
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


def deploys(config: KubernetesConfig, stack: str) -> bool:
    """True when this run applies objects to a cluster: not rendering, not under Pulumi's mocks."""
    return config.mode == "deploy" and render_dir(config, stack) is None and not isinstance(get_monitor(), MockMonitor)


def check_reachable(config: KubernetesConfig, stack: str) -> None:
    """Stop a deploying run at once, with one message, when its context's API server cannot be reached."""
    reason = unreachable_reason(config)
    if reason is not None:
        raise pulumi.RunError(f"stack {stack}: {reason}")


def create_provider(stack: str, config: KubernetesConfig) -> k8s.Provider:
    # Pinned to the stack, not to the project, so two stacks never share state by accident.
    args = provider_args(config, stack)
    if render_override() and config.mode == "deploy":
        pulumi.log.warn(
            f"{RENDER_OVERRIDE_ENV} is set: this {config.mode} stack renders to {args['render_yaml_to_directory']} "
            f"instead of deploying to context {config.context!r}"
        )
    return k8s.Provider(
        f"{stack}-kubernetes",
        k8s.ProviderArgs(
            render_yaml_to_directory=args.get("render_yaml_to_directory"),
            context=args.get("context"),
            kubeconfig=args.get("kubeconfig"),
        ),
    )


def provider_options(provider: k8s.Provider) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(providers={"kubernetes": provider})
