"""One owner per Kubernetes object in a program. The components name many objects themselves (a fixed name such as
Monitoring's ServiceMonitor `triton`, or one made from their Args such as `triton-<deployment>`), so two instances
that would create the same object are refused when the second is built, naming both: otherwise each would
manage it, the second `pulumi up` would fail on an object that already exists, and a render would overwrite the
first's file.

Objects are the same when their kind, namespace and name are, in the same cluster: the Kubernetes provider the
instance is given (`opts.provider`, or `opts.providers`' kubernetes entry), else its parent, whose provider it
inherits. An instance given neither is not checked: the SDK offers no public handle on the program run it
belongs to, and a process may run several (tests, `stackctl synth`).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from triton_platform.arg_problems import ArgsError

Identity = tuple[str, str, str]
"""apiVersion/kind, namespace (empty when cluster-scoped), name."""

_CLAIMS: weakref.WeakKeyDictionary[pulumi.Resource, dict[Identity, str]] = weakref.WeakKeyDictionary()
"""By cluster (a provider or a parent resource, which lives as long as the program run that made it)."""


def _cluster(opts: pulumi.ResourceOptions | None) -> pulumi.Resource | None:
    """What tells the instance's cluster apart: its Kubernetes provider, else its parent (whose it inherits)."""
    if opts is None:
        return None
    if isinstance(opts.provider, k8s.Provider):
        return opts.provider
    providers = opts.providers
    given = providers.values() if isinstance(providers, Mapping) else providers or []
    for provider in given:
        if isinstance(provider, k8s.Provider):
            return provider
    return opts.parent


def identities(manifests: Iterable[Mapping[str, Any]]) -> list[Identity]:
    """The identity of each manifest whose name and namespace are known now (an Output's are not checked)."""
    out = []
    for manifest in manifests:
        metadata = manifest.get("metadata", {})
        name, namespace = metadata.get("name"), metadata.get("namespace", "")
        if isinstance(name, str) and isinstance(namespace, str):
            out.append((f"{manifest['apiVersion']}/{manifest['kind']}", namespace, name))
    return out


def claim(owner: str, opts: pulumi.ResourceOptions | None, manifests: Iterable[Mapping[str, Any]]) -> None:
    """Record `owner` (`<Component> <name>`) as the creator of `manifests` in its cluster; ArgsError, naming every
    object another instance there creates already, and nothing recorded."""
    cluster = _cluster(opts)
    if cluster is None:
        return
    claims = _CLAIMS.setdefault(cluster, {})
    wanted = identities(manifests)
    taken = sorted((identity, claims[identity]) for identity in set(wanted) if identity in claims)
    if taken:
        raise ArgsError(
            "\n".join(
                f"{owner}: {kind} {namespace + '/' if namespace else ''}{name} is created by {other} already, in the "
                "same cluster; give this instance a namespace (or names) of its own, or another Kubernetes provider"
                for (kind, namespace, name), other in taken
            )
        )
    claims.update(dict.fromkeys(wanted, owner))
