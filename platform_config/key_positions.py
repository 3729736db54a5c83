"""Where a config key sits in a stack file: its line and column, so that an error can be jumped to (an editor's
`file:line:column`, a GitHub annotation)."""

from __future__ import annotations

import json
import re

import yaml

_STEP = re.compile(r'\["((?:[^"\\]|\\.)*)"\]|\[(\d+)\]|([^.\[\]]+)')
"""A step of a key path: `["a.b"]` (a key holding dots, as excerpts.key_step writes it), `[0]`, or a plain key."""


KEY_MARK = " (key)"
"""What a path ends with when the issue is the key itself, not its value (arg_schema's and pydantic's key checks)."""


def _unquoted(quoted: str) -> str:
    """A `["..."]` step's key: JSON, as excerpts.key_step writes it (a non-ASCII letter as `\\u00e4`)."""
    try:
        return str(json.loads(f'"{quoted}"'))
    except ValueError:
        return quoted  # a key cut short (`…`): matched as written


def _steps(path: str) -> list[str]:
    """`a.b[0]["c.d"]` as `["a", "b", "0", "c.d"]`."""
    path = path.removesuffix(KEY_MARK)
    return [_unquoted(quoted) if quoted else index or plain for quoted, index, plain in _STEP.findall(path)]


def _walk(node: yaml.Node, steps: list[str]) -> yaml.Node | None:
    """The deepest node along `steps` below `node` (a key's node for a mapping, the item for a list); None when not
    even the first step is there."""
    found: yaml.Node | None = None
    depth = 0
    while depth < len(steps):
        rest = steps[depth:]
        child: tuple[yaml.Node, yaml.Node] | None = None
        taken = 0
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if not isinstance(key, yaml.ScalarNode):
                    continue
                # The key as one step (`["a.b"]`), or as the steps its dots make when the path left it unquoted.
                for parts in ([str(key.value)], _steps(str(key.value))):
                    if parts and rest[: len(parts)] == parts and len(parts) > taken:
                        child, taken = (key, value), len(parts)
        elif isinstance(node, yaml.SequenceNode) and rest[0].isdigit() and int(rest[0]) < len(node.value):
            item = node.value[int(rest[0])]
            child, taken = (item, item), 1
        if child is None:
            break
        found, node = child
        depth += taken
    return found


def key_position(text: str, path: str) -> tuple[int, int] | None:
    """The 1-based line and column of `path` in a stack file's text: a key under the file's `config:` as ConfigIssue
    names it, else a top-level key (`environment`); of its deepest ancestor the file has, when the key itself is
    absent (a missing key is reported at the mapping that lacks it). None when the text is not YAML, when nothing
    of the path is there, and for the issues about the file or the stack's name (`(file)`, `(stack)`).

    A key may itself hold dots (`triton-platform:serving`, a model name): at each mapping the longest key that
    the remaining path starts with is taken."""
    if path.startswith("("):
        return None
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return None
    if not isinstance(root, yaml.MappingNode):
        return None
    steps = _steps(path)
    config = _walk(root, ["config"])
    found: yaml.Node | None = None
    if config is not None:
        config_value = next(v for k, v in root.value if k is config)
        found = _walk(config_value, steps)
        if found is None:
            found = config
    at_root = _walk(root, steps)
    if at_root is not None and (found is None or found is config):
        found = at_root
    if found is None:
        return None
    return found.start_mark.line + 1, found.start_mark.column + 1
