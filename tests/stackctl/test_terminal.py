"""stackctl/terminal.py: everything a command prints is printable and no workflow command by accident; a command
that prints around it fails here."""

from __future__ import annotations

import ast
import io
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from platform_config.paths import PROJECT_ROOT
from stackctl.main import main
from stackctl.terminal import SafeText, guarded, json_text, safe_line, workflow_command

HOSTILE = "\x1b]0;owned\x07\x1b[2J::error::forged##[error]old\u202edesrever\x9b31m\r"


def _printed(pieces: list[str]) -> str:
    sink = io.StringIO()
    stream = SafeText(sink)
    for piece in pieces:
        stream.write(piece)
    stream.finish()
    return sink.getvalue()


def _is_command(line: str) -> bool:
    return line.lstrip().startswith("::") or "##[" in line


def test_a_hostile_line_is_shown_escaped() -> None:
    assert safe_line(HOSTILE) == ("\\x1b]0;owned\\x07\\x1b[2J::error::forged#\\x23[error]old\\u202edesrever\\x9b31m\\r")
    assert safe_line("  ::error file=x::forged") == "  \\x3a:error file=x::forged"
    assert safe_line("\u2003::warning::em space") == "\\u2003::warning::em space"  # escaped: no command


def test_a_command_split_across_writes_is_judged_as_one_line() -> None:
    assert _printed([":", ":error::split", "\n", " #", "#[warning]x\n"]) == ("\\x3a:error::split\n #\\x23[warning]x\n")


@given(st.lists(st.text(), max_size=8))
def test_whatever_is_written_comes_out_printable_and_no_command(pieces: list[str]) -> None:
    out = _printed(pieces)
    assert out.replace("\n", "").replace("\t", "").isprintable()
    assert not any(_is_command(line) for line in out.split("\n"))


PLAIN = st.characters().filter(lambda c: c.isprintable() and c not in ":#")
"""What Python's repr shows as it is (no control, format or separator character), and no command's first one."""


@given(st.lists(st.text(alphabet=PLAIN)))
def test_plain_text_comes_out_as_it_went_in(pieces: list[str]) -> None:
    assert _printed([f"{piece}\n" for piece in pieces]) == "".join(f"{piece}\n" for piece in pieces)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(JSON_VALUES)
def test_json_reads_back_the_same_and_passes_unchanged(value: object) -> None:
    text = json_text(value)
    assert json.loads(text) == value
    assert _printed([f"{text}\n"]) == f"{text}\n"


def test_a_workflow_command_is_one_escaped_line() -> None:
    sink = io.StringIO()
    stream = SafeText(sink)
    stream.write("held")
    stream.workflow_command("::error file=a.yaml,line=3::bad%0Avalue")
    stream.workflow_command("::error::\x1b[31mred")
    # The held text ends its line first, so the command starts one of its own.
    assert sink.getvalue() == "held\n::error file=a.yaml,line=3::bad%0Avalue\n::error::\\x1b[31mred\n"
    for line in ("::error::two\nlines", "::error::carriage\rreturn", "error::no prefix"):
        with pytest.raises(ValueError, match="not one escaped workflow command"):
            stream.workflow_command(line)


def test_the_streams_come_back_after_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    found = sys.stdout, sys.stderr
    with guarded():
        assert isinstance(sys.stdout, SafeText)
        print("half", end="")
        workflow_command("::notice::done")
    assert (sys.stdout, sys.stderr) == found
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("half", "::notice::done\n")


