"""`stackctl`: the offline command line over the platform's libraries (docs/stackctl.md).

Every error is caught here, once, and ends in its exit code (`stackctl.command.Exit`): a user's mistake prints
one message naming the input; a bug prints one line, and its traceback with `--debug`.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from platform_config.errors import ConfigError, bounded
from stackctl.command import Command, Exit, print_json
from stackctl.commands import COMMANDS
from stackctl.terminal import guarded

DEBUG_HELP = "show the traceback of an unexpected error"
BROKEN_PIPE = 141
"""The exit code when stdout's reader went away: 128 + SIGPIPE, what a shell reports for a tool it killed so."""


def _version() -> str:
    from triton_platform import __version__  # noqa: PLC0415 (the package's version, stated once there)

    return f"stackctl {__version__}"


def _add_command(commands: argparse._SubParsersAction[Parser], command: Command) -> None:
    sub = commands.add_parser(command.name, help=command.help, description=command.description or command.help)
    # Also after the command (`stackctl validate --debug`); the root's default applies when absent.
    sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
    if command.json:
        sub.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    command.add_arguments(sub)
    sub.set_defaults(command_run=command.run)


class Parser(argparse.ArgumentParser):
    """argparse's parser whose usage error, under `--json`, also prints the one JSON object the contract promises
    (docs/stackctl.md): a pipeline reading stdout gets `passed: false` and exit code 2, not an empty stream."""

    arguments: tuple[str, ...] = ()
    """The command line being parsed: set by `main` for this run."""

    def error(self, message: str) -> NoReturn:
        if "--json" in self.arguments:
            names = {command.name for command in COMMANDS}
            command = next((argument for argument in self.arguments if argument in names), None)
            error = f"{self.prog}: error: {message}"
            print_json({"command": command, "passed": False, "exit_code": int(Exit.INPUT), "error": error})
        super().error(message)


def parser() -> Parser:
    root = Parser(
        prog="stackctl",
        description="Validate, synthesize, simulate and plan a stack offline: no Pulumi CLI, backend or cluster. "
        "Exit codes: 0 passed, 1 a check failed, 2 a usage or input error, 3 a bug (docs/stackctl.md).",
    )
    root.add_argument("--version", action="version", version=_version())
    root.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        _add_command(commands, command)
    return root


def encoding_safe_output() -> None:
    """Print what the terminal's encoding cannot show as escapes (`\\xe9`) instead of failing on it.

    Messages echo paths and values, which may hold any character; under PYTHONIOENCODING=ascii (or a C locale)
    a stack that validates must not fail for printing its own path."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def _refuse(args: argparse.Namespace, message: str, code: Exit) -> Exit:
    print(message, file=sys.stderr)
    if getattr(args, "json", False):
        print_json({"command": args.command, "passed": False, "exit_code": int(code), "error": message})
    return code


def main(argv: Sequence[str] | None = None) -> int:
    encoding_safe_output()  # on the streams themselves, before SafeText stands in front of them
    try:
        with guarded():
            return _main(argv)
    except BrokenPipeError:
        # The reader of stdout went away (`| head`): stop quietly, as a shell tool killed by SIGPIPE does, and
        # send what is still buffered nowhere rather than fail again at exit (Python's docs, "Note on SIGPIPE").
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE


def _main(argv: Sequence[str] | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    Parser.arguments = tuple(arguments)
    args = parser().parse_args(arguments)
    out = getattr(args, "out", None)
    try:
        if out is not None:
            from offline.out_folder import claim  # noqa: PLC0415 (startup: only commands that write load it)

            # Refuse a folder before any work (a synth, a simulation), not only when writing into it.
            claim(Path(out), args.command)
        return int(args.command_run(args))
    except ConfigError as err:
        return _refuse(args, err.report(), Exit.INPUT)
    except BrokenPipeError:
        raise
    except (ValueError, OSError) as err:
        # Bad input files (traces, profiles), refused or unwritable output folders: the message names the file.
        from offline.out_folder import OutputFolderError  # noqa: PLC0415

        message = (
            err.report() if isinstance(err, OutputFolderError) else f"stackctl {args.command}: {bounded(str(err))}"
        )
        return _refuse(args, message, Exit.INPUT)
    except Exception as err:
        # A bug, not a user mistake: one line, and the traceback only when asked for, printed here so that it too
        # passes the terminal's rule (its text may hold a server's or a file's).
        if args.debug:
            traceback.print_exc()
            return Exit.BUG
        return _refuse(
            args,
            f"stackctl {args.command}: unexpected error: {type(err).__name__}: {bounded(str(err))}; "
            f"this is a bug in stackctl; rerun with --debug for the traceback",
            Exit.BUG,
        )
