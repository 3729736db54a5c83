"""Checking a component's Args: every problem collected, then one error naming the component and each Arg path.

Args may come from any Pulumi language through the component provider, as plain JSON: an integer can
arrive as a float (`16.0`) and a key the type marks NotRequired can be missing.
"""

from __future__ import annotations

from typing import Any


class ArgsError(ValueError):
    """A component's Args are wrong: one line per problem, `<Component> <name>: args.<path>: <problem>`."""


class ArgProblems:
    """The problems found in one component's Args, raised together by `check()`."""

    def __init__(self, component: str, name: str) -> None:
        self.prefix = f"{component} {name}"
        self.problems: list[str] = []

    @classmethod
    def of(cls, prefix: str) -> ArgProblems:
        """Problems of the component instance `prefix` (`<Component> <name>`) names, found later."""
        component, name = prefix.split(" ", 1)
        return cls(component, name)

    def add(self, path: str, problem: str) -> None:
        """`path` is the Arg's snake_case path below `args`, e.g. `karpenter.expire_after` or `taints[0].key`."""
        self.add_at(f"args.{path}", problem)

    def add_at(self, where: str, problem: str) -> None:
        """A problem located by the caller: an Arg's full path (`args.models.x`) or a file the Args point to."""
        self.problems.append(f"{self.prefix}: {where}: {problem}")

    def integer(self, path: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
        """`value` as an int (a whole float such as 16.0 is one), within the bounds; 0 after a recorded problem."""
        if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
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
        path: str,
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

    def clean(self, *paths: str) -> bool:
        """Whether no problem was recorded at these Arg paths or below them: a rule across Args reads only
        values that passed their own checks (a bad one stands in as 0 or empty)."""
        wheres = tuple(f"{self.prefix}: args.{path}" for path in paths)
        return not any(problem.startswith(where) for problem in self.problems for where in wheres)

    def check(self) -> None:
        """Raise every problem found, or nothing."""
        if self.problems:
            raise ArgsError("\n".join(self.problems))
