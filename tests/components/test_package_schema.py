"""The committed components/schema.json is what the SDK's component provider infers from the Args types, checked
in-process so `make test-fast` fails on a stale file (the CLI's `get-schema` is compared in the full suite,
tests/components/test_component_package.py)."""

from __future__ import annotations

import json

from tests.support.package_schema import SCHEMA, inferred_schema, schema_text


def test_the_committed_schema_is_what_the_sdk_infers() -> None:
    assert schema_text(inferred_schema()) == SCHEMA.read_text(), (
        "components/schema.json differs from the schema the Args types give: if the change to the public "
        "interface is meant, run `.venv/bin/python -m tests.support.package_schema` and commit components/schema.json"
    )


def test_a_changed_description_makes_the_schema_stale() -> None:
    """The comparison sees a change as small as one description."""
    schema = json.loads(SCHEMA.read_text())
    schema["resources"]["triton-platform:index:TritonServing"]["inputProperties"]["namespace"]["description"] += "!"
    assert schema_text(schema) != schema_text(inferred_schema())


def test_descriptions_of_array_items_are_dropped_as_the_cli_drops_them() -> None:
    schema = inferred_schema()
    taints = schema["resources"]["triton-platform:index:GpuNodePool"]["inputProperties"]["taints"]
    assert "description" in taints
    assert "description" not in taints["items"]
