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

from platform_config.nesting import Loc
from platform_config.secret_values import why_secret

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
