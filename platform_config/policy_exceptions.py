"""`triton-platform:policyExceptions`: objects allowed to break a rule of the policy pack, with the reason on record."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from platform_config.types import KeyProblemError, Strict
from policy.rules import POLICY_NAMES
from triton_platform.args.excerpts import excerpt
from triton_platform.args.formats import KIND, object_name_problem


def _stated_reason(reason: str) -> str:
    # min_length alone counts spaces: a reason must say something, since every preview prints it.
    if not reason.strip():
        raise ValueError(f"{excerpt(reason)} is blank; say why this object may break the rule (at least 20 characters)")
    if len(reason.strip()) < 20:
        raise ValueError(
            f"{excerpt(reason)} has {len(reason.strip())} characters besides surrounding whitespace; "
            "say why this object may break the rule in at least 20"
        )
    return reason


class PolicyException(Strict):
    """One object allowed to break one rule of the policy pack (`policy/`), with the reason on record."""

    policy: Literal[POLICY_NAMES]  # type: ignore[valid-type]
    """The policy's name, as in the policy table of docs/policy.md."""

    kind: Annotated[str, Field(pattern=KIND, max_length=63)]
    """Kind of the object, e.g. `Service`."""

    name: Annotated[str, Field(min_length=1, max_length=253)]
    """`metadata.name` of the object, valid for its kind; it must be an object the stack creates (`stackctl synth` lists them)."""

    reason: Annotated[str, Field(min_length=20), AfterValidator(_stated_reason)]
    """Why this object may break the rule (at least 20 characters besides surrounding whitespace); every preview prints it."""

    @model_validator(mode="after")
    def _name_fits_kind(self) -> PolicyException:
        problem = object_name_problem(self.kind, self.name)
        if problem:
            raise KeyProblemError("name", problem)
        return self
