"""What the platform refuses in the chart values a stack passes through to Helm.

The schema cannot type chart values (`values:` of the monitoring and KEDA charts is the chart's own
tree), so what must never pass through is checked here: a secret, which the program hands the chart as
a plain (unmarked) input even when the stack file holds it `secure:`, and a number that is not finite, which the
JSON the chart's objects are sent as cannot carry (RFC 8259 has no NaN or infinity).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from platform_config.errors import ConfigIssue
from platform_config.nesting import Loc
from platform_config.problem_text import key_path
from platform_config.schema import PlatformConfig
from platform_config.schema_nodes import unwrap
from platform_config.secret_values import why_secret
from platform_config.types import HelmChart

SECRET_IN_VALUES = (
    "a secret in chart values ({why}; not shown): chart values pass through as plain inputs, `secure:` or not, "
    "into whatever objects the chart renders them into; keep it in a Kubernetes Secret and give the chart that "
    "Secret's name "
    "(its `existingSecret`-style value; Grafana's admin password is generated into one already, "
    "`grafana.admin.existingSecret`)"
)


def problems(values: Mapping[str, Any]) -> Iterator[tuple[Loc, str]]:
    """(location below `values`, message) for each value that must not pass through to the chart.

    Iterative: the nesting bound (platform_config/nesting.py) is checked before this runs, but a
    walk need not rely on it.
    """
    pending: list[tuple[Loc, Any, str]] = [((), values, "")]
    while pending:
        loc, value, key = pending.pop()
        if isinstance(value, dict):
            pending += [((*loc, k), v, str(k)) for k, v in value.items()]
        elif isinstance(value, list):
            pending += [((*loc, i), v, key) for i, v in enumerate(value)]
        elif isinstance(value, str | int | float) and not isinstance(value, bool) and (why := why_secret(key, value)):
            yield loc, SECRET_IN_VALUES.format(why=why)
        elif isinstance(value, float) and not math.isfinite(value):
            yield (
                loc,
                f"{value} is not a finite number; chart values must be finite: the chart's objects are sent as "
                "JSON, which has no NaN or infinity (RFC 8259)",
            )


def _chart_locs(annotation: Any, loc: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Where the schema holds a Helm chart below a section (`chart` of monitoring and scaling)."""
    node = unwrap(annotation)
    if isinstance(node, type) and issubclass(node, HelmChart):
        yield loc
    elif isinstance(node, type) and issubclass(node, BaseModel):
        for field in node.model_fields.values():
            yield from _chart_locs(field.annotation, (*loc, str(field.alias)))


_CHARTS = {name: tuple(_chart_locs(field.annotation)) for name, field in PlatformConfig.model_fields.items()}
"""Where each section holds a Helm chart, for the chart values check."""


def section_issues(key: str, field_name: str, section: Any) -> list[ConfigIssue]:
    """What `problems` refuses in each chart's `values` of a section, as given (valid or not)."""
    issues = []
    for loc in _CHARTS[field_name]:
        values = section
        for part in (*loc, "values"):
            values = values.get(part) if isinstance(values, dict) else None
        if isinstance(values, dict):
            issues += [
                ConfigIssue(key_path(key, (*loc, "values", *below)), message) for below, message in problems(values)
            ]
    return issues
