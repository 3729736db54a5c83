"""One owner per Kubernetes object in a program. The components name many objects themselves (a fixed name such as
Monitoring's ServiceMonitor `triton`, or one made from their Args such as `triton-<deployment>`), so two instances
that would create the same object are refused when the second is built, naming both: otherwise each would
manage it, the second `pulumi up` would fail on an object that already exists, and a render would overwrite the
first's file.

Objects are the same when their kind, namespace and name are, in the same cluster: the Kubernetes provider the
instance is given (`opts.provider`, or `opts.providers`' kubernetes entry), else its parent, whose provider it
inherits, else the program run's root stack resource (`pulumi.runtime.get_root_resource`), whose default provider
it deploys through. A run makes its own root (`pulumi up`, an Automation API run); a process that runs several
programs under mocks starts each with `pulumi.runtime.reset_options`, which clears it (offline/mock_runtime.py, the
component tests' `install`).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from triton_platform.args.arg_problems import ArgProblem, ArgsError

Identity = tuple[str, str, str]
"""apiVersion/kind, namespace (empty when cluster-scoped), name."""

_CLAIMS: weakref.WeakKeyDictionary[pulumi.Resource, dict[Identity, str]] = weakref.WeakKeyDictionary()
"""By cluster (a provider or a parent resource, which lives as long as the program run that made it)."""


def _cluster(opts: pulumi.ResourceOptions | None) -> pulumi.Resource | None:
    """What tells the instance's cluster apart: its Kubernetes provider, else its parent (whose it inherits), else
    the run's root (its default provider's)."""
    if opts is None:
        return pulumi.runtime.get_root_resource()
    if isinstance(opts.provider, k8s.Provider):
        return opts.provider
    providers = opts.providers
    given = providers.values() if isinstance(providers, Mapping) else providers or []
    for provider in given:
        if isinstance(provider, k8s.Provider):
            return provider
    return opts.parent or pulumi.runtime.get_root_resource()


def identities(manifests: Iterable[Mapping[str, Any]]) -> list[Identity]:
    """The identity of each manifest whose name and namespace are known now (an Output's are not checked)."""
    out = []
    for manifest in manifests:
        metadata = manifest.get("metadata")
        if not isinstance(metadata, Mapping):
            continue  # an Output, or none: named only when the program runs
        name, namespace = metadata.get("name"), metadata.get("namespace", "")
        api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
        if (
            isinstance(name, str)
            and isinstance(namespace, str)
            and isinstance(api_version, str)
            and isinstance(kind, str)
        ):
            out.append((f"{api_version}/{kind}", namespace, name))
    return out


def described(identity: Identity) -> str:
    """`apiVersion/kind namespace/name` (no namespace for a cluster-scoped object)."""
    kind, namespace, name = identity
    return f"{kind} {namespace + '/' if namespace else ''}{name}"


def taken(claims: Mapping[Identity, str], manifests: Iterable[Mapping[str, Any]]) -> list[tuple[Identity, str]]:
    """Each object of `manifests` that `claims` records already, with its owner, in order."""
    return sorted((identity, claims[identity]) for identity in set(identities(manifests)) if identity in claims)


def claim(owner: str, opts: pulumi.ResourceOptions | None, manifests: Iterable[Mapping[str, Any]]) -> None:
    """Record `owner` (`<Component> <name>`) as the creator of `manifests` in its cluster; ArgsError, naming every
    object another instance there creates already, and nothing recorded."""
    cluster = _cluster(opts)
    if cluster is None:
        return
    claims = _CLAIMS.setdefault(cluster, {})
    manifests = list(manifests)
    found = taken(claims, manifests)
    if found:
        raise ArgsError(
            owner,
            [
                ArgProblem(
                    (),
                    f"{described(identity)} is created by {other} already, in the same cluster; give this instance "
                    "a namespace (or names) of its own, or another Kubernetes provider",
                    "",
                )
                for identity, other in found
            ],
        )
    claims.update(dict.fromkeys(identities(manifests), owner))
