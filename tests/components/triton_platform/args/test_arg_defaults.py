"""Each Arg's doc ends with the default its Setting declares, written from it (platform_config/arg_docs.py): the
package schema (what a YAML, TypeScript or Go user reads) shows the doc, the component applies the Setting, and
`make arg-docs` writes the one from the other."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NotRequired, TypedDict

import pytest

from platform_config.arg_docs import args_records, default_text, doc_edits, main, rewritten, stale_docs, write_docs
from triton_platform.args.arg_schema import Setting, declare
from triton_platform.gpu_pool import gpu_node_pool_args
from triton_platform.monitoring import monitoring_args
from triton_platform.scaling import keda_scaling_args
from triton_platform.serving import triton_serving_args


class _Window(TypedDict):
    start: NotRequired[str]


class _Example(TypedDict):
    replicas: NotRequired[int]
    labels: NotRequired[dict[str, str]]
    nodes: NotRequired[list[str]]
    window: NotRequired[_Window]
    image: NotRequired[str]
    name: NotRequired[str]


declare(_Window, start=Setting(default="08:00"))
declare(
    _Example,
    replicas=Setting(default=3),
    labels=Setting(default={"team": "ranking"}),
    nodes=Setting(default=[]),
    window=Setting(default={}),
    image=Setting(default="registry.example/app:1.0"),
    name=Setting(),
)
RECORDS = {"_Example": _Example}

# The module a writer reads: `_Example`'s source with docs as a hand might leave them (not importable: only parsed).
SOURCE = '''class _Example(TypedDict):
    replicas: NotRequired[int]
    """How many, 5 µs apart. Default: 2."""

    labels: NotRequired[dict[str, str]]
    """Labels"""

    nodes: NotRequired[list[str]]
    """Nodes to run on. Default: none, which lets the scheduler pick."""

    window: NotRequired[_Window]
    """When it runs.
    Default: each field's default."""

    image: NotRequired[str]
    """The image, pinned: a doc long enough that its closing sentence, written after its last line, would take
    that line past 120 characters, and so it starts a line of its own, at the indentation of the doc."""

    name: NotRequired[str]
    """Its name. Default: unset."""
'''

WRITTEN = '''class _Example(TypedDict):
    replicas: NotRequired[int]
    """How many, 5 µs apart. Default: `3`."""

    labels: NotRequired[dict[str, str]]
    """Labels. Default: `{"team": "ranking"}`."""

    nodes: NotRequired[list[str]]
    """Nodes to run on. Default: none."""

    window: NotRequired[_Window]
    """When it runs. Default: each field's default."""

    image: NotRequired[str]
    """The image, pinned: a doc long enough that its closing sentence, written after its last line, would take
    that line past 120 characters, and so it starts a line of its own, at the indentation of the doc.
    Default: `registry.example/app:1.0`."""

    name: NotRequired[str]
    """Its name. Default: unset."""
'''


def test_every_args_doc_ends_with_its_settings_default() -> None:
    files = args_records()
    modules = (gpu_node_pool_args, triton_serving_args, keda_scaling_args, monitoring_args)
    assert {Path(str(module.__file__)) for module in modules} <= set(files)
    assert sum(len(records) for records in files.values()) > 40  # every Args record with a Setting, not a few
    assert stale_docs() == []


@pytest.mark.parametrize(
    ("default", "annotation", "text"),
    [
        ("5m", str, "`5m`"),
        ("", str, '`""`'),
        (20.0, float, "`20`"),
        (0.01, float, "`0.01`"),
        (600, int, "`600`"),
        (False, bool, "`false`"),
        ([], list[str], "none"),
        ({}, dict[str, str], "none"),
        ({}, _Window, "each field's default"),
        (("triton", "triton-platform"), list[str], '`["triton", "triton-platform"]`'),
        ({"b": "2", "a": "1"}, dict[str, str], '`{"b": "2", "a": "1"}`'),
        ({"start": "09:00"}, _Window, '`{"start": "09:00"}`'),
    ],
)
def test_a_default_is_written_by_its_value_and_type(default: Any, annotation: Any, text: str) -> None:
    assert default_text(default, annotation) == text


def test_a_doc_that_differs_from_its_setting_is_named(tmp_path: Path) -> None:
    module = tmp_path / "example_args.py"
    module.write_text(SOURCE)
    assert stale_docs({module: RECORDS}) == [
        f'{module}:3: _Example.replicas: says "Default: 2."; its Setting\'s default is "Default: `3`."',
        f'{module}:6: _Example.labels: states no default; end it with "Default: `{{"team": "ranking"}}`."',
        f'{module}:9: _Example.nodes: has more after its default ("Default: none, which lets the scheduler pick."); '
        'say it before, and end with "Default: none."',
        f"{module}:12: _Example.window: wrapped otherwise than `python -m platform_config.arg_docs --write` writes it",
        f'{module}:16: _Example.image: states no default; end it with "Default: `registry.example/app:1.0`."',
    ]


def test_the_writer_ends_each_doc_with_its_default(tmp_path: Path) -> None:
    assert rewritten(SOURCE, doc_edits(SOURCE, RECORDS)) == WRITTEN
    module = tmp_path / "example_args.py"
    module.write_text(SOURCE)
    assert write_docs({module: RECORDS}) == [module]
    assert module.read_text() == WRITTEN
    assert stale_docs({module: RECORDS}) == []


def test_writing_twice_changes_nothing(tmp_path: Path) -> None:
    module = tmp_path / "example_args.py"
    module.write_text(SOURCE)
    write_docs({module: RECORDS})
    assert write_docs({module: RECORDS}) == []
    assert module.read_text() == WRITTEN


def test_the_writer_takes_one_of_its_two_actions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--fix"]) == 2
    assert capsys.readouterr().err == "usage: python -m platform_config.arg_docs --write | --check\n"
    assert main(["--check"]) == 0  # the committed docs are as the writer writes them
