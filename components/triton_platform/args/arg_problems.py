"""Checking a component's Args: every problem collected as data (an Arg path and a reason), then one error naming
the component and each problem, as pulumi-eks raises `InputPropertiesError` with `{propertyPath, reason}`.

Args may come from any Pulumi language through the component provider, as plain JSON: an integer can
arrive as a float (`16.0`) and a key the type marks NotRequired can be missing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi.errors import InputPropertiesError

from triton_platform.args.excerpts import key_step

Step = str | int
"""One step of an Args path: a field's or a map key's name, or a list index."""

ArgPath = tuple[Step, ...]
"""An Arg's place below `args`, e.g. `("karpenter", "expire_after")` or `("taints", 0, "key")`."""


def path_text(path: ArgPath) -> str:
    """How a message writes an Args path: `args.karpenter.expire_after`, `args.taints[0].key`, `args.labels["a.b"]`
    (a key that is not plain as JSON, so a label key's dots and slashes are not steps)."""
    return "args" + "".join(f"[{step}]" if isinstance(step, int) else key_step(step) for step in path)


@dataclass(frozen=True)
class ArgProblem:
    """One problem: at an Arg's `path`, or, where `where` is set, elsewhere (`path` then `()`): a file the Args point
    to, or, empty, the instance as a whole (an object another instance creates already)."""

    path: ArgPath
    reason: str
    where: str | None = None

    def line(self, prefix: str) -> str:
        where = path_text(self.path) if self.where is None else self.where
        return f"{prefix}: {where}: {self.reason}" if where else f"{prefix}: {self.reason}"


PropertyPaths = Callable[[ArgPath], str]
"""How the engine names an Arg at a path among the component's inputs (`arg_schema.property_path` of its Args type)."""


class ArgsError(InputPropertiesError, ValueError):
    """A component's Args are wrong. Its text is one line per problem, `<Component> <name>: args.<path>: <reason>`;
    `problems` holds them as data, and `errors` (the SDK's) each Arg's property path among the component's inputs
    (`gpusPerNode`, `taints[0].key`, `labels["a.b"]`; the Args path itself where no Args type names them) and reason."""

    def __init__(self, prefix: str, problems: Sequence[ArgProblem], paths: PropertyPaths | None = None) -> None:
        self.prefix = prefix
        self.problems = list(problems)
        self.paths = paths
        lines = "\n".join(p.line(prefix) for p in self.problems)
        named = paths or (lambda path: path_text(path).removeprefix("args").removeprefix("."))
        errors = [{"property_path": named(p.path), "reason": p.reason} for p in self.problems if p.where is None]
        super().__init__(lines, errors)  # type: ignore[arg-type]  # InputPropertyErrorDetails is this TypedDict

    def __reduce__(self) -> tuple[type[ArgsError], tuple[str, list[ArgProblem]]]:
        # Pickled or copied (a process pool, pytest-xdist) as what it was made from; the names of its errors come
        # from a function, so a copy names them by their Args paths.
        return (type(self), (self.prefix, self.problems))


class ArgProblems:
    """The problems found in one component's Args, raised together by `check()`."""

    def __init__(self, component: str, name: str, paths: PropertyPaths | None = None) -> None:
        self.prefix = f"{component} {name}"
        self.problems: list[ArgProblem] = []
        self.paths = paths

    @classmethod
    def of(cls, prefix: str) -> ArgProblems:
        """Problems of the component instance `prefix` (`<Component> <name>`) names, found later."""
        component, name = prefix.split(" ", 1)
        return cls(component, name)

    def add(self, path: ArgPath, problem: str) -> None:
        """A problem of the Arg at `path` (below `args`)."""
        self.problems.append(ArgProblem(path, problem))

    def add_at(self, where: str, problem: str) -> None:
        """A problem located elsewhere than the Args: a file the Args point to."""
        self.problems.append(ArgProblem((), problem, where))

    def integer(self, path: ArgPath, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
        """`value` as an int (a whole float such as 16.0 is one), within the bounds; 0 after a recorded problem."""
        whole = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
        if isinstance(value, bool) or not whole:
            self.add(path, f"{value!r} is not a whole number")
            return 0
        number = int(value)
        if minimum is not None and number < minimum:
            self.add(path, f"{number} is below the minimum {minimum}")
        if maximum is not None and number > maximum:
            self.add(path, f"{number} is above the maximum {maximum}")
        return number

    def number(
        self,
        path: ArgPath,
        value: Any,
        *,
        above: float | None = None,
        at_least: float | None = None,
        at_most: float | None = None,
    ) -> float:
        """`value` as a float (an int is one) within the bounds given, all named when one fails; 0 after a
        recorded problem."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.add(path, f"{value!r} is not a number")
            return 0.0
        bounds = {
            "above": (above, value > (above or 0)),
            "at least": (at_least, value >= (at_least or 0)),
            "at most": (at_most, value <= (at_most or 0)),
        }
        given = {word: holds for word, (bound, holds) in bounds.items() if bound is not None}
        if not all(given.values()):
            rule = " and ".join(f"{word} {bounds[word][0]:g}" for word in given)
            self.add(path, f"{value:g} is not {rule}")
        return float(value)

    def clean(self, *paths: ArgPath) -> bool:
        """Whether no problem was recorded at these Arg paths or below them: a rule across Args reads only
        values that passed their own checks (a bad one stands in as 0 or empty)."""
        return not any(p.where is None and p.path[: len(path)] == path for p in self.problems for path in paths)

    def check(self) -> None:
        """Raise every problem found, or nothing."""
        if self.problems:
            raise ArgsError(self.prefix, self.problems, self.paths)
