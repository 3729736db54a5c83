"""What a policy rule sees of one resource: its kind, name, inputs and declared exceptions, and the
pod spec and Triton container inside a workload."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

PROJECT = "triton-platform"
ENVIRONMENT_LABEL = f"{PROJECT}/environment"
# Objects that must break a rule carry the reason in this annotation: {"<policy>": "<why>"}.
EXCEPTIONS_ANNOTATION = "policy.triton-platform.io/exceptions"
TRITON_NAME = "triton-inference-server"
WORKLOAD_KINDS = {"Deployment", "DaemonSet", "StatefulSet", "Job", "ReplicaSet"}


@dataclass(frozen=True)
class Resource:
    """What a rule sees of one resource."""

    type: str
    props: Mapping[str, Any]
    protect: bool = False
    granted: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Exceptions the stack's config grants this object: policy -> reason."""
    environment: str | None = None
    """The stack's `triton-platform:environment`, where known: the tier of the objects that carry no environment
    label (the charts' objects)."""

    @property
    def kind(self) -> str:
        return str(self.props.get("kind") or self.type.rsplit(":", 1)[-1])

    @property
    def metadata(self) -> Mapping[str, Any]:
        return self.props.get("metadata") or {}

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or "")

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace") or "")

    @property
    def labels(self) -> Mapping[str, str]:
        return self.metadata.get("labels") or {}

    @property
    def production(self) -> bool:
        """An object's tier is its environment label's, else its stack's; unknown, production's: strict by default."""
        return self.labels.get(ENVIRONMENT_LABEL, self.environment or "production") == "production"

    def exception(self, policy: str) -> str | None:
        """Why this object may break `policy`: granted in the stack's config, or declared by the program."""
        if policy in self.granted:
            return self.granted[policy]
        raw = (self.metadata.get("annotations") or {}).get(EXCEPTIONS_ANNOTATION)
        try:
            reasons = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            return None
        reason = reasons.get(policy) if isinstance(reasons, dict) else None
        return str(reason) if reason else None


def pod_spec(resource: Resource) -> Mapping[str, Any] | None:
    if resource.kind == "Pod":
        return resource.props.get("spec") or {}
    if resource.kind in WORKLOAD_KINDS:
        return ((resource.props.get("spec") or {}).get("template") or {}).get("spec") or {}
    return None


def containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            yield f"{field[:-1]} {container.get('name')}", container


def is_triton(resource: Resource) -> bool:
    return resource.kind == "Deployment" and resource.labels.get("app.kubernetes.io/name") == TRITON_NAME


def triton_container(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for container in spec.get("containers") or []:
        if (container.get("command") or [""])[0] == "tritonserver" or "tritonserver" in str(container.get("image")):
            return container  # type: ignore[no-any-return]
    return None
