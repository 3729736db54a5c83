"""`python -m platform_config.arg_docs`: the closing `Default: ...` of each Arg's doc, written from its Setting.

An Arg's doc is the docstring below its key, and Pulumi's schema analyzer reads it from source, so it stays a
literal docstring there. Where the key's Setting declares a default (triton_platform/args/arg_schema.py), the doc's
last sentence is `Default: <value>.`, written here from the Setting and the key's type (`default_text`), with nothing
after it: whatever explains the default goes before. Docs of keys without a declared default are left as they are.

`--write` (`make arg-docs`) rewrites the Args modules in place: in each such docstring, from its `Default` clause to
the end of the string (or, without one, after its text), wrapped at the docstring's indentation so no line exceeds
120 characters; it prints each doc it changes first, so text it replaced after a default shows. `--check` prints
each doc that differs, `<file>:<line>: <Type>.<key>: <what>`, and exits 1
(tests/components/triton_platform/args/test_arg_defaults.py holds the committed modules to it).
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from platform_config.paths import display_path
from triton_platform.args.arg_schema import UNSET, arg_types, declared, input_type, is_args_type, setting
from triton_platform.gpu_pool import gpu_node_pool_args
from triton_platform.monitoring import monitoring_args
from triton_platform.scaling import keda_scaling_args
from triton_platform.serving import triton_serving_args

COMPONENT_ARGS = (gpu_node_pool_args, triton_serving_args, keda_scaling_args, monitoring_args)
"""The components' Args modules; the records their Args hold may be declared elsewhere (a chart's source)."""
WIDTH = 120
"""The longest line the writer leaves (the project's line length)."""
_CLAUSE = re.compile(r"\bDefault\b")
_QUOTES = '"""'


def default_text(default: Any, annotation: Any) -> str:
    """How a doc states a default of an Arg of type `annotation`: a string, number or boolean in backticks (numbers
    as `:g` prints them, booleans in lower case, the empty string as `""`); an empty list or map `none`, but an
    empty record (a TypedDict) `each field's default`; anything else its JSON, keys as given, in backticks."""
    annotation = input_type(annotation) or annotation
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, int | float):
        return f"`{format(default, 'g')}`"
    if isinstance(default, str):
        return f"`{default}`" if default else '`""`'  # an empty code span would show nothing
    if isinstance(default, dict) and not default and is_args_type(annotation):
        return "each field's default"
    if isinstance(default, list | tuple | dict) and not default:
        return "none"
    return f"`{json.dumps(default)}`"


def default_sentence(args_type: type, key: str) -> str | None:
    """The sentence that ends the doc of `args_type`'s `key`, or None where its Setting declares no default."""
    default = setting(args_type, key).default
    if default is UNSET:
        return None
    return f"Default: {default_text(default, arg_types(args_type)[key])}."


@dataclass(frozen=True)
class DocEdit:
    """One Arg doc that differs from what its Setting writes: where its string literal is in the source, as it is
    and as it should be."""

    record: str
    key: str
    line: int
    start: int
    """Offset of the literal's first character in the source."""
    end: int
    written: str
    """The literal as it should be, quotes included."""
    problem: str

    def text(self, path: Path) -> str:
        return f"{display_path(path)}:{self.line}: {self.record}.{self.key}: {self.problem}"


def _records_in(annotation: Any) -> Iterator[type]:
    """Each record (TypedDict) in `annotation`: itself, or one it lists, maps or wraps (`pulumi.Input`)."""
    if is_args_type(annotation):
        yield annotation
        return
    for argument in get_args(annotation):
        yield from _records_in(argument)


def args_records() -> dict[Path, dict[str, type]]:
    """Every record the components' Args hold that declares Settings, by the file that declares it, by name."""
    found: dict[type, None] = {}
    pending = [value for module in COMPONENT_ARGS for value in vars(module).values() if is_args_type(value)]
    while pending:
        record = pending.pop()
        if record not in found:
            found[record] = None
            pending += [nested for annotation in arg_types(record).values() for nested in _records_in(annotation)]
    files: dict[Path, dict[str, type]] = {}
    for record in found:
        if declared(record):
            files.setdefault(Path(inspect.getfile(record)), {})[record.__name__] = record
    return dict(sorted(files.items()))


