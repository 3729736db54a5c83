"""The parsed sections the cross-section checks read, and the stack keys their problems are placed at."""

from __future__ import annotations

from typing import Any

from platform_config.schema import section_key

Sections = dict[str, Any]
"""Parsed sections by schema field name; a section that failed to parse is absent."""

SERVING = section_key("serving")
MODELS = section_key("models")
POOL = section_key("gpuPool")
DEFAULTS = f"{SERVING}.modelDefaults"
CLUSTER = section_key("cluster")
