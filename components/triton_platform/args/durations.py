"""Durations as Prometheus and Go write them (30s, 5m, 1h30m): the pattern and their length in seconds."""

from __future__ import annotations

import re

PROM_DURATION = r"^(?:[0-9]+y)?(?:[0-9]+w)?(?:[0-9]+d)?(?:[0-9]+h)?(?:[0-9]+m)?(?:[0-9]+s)?(?:[0-9]+ms)?$"
"""A Prometheus duration such as 30s, 5m or 1h30m: units largest first, each at most once
(https://github.com/prometheus/common/blob/main/model/time.go, ParseDuration)."""

_UNITS = {"y": 365 * 86400, "w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 0.001}


def duration_seconds(duration: str) -> float:
    """Seconds in a Prometheus or Go duration (one that matched PROM_DURATION, or Go's h/m/s form), e.g. 1h30m."""
    return sum(int(n) * _UNITS[unit] for n, unit in re.findall(r"([0-9]+)(ms|[ywdhms])", duration))