def _offsets(source: str) -> list[int]:
    """Where each line of `source` starts (index 1 is line 1, as ast counts)."""
    starts = [0, 0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _position(source: str, starts: list[int], line: int, column: int) -> int:
    """A character offset from ast's line and UTF-8 byte column."""
    text = source[starts[line] : starts[line + 1] if line + 1 < len(starts) else len(source)]
    return starts[line] + len(text.encode()[:column].decode())


def _wrapped(prefix: str, sentence: str, column: int) -> str:
    """`prefix` (a docstring's text after its opening quotes, up to its default clause) and then `sentence`, word by
    word (`Default:` with the value's first word, a backticked value whole), a word going to a new line at the
    docstring's indentation (`column`) where it would take the line past WIDTH, the closing quotes counted on the
    last."""
    first, second, *rest = re.findall(r"(?:`[^`]*`|\S)+", sentence)
    words = [f"{first} {second}", *rest]
    out = prefix
    width = len(prefix.rsplit("\n", 1)[-1]) if "\n" in prefix else column + len(_QUOTES) + len(prefix)
    for index, word in enumerate(words):
        closing = len(_QUOTES) if index == len(words) - 1 else 0
        gap = 1 if out else 0
        if out and width + gap + len(word) + closing > WIDTH:
            out += "\n" + " " * column
            width, gap = column, 0
        out += " " * gap + word
        width += gap + len(word)
    return out


def _problem(doc: str, sentence: str) -> str:
    """What differs between the doc's text and the sentence that should end it."""
    text = " ".join(doc.split())
    clause = _CLAUSE.search(text)
    if clause is None:
        return f'states no default; end it with "{sentence}"'
    stated = text[clause.start() :]
    value = sentence.removeprefix("Default: ").removesuffix(".")
    if stated == sentence:
        return "wrapped otherwise than `python -m platform_config.arg_docs --write` writes it"
    said = re.sub(r"^Default:? ?", "", stated)
    if said.startswith(value) and said[len(value) :] not in ("", "."):
        return f'has more after its default ("{stated}"); say it before, and end with "{sentence}"'
    return f'says "{stated}"; its Setting\'s default is "{sentence}"'


def doc_edits(source: str, records: Mapping[str, type]) -> list[DocEdit]:
    """Each doc in `source` (a module's text) of a key of `records` (the TypedDicts it declares, by name) whose
    `Default` sentence differs from what the key's Setting writes."""
    starts, edits = _offsets(source), []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef) or node.name not in records:
            continue
        for target, after in itertools.pairwise(node.body):
            if not (isinstance(target, ast.AnnAssign) and isinstance(target.target, ast.Name)):
                continue
            if not (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)):
                continue
            literal = after.value
            sentence = default_sentence(records[node.name], target.target.id)
            if sentence is None or not isinstance(literal.value, str):
                continue
            start = _position(source, starts, literal.lineno, literal.col_offset)
            end = _position(source, starts, literal.end_lineno or literal.lineno, literal.end_col_offset or 0)
            old = source[start:end]
            if not (old.startswith(_QUOTES) and old.endswith(_QUOTES) and len(old) >= 2 * len(_QUOTES)):
                raise ValueError(f"{node.name}.{target.target.id}: the doc is not a plain triple-quoted string")
            inner = old[len(_QUOTES) : -len(_QUOTES)]
            clause = _CLAUSE.search(inner)
            prefix = (inner[: clause.start()] if clause else inner).rstrip()
            if prefix and not re.search(r"[.!?][)\"'`]*$", prefix):
                prefix += "."
            column = literal.col_offset
            new = _QUOTES + _wrapped(prefix, sentence.replace("\\", "\\\\"), column) + _QUOTES
            if new != old:
                problem = _problem(literal.value, sentence)
                edits.append(DocEdit(node.name, target.target.id, literal.lineno, start, end, new, problem))
    return edits


def rewritten(source: str, edits: Sequence[DocEdit]) -> str:
    """`source` with each edit's literal written in."""
    for edit in sorted(edits, key=lambda edit: edit.start, reverse=True):
        source = source[: edit.start] + edit.written + source[edit.end :]
    return source


def stale_docs(files: Mapping[Path, Mapping[str, type]] | None = None) -> list[str]:
    """Each doc of `files` (default: every Args record's, `args_records`) that `--write` would change, as `--check`
    prints it."""
    files = args_records() if files is None else files
    return [edit.text(path) for path, records in files.items() for edit in doc_edits(path.read_text(), records)]


def write_docs(files: Mapping[Path, Mapping[str, type]] | None = None) -> list[Path]:
    """Rewrite each doc of `files` (default: `args_records`) that differs; the files changed."""
    files = args_records() if files is None else files
    changed = []
    for path, records in files.items():
        source = path.read_text()
        edits = doc_edits(source, records)
        if edits:
            path.write_text(rewritten(source, edits))
            changed.append(path)
    return changed


def main(argv: Sequence[str]) -> int:
    """`--write`: rewrite each doc that differs, in place; `--check`: print each doc that differs, exit 1 if any."""
    if list(argv) not in (["--write"], ["--check"]):
        print("usage: python -m platform_config.arg_docs --write | --check", file=sys.stderr)
        return 2
    stale = stale_docs()
    for line in stale:
        print(line)
    if argv[0] == "--write":
        for path in write_docs():
            print(f"wrote {display_path(path)}")
        return 0
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
