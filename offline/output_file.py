"""The single files the commands write (a latency profile, a stack file they edit): one rule for all of them.

Never through a symbolic link (the link's target may be anything: a stack file, a key), never over a folder or a
device, never over a file that is not the command's own kind of output (a profile of the same model) unless the
user says `--force`, and whole or not at all: the bytes go to a new file beside it, synced, then renamed over it,
so an interrupted or failed write (a full disk) leaves the old file as it was. The `--out` folders have their own
rule (offline/out_folder.py).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from triton_platform.args.excerpts import excerpt

KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a named pipe", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device"}
PATH_CHARS = 4096
"""A path is shown whole (escaped, never cut): Linux's PATH_MAX."""
READ_LIMIT = 64 * 1024 * 1024
"""An existing file is read to tell whether it is the command's own output only up to this size: a larger one is
not (every output the commands write is far smaller)."""


def _path(path: Path | str) -> str:
    """A path as a message shows it: quoted and escaped like any value, but whole."""
    return excerpt(str(path), PATH_CHARS)


class OutputFileError(ValueError):
    """Why a command will not write a file. A ValueError: stackctl's main prints it without a traceback."""


@dataclass(frozen=True)
class OutputFile:
    """A file a command writes, and how it tells its own kind of output from anything else."""

    path: Path
    kind: str
    """What the command writes there, for messages, e.g. "a latency profile of model 'classifier'"."""
    ours: Callable[[bytes], bool] | None = None
    """Whether an existing file's bytes are the command's own kind of output, which it may replace; None: the file
    is the command's own input, which it edits in place (a stack file)."""
    force: bool = False
    """Replace an existing regular file of another kind (`--force`); a link or a folder never."""

    def problem(self) -> str | None:
        """Why this file may not be written, or None."""
        shown = _path(self.path)
        try:
            info = self.path.lstat()
        except FileNotFoundError:
            parent = self.path.parent
            if not parent.is_dir():
                return f"{shown}: its folder {_path(parent)} does not exist; create it first"
            return None
        except OSError as err:
            return f"{shown}: cannot be read ({err.strerror})"
        if stat.S_ISLNK(info.st_mode):
            target = _path(os.readlink(self.path))
            return (
                f"{shown} is a symbolic link (to {target}); stackctl writes no file through a link: give the path of "
                "the file itself"
            )
        if not stat.S_ISREG(info.st_mode):
            return f"{shown} is {KINDS.get(stat.S_IFMT(info.st_mode), 'not a regular file')}; give a file's path"
        if self.ours is None or self.force:
            return None
        if info.st_size > READ_LIMIT or not self.ours(self._existing()):
            return (
                f"{shown} holds something other than {self.kind}; stackctl replaces only its own kind of output "
                "there: give another path, or --force to replace it"
            )
        return None

    def _existing(self) -> bytes:
        # O_NOFOLLOW: a link put in place since lstat is refused rather than read.
        descriptor = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(descriptor, "rb") as handle:
            return handle.read(READ_LIMIT + 1)

    def check(self) -> None:
        """OutputFileError if this file may not be written: before the work that produces it."""
        problem = self.problem()
        if problem is not None:
            raise OutputFileError(problem)

    def write(self, data: bytes) -> None:
        """Replace the file with `data` whole (checked again first); OutputFileError naming it when that fails."""
        self.check()
        folder = self.path.parent
        try:
            mode = stat.S_IMODE(self.path.lstat().st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        temporary = None
        try:
            with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{self.path.name}.", delete=False) as handle:
                temporary = Path(handle.name)
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            temporary.chmod(mode)
            # A rename replaces a link put there since the check, never writes through it.
            temporary.replace(self.path)
            temporary = None
        except OSError as err:
            reason = "the disk is full" if err.errno == errno.ENOSPC else (err.strerror or str(err))
            raise OutputFileError(f"{_path(self.path)}: not written, {reason}; it is as it was") from err
        finally:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    temporary.unlink()
