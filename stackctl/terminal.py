"""Everything stackctl prints passes here: the one rule for text that may hold a server's, a file's or a path's
characters (a Triton server's version, a GPU UUID label, a stack file's name).

While a command runs, `guarded` puts `SafeText` in front of stdout and stderr, so no print can go around it:

- a character that is not printable (control characters, DEL, C1, bidirectional overrides, line and paragraph
  separators) is shown escaped as `repr` shows it (`\\x1b`), so an escape sequence never reaches a terminal; a
  newline and a tab stay as they are;
- nothing becomes a GitHub Actions workflow command by accident. The runner reads a command from a line that starts
  with `::` after its leading whitespace, and the older form from `##[` anywhere in a line (actions/runner,
  src/Runner.Common/ActionCommand.cs, TryParseV2 and TryParse); such a line's first `:` is shown as `\\x3a`, and `##[`
  as `#\\x23[`. The commands' own annotations (`validate` under GitHub Actions) are written by `workflow_command`,
  whose value the caller has escaped as the toolkit does.

JSON on stdout goes through `json_text`, which escapes the same characters the JSON way (`\\u009b`), so the object
stays one that parses to the same values.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, TextIO

_V2_COMMAND = re.compile(r"^(\s*):")
_V1_COMMAND = "##["


def _escaped_char(char: str) -> str:
    """A character as Python's repr shows it inside a string (`\\x1b`, `\\u202e`, `\\U000e0001`)."""
    return repr(char)[1:-1] if char != "'" else char


def _printable(text: str) -> str:
    """`text` with every character that is not printable, other than a newline or a tab, escaped."""
    if text.replace("\n", "").replace("\t", "").isprintable():
        return text
    return "".join(c if c.isprintable() or c in "\n\t" else _escaped_char(c) for c in text)


def safe_line(line: str) -> str:
    """One line (no newline) as stackctl prints it: printable, and never a workflow command."""
    line = _printable(line).replace(_V1_COMMAND, "#\\x23[")
    if line.lstrip().startswith("::"):
        line = _V2_COMMAND.sub(lambda m: f"{m.group(1)}\\x3a", line, count=1)
    return line


class SafeText(io.TextIOBase):
    """A text stream in front of `stream` that writes each whole line through `safe_line`.

    A line is held until its newline (or `finish`), so a command's first characters are judged with the rest of
    their line whatever pieces `print` writes it in."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        if "\n" not in text:
            self._pending += text  # no line ends here: nothing to judge yet
            return len(text)
        *lines, rest = (self._pending + text).split("\n")
        self._pending = rest
        self.stream.write("".join(f"{safe_line(line)}\n" for line in lines))
        return len(text)

    def workflow_command(self, line: str) -> None:
        """`line`, a workflow command whose values the caller escaped as the toolkit does (a newline as `%0A`),
        written after the held text with only what is not printable escaped."""
        if "\n" in line or "\r" in line or not line.startswith("::"):
            raise ValueError(f"not one escaped workflow command: {line!r}")
        if self._pending:
            # The held text ends its line first: the command must start one of its own.
            self.write("\n")
        self.stream.write(f"{_printable(line)}\n")

    def finish(self) -> None:
        """Write the held part of a line (a command's last text without a newline)."""
        if self._pending:
            pending, self._pending = self._pending, ""
            self.stream.write(safe_line(pending))
        self.stream.flush()

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # TextIOBase declares it read-only; this is that too
        return self.stream.encoding

    def writable(self) -> bool:
        return True


@contextmanager
def guarded() -> Iterator[None]:
    """stdout and stderr behind `SafeText` while a command runs; the streams it found, back after."""
    found = sys.stdout, sys.stderr
    out, err = SafeText(sys.stdout), SafeText(sys.stderr)
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        sys.stdout, sys.stderr = found
        for stream in (out, err):
            # The reader went away, or a test closed its capture: nothing is left to tell.
            with suppress(BrokenPipeError, ValueError):
                stream.finish()


def workflow_command(line: str) -> None:
    """A GitHub Actions workflow command on stderr (the runner reads commands from both streams)."""
    stream = sys.stderr
    if isinstance(stream, SafeText):
        stream.workflow_command(line)
    else:
        SafeText(stream).workflow_command(line)


def raw_stderr() -> TextIO:
    """The terminal itself, for the progress bar alone: tqdm draws with carriage returns, and prints only what
    stackctl gives it (the command's name, counts), never a server's or a file's text."""
    stream = sys.stderr
    return stream.stream if isinstance(stream, SafeText) else stream


def _json_escaped_char(char: str) -> str:
    """A character as a JSON string escape (a UTF-16 pair beyond the Basic Multilingual Plane)."""
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(value: Any) -> str:
    """`value` as indented JSON whose every character is printable: what json leaves raw inside strings (C1, DEL,
    bidirectional overrides) escaped as `\\uXXXX`, and `##[` as `#\\u0023[`, so `SafeText` passes it unchanged."""
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    if not text.replace("\n", "").isprintable():
        text = "".join(c if c.isprintable() or c == "\n" else _json_escaped_char(c) for c in text)
    return text.replace(_V1_COMMAND, "#\\u0023[")
