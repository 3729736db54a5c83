"""The warning `stackctl simulate` and `plan` print for dev and staging: the committed latency profiles
(bench/results/profiles) record that they were measured on production's config (max batch size 32, 3 instances),
which dev and staging do not render. Tests of something else take it out of stderr with `without_profile_warnings`;
tests/simulator/test_demand_signal.py asserts that it is printed."""

from __future__ import annotations

import re

PROFILE_WARNING = re.compile(
    r"^stackctl (?:simulate|plan): warning: bench/results/profiles/[a-z]+\.json was measured on a config of model "
    r"'[a-z]+' that differs from the stack's rendered config \([^)]*\); tau\(b\) may not hold for it: measure again "
    r"with stackctl profile \(docs/profiling\.md\)\n",
    re.MULTILINE,
)


def without_profile_warnings(err: str) -> str:
    """`err` without the profile warnings above."""
    return PROFILE_WARNING.sub("", err)
