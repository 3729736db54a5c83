"""The objects of a synthesized folder, and the containers of their pod templates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ObjectKey = tuple[str, str | None, str]
"""(kind, namespace or None for cluster-scoped objects, name)."""

CONTAINER_LISTS = ("initContainers", "containers")


def read_objects(folder: Path) -> dict[ObjectKey, dict[str, Any]]:
    """Every object in the folder's YAML files, by kind, namespace and name."""
    objects: dict[ObjectKey, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.yaml")):
        for obj in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(obj, dict) and "kind" in obj:
                metadata = obj.get("metadata") or {}
                objects[(obj["kind"], metadata.get("namespace"), metadata["name"])] = obj
    return objects


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    """The pod spec of a Pod, of a workload's template or of a CronJob's job template; empty for other kinds."""
    spec: dict[str, Any] = obj.get("spec") or {}
    if obj["kind"] == "Pod":
        return spec
    if obj["kind"] == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return (spec.get("template") or {}).get("spec") or {}


def container_names(obj: dict[str, Any]) -> list[str]:
    spec = pod_spec(obj)
    return [container["name"] for key in CONTAINER_LISTS for container in spec.get(key) or []]
