"""Files read as input: a regular file within the bound of its kind, checked before anything reads it.

Every file the project reads as input goes through `InputFile`: stack files, load traces, latency profiles,
model files and configs, the passphrase file. A path is first `stat`-ed (following symlinks) and refused unless
it is a regular file within its kind's bound, without being opened: reading a FIFO waits for a writer that may
never come, a device such as /dev/zero never ends, and opening some devices has effects of its own. A file that
passes is opened non-blocking and checked again on the open descriptor (the path may have been swapped for
something else in between), and never read past its bound, so a file that grows while it is read stays bounded.
Content is read in chunks of CHUNK bytes wherever it need not be whole (hashing, copying), so memory does not
grow with a model file's size.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

CHUNK = 1024 * 1024
"""Bytes read at a time where content is hashed or copied: memory stays at this, whatever the file's size."""

_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")


def size_text(size: int) -> str:
    """A size as a person reads it: `512 bytes`, `4 MiB`, `12.3 GiB`."""
    value, unit = float(size), 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    if unit == 0:
        return f"{size} bytes"
    return f"{value:.0f} {_UNITS[unit]}" if value.is_integer() else f"{value:.1f} {_UNITS[unit]}"


@dataclass(frozen=True)
class InputKind:
    """What a file is for (`stack file`) and the most bytes one may hold: each reader defines its own, with why."""

    name: str
    limit: int

    @property
    def allowed(self) -> str:
        return f"a {self.name} is a regular file of at most {size_text(self.limit)}"


def _file_type(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


class InputFileError(ValueError):
    """A file refused for what it is or its size: `problem` names that and what is allowed, `str()` adds the path.

    A ValueError, so callers that report bad input (stackctl's main) print it without a traceback."""

    def __init__(self, path: Path, what: str, kind: InputKind) -> None:
        self.path = path
        self.problem = f"{what}; {kind.allowed}"
        super().__init__(f"{path}: {self.problem}")


@dataclass(frozen=True)
class InputFile:
    """A file of a kind, read only after it is checked: whole (`read_bytes`, `read_text`) or in chunks."""

    path: Path
    kind: InputKind

    def check(self) -> os.stat_result:
        """The file's status, following symlinks; InputFileError unless a regular file within the bound.

        OSError for anything else that stops a `stat` (a missing file, no permission): callers report those as
        they always have.
        """
        try:
            status = self.path.stat()
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise self._refused("a symlink loop (its links never reach a file)") from None
            if err.errno == errno.ENOENT and self.path.is_symlink():
                raise self._refused(f"a symlink to {os.readlink(self.path)}, which does not exist") from None
            raise
        self._within_bounds(status)
        return status

    def _refused(self, what: str) -> InputFileError:
        return InputFileError(self.path, what, self.kind)

    def _within_bounds(self, status: os.stat_result) -> None:
        if not stat.S_ISREG(status.st_mode):
            raise self._refused(_file_type(status.st_mode))
        if status.st_size > self.kind.limit:
            raise self._refused(size_text(status.st_size))

    def _open(self) -> BinaryIO:
        self.check()
        # O_NONBLOCK: should the path have become a FIFO since the check, opening it does not wait for a writer.
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        try:
            self._within_bounds(os.fstat(fd))
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise

    def chunks(self) -> Iterator[bytes]:
        """The content in chunks of at most CHUNK bytes; InputFileError if it grows past the bound meanwhile."""
        with self._open() as handle:
            total = 0
            while block := handle.read(CHUNK):
                total += len(block)
                if total > self.kind.limit:
                    raise self._refused(f"more than {size_text(self.kind.limit)} (it grew while it was read)")
                yield block

    def read_bytes(self) -> bytes:
        with self._open() as handle:
            data = handle.read(self.kind.limit + 1)
        if len(data) > self.kind.limit:
            raise self._refused(f"more than {size_text(self.kind.limit)} (it grew while it was read)")
        return data

    def read_text(self, encoding: str = "utf-8", newline: str | None = None) -> str:
        """The content decoded as `open(path, encoding=..., newline=...).read()` would (universal newlines by
        default, `newline=""` keeps them as they are); UnicodeDecodeError where it is not `encoding`."""
        return io.TextIOWrapper(io.BytesIO(self.read_bytes()), encoding=encoding, newline=newline).read()

    def sha256(self) -> bytes:
        """The content's sha256, read in chunks."""
        sha = hashlib.sha256()
        for block in self.chunks():
            sha.update(block)
        return sha.digest()
