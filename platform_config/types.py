"""Field types the stack's own keys share (those not set from a component's Args): names, URLs, image digests, charts.

Each carries the rule of the software that consumes the value, with its source, so a section
module only names what its fields are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePath
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from platform_config.paths import PROJECT_ROOT
from triton_platform.args.excerpts import excerpt
from triton_platform.args.formats import (
    CHART_REPOSITORY,
    CHART_VERSION,
    DNS_LABEL,
    SHA256_DIGEST,
    URL,
    control_character_problem,
    tagged_image_problem,
    url_host_problem,
)
from triton_platform.kube.helm_chart import ChartSource


def _valid(problem: Callable[[str], str | None]) -> Any:
    """An AfterValidator raising what a format rule of the component package finds, in its words."""

    def check(value: str) -> str:
        found = problem(value)
        if found is not None:
            raise ValueError(found)
        return value

    return AfterValidator(check)


class KeyProblemError(ValueError):
    """A model validator's finding about one of its keys, so the error names that key's path.

    `key` is the path below the model, dotted for a nested key (`simulation.gpuMemoryRatio`): keys are camelCase.
    """

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


class KeyProblemsError(ValueError):
    """A component's rule run by a model validator (`component_fields.component_rule`): each finding at the path
    of steps below the model it names (camelCase keys, list indexes, the user's own keys)."""

    def __init__(self, problems: list[tuple[tuple[str | int, ...], str]]) -> None:
        super().__init__("; ".join(message for _, message in problems))
        self.problems = problems


class Strict(BaseModel):
    """Base for every config object: camelCase keys, unknown keys rejected, no coercion."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=False,
        extra="forbid",
        strict=True,
        frozen=True,
        use_attribute_docstrings=True,
        allow_inf_nan=False,
    )


ImageTag = Annotated[str, _valid(tagged_image_problem)]
"""An image by its tag, as `imageDigests` keys name them."""
ImageDigest = Annotated[str, Field(pattern=SHA256_DIGEST)]


def inside_project(kind: str, example: str) -> Any:
    """An AfterValidator for a path relative to the project root that stays inside it, links followed.

    The stack file is reviewed and versioned with the project: a path that leaves it makes what the
    stack does depend on one machine's files, which no review sees and no other checkout has.
    `kind` ("folder", "file") and `example` word the message.
    """

    def check(path: str) -> str:
        if PurePath(path).is_absolute():
            raise ValueError(
                f"{excerpt(path)} is an absolute path; give a {kind} relative to the project root, inside it, "
                f"e.g. {example}"
            )
        try:
            resolved = (PROJECT_ROOT / path).resolve()
        except (RuntimeError, OSError):
            # Python 3.11's resolve() raises RuntimeError on a symlink loop (3.13's OSError).
            raise ValueError(f"{excerpt(path)} is a symlink loop; give a {kind} inside the project root") from None
        if resolved == PROJECT_ROOT:
            raise ValueError(f"{excerpt(path)} is the project root itself; give a {kind} inside it, e.g. {example}")
        if not resolved.is_relative_to(PROJECT_ROOT):
            raise ValueError(
                f"{excerpt(path)} leads outside the project (to {resolved}); give a {kind} inside the project root, "
                f"e.g. {example}"
            )
        return path

    return AfterValidator(check)


HttpUrl = Annotated[str, Field(pattern=URL), _valid(url_host_problem)]

PrintableText = Annotated[str, _valid(control_character_problem)]
"""Free text that `stackctl` prints or a CI step writes out as it is (a kubeconfig context): no newline, carriage
return, escape or other control character, which could forge a line of output or drive the terminal."""

STACK_NAME = r"^[A-Za-z0-9_.-]+$"
STACK_NAME_MAX = 100
"""Pulumi's stack names: tokens.IsName (https://github.com/pulumi/pulumi/blob/master/sdk/go/common/tokens/names.go)
and the backends' 100-character limit (https://github.com/pulumi/pulumi/blob/master/pkg/backend/diy/store.go)."""


def stack_name_problem(name: str) -> str | None:
    """Why Pulumi would refuse `name` as a stack name (one from a `Pulumi.<name>.yaml` file included), or None."""
    rule = f"Pulumi stack names are 1-{STACK_NAME_MAX} letters, digits, '-', '_' and '.'"
    if not re.fullmatch(STACK_NAME, name):
        return f"stack name {excerpt(name)} has characters Pulumi does not allow; {rule}"
    if len(name) > STACK_NAME_MAX:
        return f"stack name {excerpt(name)} has {len(name)} characters; {rule}"
    return None


NamespaceName = Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]
"""A Namespace's name: a DNS-1123 label."""


ChartVersion = Annotated[str, Field(pattern=CHART_VERSION)]
ChartRepository = Annotated[str, Field(pattern=CHART_REPOSITORY)]


class HelmChart(Strict):
    """A pinned Helm chart, from its repository or from a local folder."""

    repository: ChartRepository
    """Chart repository URL."""

    version: ChartVersion
    """Exact chart version. With `path`, the folder's `Chart.yaml` must declare this version."""

    values: dict[str, Any] = {}
    """Chart values merged over the platform's own (maps merge key by key; anything else replaces). For what the platform does not set: a component's resources, node placement, or turning off a subchart an offline mirror lacks. The result is previewed and policy-checked like every object."""

    path: str | None = None
    """A chart folder (unpacked, dependencies in its `charts/`), relative to the project root or absolute, used instead of `repository`: for air-gapped clusters and mirrors. Unset: the chart is fetched from `repository`."""

    def source(self) -> ChartSource:
        """The chart as components take it: a folder as an absolute path."""
        if self.path is not None:
            return {"version": self.version, "path": str((PROJECT_ROOT / self.path).resolve()), "values": self.values}
        return {"version": self.version, "repository": self.repository, "values": self.values}

    @model_validator(mode="after")
    def _local_chart(self) -> HelmChart:
        if self.path is None:
            return self
        if "repository" in self.model_fields_set:
            raise KeyProblemError("path", "give either `repository` or `path`, not both")
        folder = PROJECT_ROOT / self.path
        manifest = folder / "Chart.yaml"
        if not manifest.is_file():
            raise KeyProblemError("path", f"{self.path!r} is not a chart folder: no Chart.yaml in {folder}")
        declared = (yaml.safe_load(manifest.read_text()) or {}).get("version")
        if str(declared) != self.version:
            raise KeyProblemError(
                "path", f"{self.path!r} holds chart version {declared}, but `version` pins {self.version}"
            )
        return self
