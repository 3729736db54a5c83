"""Exceptions to the policy pack (`policy/`) that the program declares on the objects that need them.

Each carries its reason; the pack's advisory `policy-exceptions` policy prints it on every preview.
"""

from __future__ import annotations

import json

EXCEPTIONS_ANNOTATION = "policy.triton-platform.io/exceptions"
"""Objects that must break a rule carry the reason in this annotation: `{"<policy>": "<why>"}` in JSON. The policy
pack reads the same key (policy/rules.py keeps its own copy: its virtualenv lacks the components' dependencies)."""


def exception_annotations(reasons: dict[str, str]) -> dict[str, str]:
    """The annotation that exempts an object from each named policy, for the reason given."""
    return {EXCEPTIONS_ANNOTATION: json.dumps(reasons, sort_keys=True)}
