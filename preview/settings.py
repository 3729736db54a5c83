"""A stack's settings as a revision has them, and which of them a change moves.

Every leaf of a stack file's config and of the stack's rendered model configs (config.pbtxt), flattened by key path
(secrets masked), and the keys shown side by side in the comment when they change: the settings that move latency,
throughput and cost, and the installed charts' pins and values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

from preview.events import MASK
from triton_platform.model_packaging.layout import config_path

# Settings that move latency, throughput and cost: shown side by side when they change
# (KEDA's own installation is not one: its chart has the table below).
TUNING_KEYS = re.compile(
    r"(^triton-platform:scaling\.(?!keda\.))|(\.replicas\.)|(\.gpusPerPod$)|(maxBatchSize$)|(dynamicBatching\.)|"
    r"(instanceGroup\.)|(\.batching\.)|(sequenceBatching\.)"
)

# The installed charts' pins and values (`keda.chart`, `monitoring.chart`: triton_platform/kube/helm_chart.py).
CHART_KEYS = re.compile(r"(^|\.)chart\.")


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        return {
            k: v for key, item in value.items() for k, v in flatten(item, f"{prefix}.{key}" if prefix else key).items()
        }
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in flatten(item, f"{prefix}[{i}]").items()}
    return {prefix: json.dumps(value)}


ENVIRONMENT_KEY = "triton-platform:environment"


def stack_settings(tree: Path, stack: str) -> dict[str, str]:
    """Every leaf of the stack file's config, by full key path."""
    path = tree / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.exists():
        return {}
    flat = flatten((yaml.safe_load(path.read_text()) or {}).get("config") or {})
    # A `secure:` value is ciphertext: shown as what it is, never as its text.
    return {key.removesuffix(".secure"): MASK if key.endswith(".secure") else value for key, value in flat.items()}


def model_settings(repository: Path, stack: str) -> dict[str, str]:
    """The stack's rendered config.pbtxt of every model, flattened as `models.<model>.<field>`."""
    out: dict[str, str] = {}
    for config in sorted(repository.glob(config_path("*", stack))):
        message = text_format.Parse(config.read_text(), model_config_pb2.ModelConfig())
        fields = json_format.MessageToDict(message)
        out.update(flatten(fields, f"models.{config.parent.parent.name}"))
    return out


def setting_changes(
    base: Mapping[str, str], head: Mapping[str, str], keys: re.Pattern[str]
) -> list[tuple[str, str, str]]:
    """(key, base, head) for every setting matching `keys` that differs."""
    changed = sorted(k for k in set(base) | set(head) if keys.search(k) and base.get(k) != head.get(k))
    return [(k, base.get(k, "—"), head.get(k, "—")) for k in changed]


def renders(tree: Path, stack: str) -> bool:
    """Whether the stack writes manifests rather than deploying: its provider cannot read a cluster back."""
    return stack_settings(tree, stack).get("triton-platform:kubernetes.mode") == json.dumps("render")
