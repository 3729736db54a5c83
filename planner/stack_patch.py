"""The stack file with a plan's values, edited round trip so that every comment, anchor and layout stays.

Each changed value carries an end-of-line note naming `stackctl plan`, the trace and the date; inside a
flow mapping (`replicas: {min: 2, max: 10}`) the note goes on the line's key. A value's note replaces an
older plan's note on the same line, so re-planning does not pile them up.

Exactly the planned keys change. A mapping on a planned key's path that is an alias (`*name`) or comes in
through a merge key (`<<: *name`) is shared with its anchor: the edit goes into a copy at the planned place,
so the anchor and its other users keep their values. Where the planned place is the anchor itself, PatchError
refuses, as it does for any result that still changes a key the plan did not (checked on the loaded data).
Line endings stay as the file has them: CRLF comes back CRLF. A key the patch adds goes at the end of its mapping,
and the comment lines that stood below that mapping's last line (ruamel files them under it: they are the next
key's, or the file's end) move below the new last line, so they stay above the key they describe.

`stackctl pin-images` writes its digests with the same `patched`, naming itself in the notes and the refusals.
"""

from __future__ import annotations

import difflib
import io
from collections import Counter
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.tokens import CommentToken

from planner.settings import Place, Value, apply_edits

NOTE_PREFIX = "stackctl plan"
NEEDS = "the stack file is left as it is; write the values plan.md lists by hand"
"""What a refusal asks of the user."""


@dataclass(frozen=True)
class Wording:
    """How a refusal names the values, the rerun and what is asked of the user: the plan's by default."""

    values: str = "the plan"
    again: str = "plan again"
    needs: str = NEEDS


PLAN = Wording()

Written = Value | str
"""A value a patch writes: the plan's numbers and lists, or a string (`stackctl pin-images`' digests)."""


class PatchError(ValueError):
    """Why the plan's values cannot go into the stack file without changing anything else."""


def _yaml() -> YAML:
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap a long line
    yaml.indent(mapping=2, sequence=4, offset=2)  # the stack files' own layout: lists indented under their key
    return yaml


def _new_map(parent: MutableMapping[str, Any]) -> CommentedMap:
    child = CommentedMap()
    if isinstance(parent, CommentedMap) and parent.fa.flow_style():
        child.fa.set_flow_style()
    return child


def _note(mapping: CommentedMap, key: str, note: str) -> None:
    """`  # note` at the end of `key`'s line, keeping the comments ruamel files under the same key."""
    entry = mapping.ca.items.setdefault(key, [None, None, None, None])
    # Slot 2 holds the line's own comment, then the comment lines above the next key.
    own, _, below = entry[2].value.partition("\n") if entry[2] is not None else ("", "", "")
    own = "" if own.strip().startswith(f"# {NOTE_PREFIX}") else own.strip()
    # Column 0: the emitter puts one space after the value, the text another.
    entry[2] = CommentToken(f" {own + '; ' if own else '# '}{note}\n{below}", CommentMark(0))


def _split(token: CommentToken | None) -> tuple[str, str]:
    """A slot-2 comment's own part (the line's end, with its newline) and the comment lines below that line."""
    if token is None:
        return "", ""
    own, newline, below = token.value.partition("\n")
    return own + newline, below


def _last_line(node: object) -> tuple[CommentedMap | CommentedSeq, object, int] | None:
    """Where ruamel files the comments below `node`'s last line: (container, key or index, slot); None for a
    flow-style or empty node, whose last line is its parent's."""
    found = None
    while isinstance(node, CommentedMap | CommentedSeq) and node and not node.fa.flow_style():
        key = next(reversed(node)) if isinstance(node, CommentedMap) else len(node) - 1
        # A mapping's key keeps its line's comment in slot 2, a sequence's item in slot 0.
        found = (node, key, 2 if isinstance(node, CommentedMap) else 0)
        node = node[key]
    return found


