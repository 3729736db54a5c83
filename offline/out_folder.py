"""The `--out` folders of synth, model-repo, rules and simulate: written only where nothing else can be lost.

A command writes into a folder that is new, empty, or marked as its own by the manifest it left there, which
lists every file it wrote. A rerun removes exactly those files and writes the new manifest last. Anything else
in the folder (a user's file, another command's output, a listed file turned into a symlink or folder) makes
the command refuse before it changes anything.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from triton_platform.model_packaging.digest import Content
from triton_platform.model_packaging.layout import MANIFEST as MODEL_REPO_MANIFEST

MANIFEST = ".stackctl-output.json"
"""The manifest of synth, rules and simulate: `{"command": ..., "files": [relative paths]}`."""

COMMAND_MANIFESTS = {"model-repo": MODEL_REPO_MANIFEST}
"""Commands whose output already holds a manifest of its files: model-repo's (digest, stack, each file's sha256)
is part of the repository it publishes, so it marks the folder too and the published files stay as they were."""

SHOWN = 5
"""Unexpected files named in a message; the rest are counted."""
NAME_LIMITS = "a name in a path is at most 255 bytes and a whole path 4096 (Linux's NAME_MAX and PATH_MAX)"


class OutputFolderError(ValueError):
    """Why a command will not write into a folder, one problem a line.

    A ValueError, so a caller that reports those (stackctl's main) still prints it without a traceback."""

    def __init__(self, command: str, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        self.command = command
        super().__init__("\n".join(self.problems))

    def report(self) -> str:
        """Each problem as `stackctl <command>: <what>, <where>; <what is allowed>`."""
        return "\n".join(f"stackctl {self.command}: {problem}" for problem in self.problems)


def manifest_name(command: str) -> str:
    return COMMAND_MANIFESTS.get(command, MANIFEST)


def allowed(command: str) -> str:
    return f"use a new or empty folder, or one stackctl {command} wrote"


def _check_relative(path: str) -> None:
    """A path the manifest may list: relative, normalised, inside the folder."""
    pure = PurePosixPath(path)
    if not pure.parts or pure.is_absolute() or ".." in pure.parts or str(pure) != path or "\\" in path:
        raise ValueError(f"{path!r} is not a plain relative path inside the folder")


def _read_manifest(path: Path) -> tuple[str, list[str]]:
    """(command, listed files); ValueError saying why it is not a manifest stackctl wrote."""
    if not stat.S_ISREG(path.lstat().st_mode):
        raise ValueError("not a regular file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError("not UTF-8") from err
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    # model-repo's manifest names no command: its file name says whose it is.
    implied = next((c for c, name in COMMAND_MANIFESTS.items() if name == path.name), None)
    command = data.get("command", implied)
    files = data.get("files")
    if isinstance(files, dict):
        files = list(files)  # model-repo's: path -> sha256
    if not isinstance(command, str) or not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ValueError('no "command" and "files" list')
    for listed in files:
        _check_relative(listed)
    return command, [f for f in files if f != path.name]


def _entries(out: Path) -> tuple[set[str], set[str]]:
    """(every non-folder entry, every folder) below `out`, relative; symlinks are entries, never followed."""
    entries: set[str] = set()
    folders: set[str] = set()

    def fail(err: OSError) -> None:
        raise err

    for folder, dirnames, filenames in os.walk(out, onerror=fail):
        base = PurePosixPath(Path(folder).relative_to(out).as_posix())
        for name in dirnames:
            # os.walk lists a symlink to a folder among the folders; it is an entry like any file.
            (entries if (Path(folder) / name).is_symlink() else folders).add(str(base / name))
        entries.update(str(base / name) for name in filenames)
    return entries, folders


def _listing(paths: Iterable[str]) -> str:
    shown = sorted(paths)
    more = len(shown) - SHOWN
    return ", ".join(shown[:SHOWN]) + (f" and {more} more" if more > 0 else "")


def _parents(path: str) -> list[str]:
    """Folders above `path` inside the output folder, deepest first."""
    return [str(p) for p in PurePosixPath(path).parents if str(p) != "."]


def _kind(mode: int) -> str:
    return "a symlink" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode) else "not a regular file"


def _listed_problems(out: Path, command: str, listed: list[str]) -> dict[str, str]:
    """Listed files (or folders above them) that are now something else, by relative path: refused, never removed."""
    problems: dict[str, str] = {}
    for relative in listed:
        parts = PurePosixPath(relative).parts
        for depth in range(len(parts)):
            at = str(PurePosixPath(*parts[: depth + 1]))
            try:
                mode = (out / at).lstat().st_mode
            except FileNotFoundError:
                break  # already gone: nothing to remove
            last = depth == len(parts) - 1
            if (last and not stat.S_ISREG(mode)) or (not last and not stat.S_ISDIR(mode)):
                problems[at] = (
                    f"{out / at} is now {_kind(mode)}, not the {'file' if last else 'folder'} stackctl {command} "
                    "wrote; remove it by hand, or use a new or empty folder"
                )
                break
    return problems


def _creatable(out: Path, command: str) -> None:
    """A folder that does not exist yet: its nearest existing parent must be a folder we may write in."""
    ancestor = out.parent
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        what = "a file" if ancestor.is_file() else "not a folder"
        raise OutputFolderError(command, [f"--out {out} is inside {ancestor}, which is {what}; {allowed(command)}"])
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputFolderError(
            command, [f"--out {out} cannot be created: {ancestor} is not writable; {allowed(command)}"]
        )


@dataclass(frozen=True)
class OutputFolder:
    """A folder a command may write: `previous` are the files its last run there listed."""

    path: Path
    command: str
    previous: tuple[str, ...] = ()

    def replace(self, files: Mapping[str, Content], manifest: str | None = None) -> list[Path]:
        """Remove the previous run's files, write `files` (relative path -> content), the manifest last.

        `manifest` is the manifest's text where the command has its own format (model-repo)."""
        return self._write(files, frozenset(), manifest)

    def add(self, files: Mapping[str, bytes]) -> list[Path]:
        """Write `files` beside the previous run's (replacing any of the same name) and list them all."""
        return self._write(files, frozenset(self.previous) - files.keys(), None)

    def _manifest_text(self, files: Iterable[str]) -> str:
        return json.dumps({"command": self.command, "files": sorted(files)}, indent=2) + "\n"

    def _create(self, relative: str, content: Content) -> Path:
        target = self.path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        # "x": never through a symlink, never over a file that appeared since the folder was checked.
        with target.open("xb") as handle:
            # A file on disk (a model file) is copied a chunk at a time, never held whole.
            for block in [content] if isinstance(content, bytes) else content.chunks():
                handle.write(block)
        return target

    def _remove(self, relative: str) -> None:
        path = self.path / relative
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISREG(mode):
            raise OutputFolderError(
                self.command,
                [f"{path} is now {_kind(mode)}, not the file stackctl {self.command} wrote; remove it by hand"],
            )
        path.unlink()

    def _write(self, files: Mapping[str, Content], kept: frozenset[str], manifest: str | None) -> list[Path]:
        name = manifest_name(self.command)
        for relative in files:
            _check_relative(relative)
            if relative == name:
                raise ValueError(f"{relative} is the manifest's own name")
        removed = [p for p in self.previous if p not in kept]
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            # Old and new listed first: a run cut short leaves a folder the next run still takes as its own.
            self._remove(name)
            self._create(name, self._manifest_text({*self.previous, *files}).encode())
            for relative in removed:
                self._remove(relative)
            # Folders the removed files leave empty go too, deepest first; rmdir never removes a non-empty one.
            for folder in sorted({p for r in removed for p in _parents(r)}, key=lambda p: -p.count("/")):
                with contextlib.suppress(OSError):  # still holds files (ours, kept) or is already gone
                    (self.path / folder).rmdir()
            written = [self._create(relative, content) for relative, content in files.items()]
            self._remove(name)
            final = manifest if manifest is not None else self._manifest_text({*kept, *files})
            self._create(name, final.encode())
        except OSError as err:
            where = err.filename or self.path
            raise OutputFolderError(
                self.command, [f"cannot write {where}: {err.strerror or err}; {allowed(self.command)}"]
            ) from err
        return written


def _unreadable(out: Path, command: str, err: OSError) -> OutputFolderError:
    return OutputFolderError(
        command, [f"--out {out} cannot be read ({err.filename}: {err.strerror}); {allowed(command)}"]
    )


def _owner(out: Path, command: str, top: list[str]) -> tuple[str | None, list[str]]:
    """The command whose manifest is in `out` and the files it lists; (None, []) when there is none."""
    own = manifest_name(command)
    for name in dict.fromkeys(n for n in (own, MANIFEST, *COMMAND_MANIFESTS.values()) if n in top):
        try:
            return _read_manifest(out / name)
        except (OSError, ValueError) as err:
            if name == own:
                reason = err.strerror if isinstance(err, OSError) else str(err)
                raise OutputFolderError(
                    command, [f"{out / name} is not a manifest stackctl wrote ({reason}); {allowed(command)}"]
                ) from err
            # Otherwise someone else's file that merely has the name: unexpected like any other.
    return None, []


def _own_folder_problems(out: Path, command: str, listed: list[str]) -> list[str]:
    """In a folder `command` wrote: files it did not list, and listed ones that are now something else."""
    try:
        entries, folders = _entries(out)
    except OSError as err:
        raise _unreadable(out, command, err) from err
    changed = _listed_problems(out, command, listed)
    above = {p for listed_path in listed for p in _parents(listed_path)}
    unexpected = entries - set(listed) - set(changed) - {manifest_name(command)}
    # A folder with entries is named through them; an empty one of the user's is named itself.
    unexpected |= {
        f"{f}/" for f in folders - above - set(listed) if not any(e.startswith(f"{f}/") for e in entries | folders)
    }
    problems = []
    if unexpected:
        problems.append(
            f"{out} holds files stackctl {command} did not write (unexpected: {_listing(unexpected)}); "
            "move them out, or use a new or empty folder"
        )
    return problems + list(changed.values())


def claim(out: Path, command: str) -> OutputFolder:
    """The folder `command` may write, after checking it; changes nothing. OutputFolderError says why not."""
    try:
        return _claim(out, command)
    except OSError as err:
        # A path the system refuses outright (a name over 255 bytes, a symlink loop): no folder to check.
        limits = f"{NAME_LIMITS}; " if err.errno == errno.ENAMETOOLONG else ""
        raise OutputFolderError(
            command, [f"--out {out} cannot be used ({err.strerror}); {limits}{allowed(command)}"]
        ) from None


def _claim(out: Path, command: str) -> OutputFolder:
    if os.path.lexists(out) and not out.is_dir():
        what = "a file" if out.is_file() else "not a folder"
        raise OutputFolderError(command, [f"--out {out} is {what}; {allowed(command)}"])
    if not out.exists():
        _creatable(out, command)
        return OutputFolder(out, command)
    if not os.access(out, os.W_OK | os.X_OK):
        raise OutputFolderError(command, [f"--out {out} is not writable; {allowed(command)}"])
    try:
        top = sorted(p.name for p in out.iterdir())
    except OSError as err:
        raise _unreadable(out, command, err) from err
    if not top:
        return OutputFolder(out, command)
    owner, listed = _owner(out, command, top)
    if owner is None:
        # Only the top level is named: --out may be a large folder of the user's, not worth walking.
        shown = [f"{n}/" if (out / n).is_dir() and not (out / n).is_symlink() else n for n in top]
        raise OutputFolderError(
            command,
            [
                f"{out} is not empty and was not written by stackctl {command} "
                f"(unexpected: {_listing(shown)}); {allowed(command)}"
            ],
        )
    if owner != command:
        raise OutputFolderError(
            command, [f"{out} was written by stackctl {owner}, not stackctl {command}; {allowed(command)}"]
        )
    problems = _own_folder_problems(out, command, listed)
    if problems:
        raise OutputFolderError(command, problems)
    return OutputFolder(out, command, tuple(sorted(listed)))
