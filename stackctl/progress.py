"""Progress on stderr while a long command runs, with the time left: shown only when stderr is a terminal, so
pipelines and logs get the result alone (tqdm)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import TracebackType

from tqdm import tqdm

from stackctl.terminal import raw_stderr


def shown() -> bool:
    return sys.stderr.isatty()


class Bar:
    """`done` of `total` steps of `what` (simulated seconds, candidates), with the rate and the time left."""

    def __init__(self, command: str, total: int, unit: str) -> None:
        self._bar = tqdm(
            total=total, unit=unit, desc=f"stackctl {command}", disable=not shown(), leave=False, file=raw_stderr()
        )

    def update(self, done: int, note: str = "") -> None:
        self._bar.update(done - self._bar.n)
        if note:
            self._bar.set_postfix_str(note, refresh=False)

    def close(self) -> None:
        self._bar.close()


class Stages:
    """A command's stages, one step each, the current one named (synth: its total is not known before the program
    runs, so the estimate is per stage)."""

    def __init__(self, command: str, names: Sequence[str]) -> None:
        self._names = list(names)
        self._bar = tqdm(
            total=len(names),
            desc=f"stackctl {command}",
            disable=not shown(),
            leave=False,
            unit="stage",
            file=raw_stderr(),
        )
        self._bar.set_postfix_str(self._names[0])

    def done(self) -> None:
        self._bar.update(1)
        if self._bar.n < len(self._names):
            self._bar.set_postfix_str(self._names[self._bar.n])

    def __enter__(self) -> Stages:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._bar.close()