def _take_tail(node: object) -> str:
    """The comment lines below `node`'s last line, removed from where ruamel filed them."""
    where = _last_line(node)
    if where is None:
        return ""
    container, key, slot = where
    entry = container.ca.items.get(key)
    if entry is None or entry[slot] is None:
        return ""
    own, below = _split(entry[slot])
    if not below:
        return ""
    entry[slot] = CommentToken(own, entry[slot].start_mark) if own.strip() else None
    return below


def _put_tail(node: object, tail: str) -> None:
    """`tail`, comment lines taken by `_take_tail`, below `node`'s new last line."""
    where = _last_line(node)
    if not tail or where is None:
        return
    container, key, slot = where
    entry = container.ca.items.setdefault(key, [None, None, None, None])
    own, below = _split(entry[slot])
    entry[slot] = CommentToken(f"{own or chr(10)}{below}{tail}", CommentMark(0))


def _appended_to(config: CommentedMap, paths: list[Place]) -> list[CommentedMap]:
    """The existing block mappings the patch adds a key to (its own, or the first of the mappings it creates)."""
    found: list[CommentedMap] = []
    for path in paths:
        node = config
        for key in path:
            if key not in node:
                if not node.fa.flow_style() and all(node is not other for other in found):
                    found.append(node)
                break
            child = node[key]
            if not isinstance(child, CommentedMap):
                break
            node = child
    return found


def _line_of(config: CommentedMap, path: Place) -> tuple[CommentedMap, str]:
    """The block mapping and key whose line holds the value at `path`: a flow mapping's line is its key's."""
    node = config
    for key in path[:-1]:
        child = node[key]
        if child.fa.flow_style():
            return node, key
        node = child
    return node, path[-1]


def _flow(value: Written) -> Any:
    """A list the way the stack files write short lists: `[8, 16]`."""
    if not isinstance(value, list):
        return value
    sequence = CommentedSeq(value)
    sequence.fa.set_flow_style()
    return sequence


def _children(node: object) -> Iterator[tuple[object, object]]:
    """(key or index, value) below a mapping, its merged keys included, or a sequence."""
    if isinstance(node, CommentedMap):
        yield from node.items()
    elif isinstance(node, CommentedSeq):
        yield from enumerate(node)


def _holders(doc: object) -> tuple[Counter[int], dict[int, Place]]:
    """For each mapping or sequence, by id: how many places hold it (aliases and merge keys count), and the
    place that holds it first in document order, where its anchor is written."""
    counts: Counter[int] = Counter()
    first: dict[int, Place] = {}

    def walk(node: object, place: Place) -> None:
        counts[id(node)] += 1
        if id(node) in first:
            return
        first[id(node)] = place
        if isinstance(node, CommentedMap):
            for source in node.merge:
                walk(source, (*place, "<<"))
        for key, child in _children(node):
            if isinstance(child, CommentedMap | CommentedSeq):
                walk(child, (*place, str(key)))

    walk(doc, ())
    return counts, first


def _copy(node: object) -> object:
    """An unshared copy of `node`'s data in its flow or block style: no anchor, no merge key, no comment (the
    comments stay with the original, where they were written)."""
    if isinstance(node, CommentedMap):
        mapping = CommentedMap((key, _copy(value)) for key, value in node.items())
        if node.fa.flow_style():
            mapping.fa.set_flow_style()
        return mapping
    if isinstance(node, CommentedSeq):
        sequence = CommentedSeq(_copy(item) for item in node)
        if node.fa.flow_style():
            sequence.fa.set_flow_style()
        return sequence
    return node


