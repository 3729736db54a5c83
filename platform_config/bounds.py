"""Bounds of stack settings that tools outside the schema share (`stackctl plan`'s options), in a module that imports
nothing, so `stackctl --help` loads no component SDK."""

SLO_MAX_MS = 600_000
"""The bound on `serving.p95LatencySloMs` and `p99LatencySloMs` (ten minutes), which `stackctl plan --slo-ms` shares."""
