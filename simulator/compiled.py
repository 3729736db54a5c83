"""How the simulator's loops are compiled: numba, with its on-disk cache keyed by the simulator's source, not by
where the source lies.

numba's own cache sits in `__pycache__` beside each source file (or, with NUMBA_CACHE_DIR, in a folder named by
a hash of the source folder's path), so every fresh clone, CI checkout and installed copy compiled the fluid model
again: about 15 s before a new user's first plan. Here every copy of the same simulator shares one cache: a folder
per digest of the package's source files (`simulator/*.py`: the compiled loops read constants from several of
them, which numba's own stamp, one file's, would miss), under NUMBA_CACHE_DIR when set, else the user's cache
folder (XDG_CACHE_HOME, else ~/.cache) in `triton-platform/numba/`. numba still checks each entry's signature,
CPU and bytecode (numba.core.caching.IndexDataCacheImpl). `make venv` fills it ahead of time (simulator/ahead.py).

The cache holds pickles that numba loads and runs, so it is trusted only where this user alone can write: a
folder owned by another user, or writable by group or others, is not used (numba's own locators are, as before).
Folders of other digests untouched for CACHE_DAYS are removed, so a long-lived machine keeps a few.

The hook is numba's NUMBA_CACHE_LOCATOR_CLASSES (numba/core/caching.py, `_CacheImpl.__init__`, numba 0.68): the
locator here first, numba's defaults after it; a user's own setting of it is left as it is.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import string
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import numba
import numba.core.config
import numpy as np
from numba.core.caching import _CacheLocator
from numpy.typing import NDArray

PACKAGE = Path(__file__).resolve().parent
CACHE_DAYS = 30
"""Other digests' folders untouched this long are removed."""
NUMBA_LOCATORS = (
    "UserProvidedCacheLocator",
    "InTreeCacheLocator",
    "UserWideCacheLocator",
    "IPythonCacheLocator",
    "ZipCacheLocator",
)
"""numba's own locators, in its order (numba/core/caching.py `_CacheImpl._locator_classes`), tried after this one."""

F = TypeVar("F", bound=Callable[..., Any])
Floats = NDArray[np.float64]
Ints = NDArray[np.int64]
"""The plain arrays compiled functions take."""
config: Any = numba.core.config  # its settings are set from the environment at import: untyped


@cache
def source_digest() -> str:
    """The digest of the simulator package's source: each module's name and bytes."""
    digest = hashlib.sha256()
    for module in sorted(PACKAGE.glob("*.py")):
        digest.update(module.name.encode() + b"\0" + module.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def cache_root() -> Path:
    """NUMBA_CACHE_DIR when set, else the user's cache folder's `triton-platform/numba`."""
    if config.CACHE_DIR:
        return Path(config.CACHE_DIR)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "triton-platform" / "numba"


def _private(folder: Path) -> bool:
    """A real folder (no link) owned by this user that no one else may write."""
    info = folder.lstat()
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def _prune(root: Path, keep: str) -> None:
    """Remove the folders of other digests untouched for CACHE_DAYS."""
    oldest = time.time() - CACHE_DAYS * 86400
    for folder in root.iterdir():
        # Only this module's folders: a digest's hex (NUMBA_CACHE_DIR may hold numba's own `<folder>_<sha1>` ones).
        ours = len(folder.name) == len(keep) and all(c in string.hexdigits for c in folder.name)
        stale = folder.name != keep and ours and _private(folder)
        if stale and folder.stat().st_mtime < oldest:
            shutil.rmtree(folder, ignore_errors=True)


class SourceDigestLocator(_CacheLocator):
    """numba's cache for the simulator's functions, in cache_root()/source_digest()."""

    def __init__(self, py_func: Callable[..., Any]) -> None:
        self._lineno = py_func.__code__.co_firstlineno
        self._root = cache_root()
        self._path = self._root / source_digest()

    def ensure_cache_path(self) -> None:
        for folder in (self._root, self._path):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not _private(folder):
                raise PermissionError(f"{folder}: not a folder that only this user can write")
        os.utime(self._path)
        _prune(self._root, self._path.name)
        super().ensure_cache_path()  # type: ignore[no-untyped-call]

    def get_cache_path(self) -> str:
        return str(self._path)

    def get_source_stamp(self) -> str:
        return source_digest()

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func: Callable[..., Any], py_file: str) -> SourceDigestLocator | None:
        """This locator for a function of the simulator package whose cache folder is safe to use, else None (numba's
        next locator)."""
        if Path(py_file).resolve().parent != PACKAGE:
            return None
        locator = cls(py_func)
        try:
            locator.ensure_cache_path()
        except OSError:
            return None
        return locator


def _use_locator() -> None:
    if not config.CACHE_LOCATOR_CLASSES:
        config.CACHE_LOCATOR_CLASSES = ",".join((f"{__name__}.{SourceDigestLocator.__name__}", *NUMBA_LOCATORS))


def compiled(func: F) -> F:
    """`func` compiled by numba in nopython mode, cached on disk by the simulator's source digest."""
    _use_locator()
    return numba.njit(cache=True, error_model="numpy")(func)  # type: ignore[return-value]  # a Dispatcher, called as `func`