def _unshare(
    config: CommentedMap, paths: list[Place], holders: tuple[Counter[int], dict[int, Place]], wording: Wording
) -> None:
    """Give every shared mapping on a planned path its own copy at that path, so that the edit reaches no other
    place; PatchError where the planned place is the anchor others use."""
    counts, first = holders
    for path in paths:
        node = config
        for depth, key in enumerate(path[:-1], start=1):
            child = node.get(key)
            if not isinstance(child, CommentedMap):
                break
            if counts[id(child)] > 1:
                if first[id(child)] == ("config", *path[:depth]):
                    anchor = f"the anchor &{child.anchor.value}" if child.anchor.value else "a mapping"
                    raise PatchError(
                        f"{'.'.join(path[:depth])} is {anchor} that other keys use (an alias or a merge key), so "
                        f"writing {'.'.join(path)} there would change them too; {wording.needs}"
                    )
                if child.anchor.value:
                    # Kept even when this alias was its last user: the anchor's line is no planned key.
                    child.yaml_set_anchor(child.anchor.value, always_dump=True)
                child = _copy(child)
                node[key] = child
            node = child


def _leaves(node: object, place: Place = ()) -> dict[Place, object]:
    """Every value of loaded YAML by its place, aliases and merge keys resolved; a list is one value."""
    if isinstance(node, Mapping):
        if not node:
            return {place: {}}
        return {
            leaf: value for key, child in node.items() for leaf, value in _leaves(child, (*place, str(key))).items()
        }
    return {place: node}


def _unplanned(before: str, after: str, changes: Mapping[Place, Written]) -> list[str]:
    """The keys whose loaded value differs between `before` and `after` other than as `changes` set them."""
    safe = YAML(typ="safe", pure=True)
    expected = _leaves(safe.load(before))
    for path, value in changes.items():
        place = ("config", *path)
        # The planned key replaces its whole value, and any empty mapping it is created in.
        expected = {
            leaf: v for leaf, v in expected.items() if place[: len(leaf)] != leaf and leaf[: len(place)] != place
        }
        if value is not None:
            expected[place] = value
    got = _leaves(safe.load(after))
    return sorted(
        ".".join(leaf[1:] if leaf[:1] == ("config",) else leaf)
        for leaf in expected.keys() | got.keys()
        if expected.get(leaf, ...) != got.get(leaf, ...)
    )


def _newline(text: str, wording: Wording) -> str:
    """The file's line ending: CRLF where every line ends so, else LF; PatchError for a mix."""
    crlf = text.count("\r\n")
    if crlf == 0 and "\r" not in text:
        return "\n"
    if crlf == text.count("\n") == text.count("\r"):
        return "\r\n"
    other = text.count("\n") + text.count("\r") - 2 * crlf
    raise PatchError(
        f"its lines end in both CRLF ({crlf} lines) and LF or a lone CR ({other}), "
        f"and a patch keeps a file's line endings; give every line one kind, then {wording.again}; {wording.needs}"
    )


def patched(text: str, changes: Mapping[Place, Written], note: str, wording: Wording = PLAN) -> str:
    """`text`, a stack file, with `changes` applied under `config:`, each changed line noted, nothing else changed.

    PatchError: why that cannot be done, in `wording`."""
    newline = _newline(text, wording)
    source = text.replace("\r\n", "\n")
    yaml = _yaml()
    doc = yaml.load(source)
    config = doc["config"]
    _unshare(config, list(changes), _holders(doc), wording)
    grown = _appended_to(config, [path for path, value in changes.items() if value is not None])
    tails = [(mapping, _take_tail(mapping)) for mapping in grown]
    apply_edits(config, {path: _flow(value) for path, value in changes.items()}, _new_map)
    for path, value in changes.items():
        if value is not None:
            _note(*_line_of(config, path), note)
    for mapping, tail in tails:
        _put_tail(mapping, tail)
    out = io.StringIO()
    yaml.dump(doc, out)
    result = out.getvalue()
    unplanned = _unplanned(source, result, changes)
    if unplanned:
        raise PatchError(
            f"writing {wording.values} would also change {', '.join(unplanned)}, which a YAML anchor, alias or "
            f"merge key ties to a planned key; {wording.needs}"
        )
    return result.replace("\n", newline)


def unified_diff(before: str, after: str, name: str) -> str:
    """A unified diff: `git apply`-able (a/, b/) for a file in the project, `patch -p0` for one outside."""
    old, new = (name, name) if Path(name).is_absolute() else (f"a/{name}", f"b/{name}")
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), old, new))
