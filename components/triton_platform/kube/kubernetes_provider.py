"""The stack's explicit Kubernetes provider: a named cluster context, or YAML files.

Whether the provider deploys is its own argument: it renders when `render_dir` is given, and
deploys to `context` otherwise. Nothing here asks how the program is being run.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import socket
import ssl
import threading
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

from triton_platform.args.excerpts import excerpt
from triton_platform.args.formats import control_character_problem
from triton_platform.args.url_credentials import redact


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
    """A kubeconfig list's entries by name; entries of another shape are not entries."""
    if not isinstance(entries, list):
        return {}
    return {e["name"]: e for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)}


class KubeconfigError(ValueError):
    """The deploy context's cluster cannot be read from the kubeconfig: the message names the context and files."""


def _entry(entries: dict[str, dict[str, Any]], name: object, field: str) -> dict[str, Any]:
    """The `field` mapping of the entry `name`, or {} where either is missing or of another shape."""
    entry = entries.get(name) if isinstance(name, str) else None
    found = entry.get(field) if isinstance(entry, dict) else None
    return found if isinstance(found, dict) else {}


def context_cluster(target: KubernetesTarget) -> dict[str, Any]:
    """The `cluster` entry of the target's context, as client-go merges the kubeconfig files; KubeconfigError for
    a file that cannot be read or an address that is none (its credentials never shown)."""
    context = target.context or ""
    paths = kubeconfig_paths(target)
    contexts: dict[str, dict[str, Any]] = {}
    clusters: dict[str, dict[str, Any]] = {}
    for path in paths:
        if path.is_file():
            try:
                document = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
                raise KubeconfigError(f"kubeconfig {path} cannot be read: {excerpt(str(err))}") from None
            document = document if isinstance(document, dict) else {}
            # client-go merges the files; the first one to name an entry wins.
            contexts = {**_named(document.get("contexts")), **contexts}
            clusters = {**_named(document.get("clusters")), **clusters}
    where = ", ".join(str(p) for p in paths)
    if context not in contexts:
        known = ", ".join(sorted(contexts)) or "none"
        raise KubeconfigError(f"kubeconfig context {context!r} is not defined in {where} (contexts there: {known})")
    cluster = _entry(clusters, _entry(contexts, context, "context").get("cluster"), "cluster")
    server = str(cluster.get("server") or "")
    try:
        hostname = urlsplit(server).hostname
    except ValueError:
        hostname = None
    if not hostname:
        raise KubeconfigError(
            f"kubeconfig context {context!r} names no API server address (cluster server {redact(repr(server))} "
            f"in {where})"
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
            f"the API server of kubeconfig context {target.context!r}, {redact(server)}, cannot be reached: "
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
    MAX_VERSION_BYTES; ServerVersionError (or KubeconfigError) otherwise, naming the context, never a credential."""
    cluster = context_cluster(target)
    server = str(cluster["server"]).rstrip("/")
    where = f"the API server of kubeconfig context {target.context!r} ({redact(server)})"
    if _proxied(cluster):
        raise ServerVersionError(f"{where} is reached through a proxy, which only the provider speaks")
    answer: list[bytes | BaseException] = []
    # The whole request in a thread of its own: a socket's timeout bounds each read, not a server trickling bytes.
    reader = threading.Thread(target=lambda: answer.append(_version_body(cluster, server, deadline)), daemon=True)
    reader.start()
    reader.join(deadline)
    if not answer:
        raise ServerVersionError(f"{where}: its /version answer took over {deadline:g} s")
    body = answer[0]
    if isinstance(body, BaseException):
        raise ServerVersionError(f"{where}{_failure(body)}") from None
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


def _version_body(cluster: Mapping[str, Any], server: str, timeout: float) -> bytes | BaseException:
    """GET <server>/version's body, at most MAX_VERSION_BYTES, or what went wrong."""
    try:
        context = ssl.create_default_context()
        if cluster.get("insecure-skip-tls-verify") is True:
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        elif cluster.get("certificate-authority-data"):
            pem = base64.b64decode(str(cluster["certificate-authority-data"]), validate=True).decode()
            context.load_verify_locations(cadata=pem)
        elif cluster.get("certificate-authority"):
            context.load_verify_locations(cafile=str(cluster["certificate-authority"]))
        with urllib.request.urlopen(f"{server}/version", timeout=timeout, context=context) as response:
            body = response.read(MAX_VERSION_BYTES + 1)
        if len(body) > MAX_VERSION_BYTES:
            return _TooLargeError()
        return bytes(body)
    except Exception as err:
        return err


class _TooLargeError(Exception):
    """An answer over MAX_VERSION_BYTES."""


def _failure(err: BaseException) -> str:
    """Why /version could not be read, after the server's name; no URL (and so no credential) of the error's own."""
    if isinstance(err, urllib.error.HTTPError):
        return f" answers /version with HTTP {err.code} (anonymous access refused?)"
    if isinstance(err, _TooLargeError):
        return f": its /version answer exceeds {MAX_VERSION_BYTES} bytes"
    if isinstance(err, binascii.Error | UnicodeDecodeError | ssl.SSLError) and not isinstance(
        err, ssl.SSLCertVerificationError
    ):
        return f": the kubeconfig's certificate-authority cannot be used: {type(err).__name__}"
    reason = getattr(err, "reason", None) or getattr(err, "strerror", None) or type(err).__name__
    return f": /version cannot be read: {redact(excerpt(str(reason)))}"


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