def test_a_stack_file_named_to_forge_a_command_is_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file name is anyone's text: a newline and `::error::` in it must not become an annotation in CI."""
    folder = tmp_path / "x\n::error::forged\x1b[31m"
    folder.mkdir()
    stack = folder / "Pulumi.dev.yaml"
    stack.write_bytes((PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml").read_bytes())
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert main(["validate", "--config", str(stack)]) == 0
    out = capsys.readouterr().out
    assert "x\n\\x3a:error::forged\\x1b[31m/Pulumi.dev.yaml: OK" in out
    assert not any(_is_command(line) for line in out.split("\n"))
    stack.write_text("config:\n  triton-platform:environment: nowhere\n")
    assert main(["validate", "--config", str(stack), "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["passed"] is False
    annotations = [line for line in captured.err.split("\n") if line.startswith("::error ")]
    assert annotations, captured.err
    assert all("x%0A%3A%3Aerror%3A%3Aforged\\x1b[31m/Pulumi.dev.yaml,line=" in line for line in annotations)
    assert [line for line in captured.err.split("\n") if _is_command(line)] == annotations


PRINTERS = {("sys", "__stdout__"), ("sys", "__stderr__"), ("os", "write"), ("sys", "displayhook")}
"""Ways to the terminal that do not pass sys.stdout and sys.stderr."""
RAW = {"stackctl/terminal.py", "stackctl/progress.py"}
"""The rule itself, and the progress bar it hands the terminal to (tqdm prints only stackctl's own counts)."""


SUBPROCESS = {"run", "Popen", "call", "check_call", "check_output"}


def _bypasses(path: Path) -> list[str]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and (node.value.id, node.attr) in PRINTERS
        ):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
        elif isinstance(node, ast.Attribute) and node.attr == "buffer":
            found.append((node.lineno, ".buffer"))
        elif isinstance(node, ast.Name) and node.id == "raw_stderr":
            found.append((node.lineno, "raw_stderr"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and (node.func.value.id, node.func.attr) in {("subprocess", name) for name in SUBPROCESS}
        ):
            keywords = {k.arg for k in node.keywords}
            if "capture_output" not in keywords and not {"stdout", "stderr"} <= keywords:
                found.append((node.lineno, f"subprocess.{node.func.attr} with the terminal as its output"))
    return [f"{what} at line {line}" for line, what in sorted(found)]


def test_no_command_prints_around_the_rule() -> None:
    """Every print in stackctl/, preview/ and offline/ goes through sys.stdout and sys.stderr, which `guarded`
    holds: a command that writes to the original streams, a file descriptor, or lets a child process print fails
    here."""
    found = {}
    for path in sorted(
        p for folder in ("stackctl", "preview", "offline") for p in PROJECT_ROOT.glob(f"{folder}/**/*.py")
    ):
        relative = str(path.relative_to(PROJECT_ROOT))
        if relative not in RAW and (bypasses := _bypasses(path)):
            found[relative] = bypasses
    assert found == {}


def test_the_bypass_check_names_what_it_finds(tmp_path: Path) -> None:
    script = tmp_path / "command.py"
    script.write_text(
        "import os, subprocess, sys\n"
        "sys.__stdout__.write('x')\n"
        "os.write(1, b'x')\n"
        "sys.stdout.buffer.write(b'x')\n"
        "subprocess.run(['tar', '-x'])\n"
        "subprocess.run(['git'], capture_output=True)\n"
    )
    assert _bypasses(script) == [
        "sys.__stdout__ at line 2",
        "os.write at line 3",
        ".buffer at line 4",
        "subprocess.run with the terminal as its output at line 5",
    ]


def test_a_traceback_under_debug_passes_the_rule_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--debug shows a bug's traceback; its text (a server's, a file's) is escaped like any other."""
    import platform_config.loader  # noqa: PLC0415 - the module validate reads the stack through

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("server said\n::error title=pwned::forged\n##[warning]old form")

    monkeypatch.setattr(platform_config.loader, "load_stack_file", broken)
    assert main(["--debug", "validate", "--config", str(PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml")]) == 3
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert "\\x3a:error title=pwned::forged" in err
    assert "#\\x23[warning]old form" in err
    assert not any(_is_command(line) for line in err.split("\n"))


def test_a_line_written_a_character_at_a_time_comes_out_whole() -> None:
    """Held until its newline (only the new text is searched for one), then judged whole."""
    sink = io.StringIO()
    stream = SafeText(sink)
    for _ in range(100_000):
        stream.write("x")
    stream.write("\n")
    assert sink.getvalue() == "x" * 100_000 + "\n"
