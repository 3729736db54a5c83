"""`stackctl synth`: every Kubernetes object the program would send, as plain manifests."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from offline.chart_template import HelmTemplater
from offline.mock_runtime import EchoMocks, Registered, run_program
from offline.out_folder import claim
from platform_config.kubernetes import RENDER_OVERRIDE_ENV
from platform_config.loader import StackConfig, load_stack_file
from platform_config.stack_document import pulumi_config_from_stack_file
from program.component_checks import check_components

KUBERNETES_PREFIX = "kubernetes:"
"""Type prefix of Kubernetes objects; providers are `pulumi:providers:kubernetes`."""

CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"
"""The provider's component that registers a chart's objects: under mocks it is one resource holding them."""

MANIFEST_HEAD = ("apiVersion", "kind", "metadata")
RESOURCES_FILE = "resources.json"

SYNTH_RENDER_DIR = "rendered/synth"
"""Where synth tells every stack to render (the render override): mocks send objects nowhere and reach no
cluster, and the program says so through its own provider's arguments, not by detecting the mocks."""


@dataclass(frozen=True)
class SynthResult:
    stack: StackConfig
    resources: list[Registered]

    def by_urn(self, urn: str) -> Registered:
        return next(r for r in self.resources if r.urn == urn)

    def find(self, type_: str, name: str) -> Registered:
        """The resource of this Pulumi type and name; KeyError naming what exists otherwise."""
        for resource in self.resources:
            if resource.type == type_ and resource.name == name:
                return resource
        names = sorted(f"{r.type} {r.name}" for r in self.resources)
        raise KeyError(f"no {type_} named {name!r}; registered: {names}")

    def of_type(self, type_: str) -> list[Registered]:
        return [r for r in self.resources if r.type == type_]

    def manifests(self) -> list[dict[str, Any]]:
        """Every Kubernetes object; a Helm release is not one (it is listed in resources.json)."""
        return [
            manifest(r)
            for r in self.resources
            if r.type.startswith(KUBERNETES_PREFIX) and {"apiVersion", "kind"} <= r.inputs.keys()
        ]


def _canonical(value: Any) -> Any:
    """Keys sorted at every level (the engine's property maps have no stable order); nulls dropped.

    The engine carries numbers as protobuf doubles; whole ones become ints again, as written.
    """
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in sorted(value.items()) if v is not None}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def manifest(resource: Registered) -> dict[str, Any]:
    """A Kubernetes object's inputs as a plain manifest, head keys first."""
    body = _canonical(resource.inputs)
    head = {k: body.pop(k) for k in MANIFEST_HEAD if k in body}
    return {**head, **body}


def manifest_filename(obj: dict[str, Any]) -> str:
    """`<kind>-<namespace>-<name>.yaml`; `_` stands for the namespace of cluster-scoped objects."""
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace") or "_"
    return f"{obj['kind'].lower()}-{namespace}-{metadata['name']}.yaml"


def group_members(group: Registered) -> list[Registered]:
    """The objects a ConfigGroup holds, each as the provider registers it beneath the group.

    Type `kubernetes:<apiVersion>:<kind>` (`core/v1` for the core group), name `<prefix>:<namespace>/<name>`
    or `<prefix>:<name>` (pulumi-kubernetes provider/pkg/provider/yaml/v2/yaml.go, `register`).
    """
    head, parent_type, _ = group.urn.rsplit("::", 2)
    prefix = group.inputs.get("resourcePrefix")
    members = []
    for obj in yaml.load_all(group.inputs.get("yaml") or "", Loader=yaml.CSafeLoader):
        metadata = obj.get("metadata") or {}
        api_version = obj["apiVersion"] if "/" in obj["apiVersion"] else f"core/{obj['apiVersion']}"
        type_ = f"{KUBERNETES_PREFIX}{api_version}:{obj['kind']}"
        name = f"{metadata['namespace']}/{metadata['name']}" if metadata.get("namespace") else metadata["name"]
        name = f"{prefix}:{name}" if prefix else name
        members.append(
            Registered(
                urn=f"{head}::{parent_type}${type_}::{name}",
                type=type_,
                name=name,
                parent=group.urn,
                custom=True,
                provider=group.provider,
                protect=group.protect,
                retain_on_delete=group.retain_on_delete,
                dependencies=(),
                inputs=obj,
            )
        )
    return members


def run_synth(
    stack: str, flat_config: Mapping[str, str], secret_keys: Sequence[str], mocks: EchoMocks | None = None
) -> list[Registered]:
    """The program's resources for `stack` and this config, run under mocks in render mode.

    A chart's objects are listed beneath its ConfigGroup, as a preview registers them, when the mocks
    template charts (`EchoMocks(charts=...)`); otherwise the group holds none.
    """
    registered = run_program(stack, flat_config, secret_keys, {RENDER_OVERRIDE_ENV: SYNTH_RENDER_DIR}, mocks)
    return [
        *registered,
        *(member for group in registered if group.type == CONFIG_GROUP for member in group_members(group)),
    ]


def synthesize(path: Path, stack: str | None = None, charts: HelmTemplater | None = None) -> SynthResult:
    """Validate a stack file and the Args the program builds from it, then run the program for it under mocks;
    with `charts`, its charts templated."""
    loaded = check_components(load_stack_file(path, stack))
    flat, secret_keys = pulumi_config_from_stack_file(path)
    return SynthResult(loaded, run_synth(loaded.stack, flat, secret_keys, EchoMocks(charts)))


def write_synth(result: SynthResult, out: Path) -> list[Path]:
    """Write one YAML file per object plus resources.json; returns the files written, resources.json last.

    Only into a new or empty folder, or one an earlier synth wrote (offline/out_folder.py)."""
    files: dict[str, bytes] = {}
    for obj in result.manifests():
        name = manifest_filename(obj)
        if name in files:
            raise ValueError(f"two objects map to {name}: kind, namespace and name must be unique")
        files[name] = yaml.safe_dump(obj, sort_keys=False).encode()
    # By URN: registration order varies between runs, and the listing must diff cleanly.
    listing = [
        {"type": r.type, "name": r.name, "parent": r.parent or None, "urn": r.urn}
        for r in sorted(result.resources, key=lambda r: r.urn)
    ]
    files[RESOURCES_FILE] = (json.dumps(listing, indent=2) + "\n").encode()
    return claim(out, "synth").replace(files)
