"""The stack's models as triton_platform.model_packaging renders them: which are served, their settings as values.

Each layer of settings (`serving.modelDefaults`, `triton-platform:models`) is handed over as TritonServing's
Args and read as the component reads them, so the stack's tools render exactly what the component deploys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from platform_config.component_fields import section_args
from platform_config.serving import ModelSettings, ServingConfig
from triton_platform.args.arg_problems import ArgProblems
from triton_platform.model_packaging.model_settings_args import ModelSettingsArgs
from triton_platform.model_packaging.render import RenderedRepository, render_repository
from triton_platform.model_packaging.source import ModelRepository
from triton_platform.serving.triton_serving_spec import COMPONENT, model_settings


def served_models(serving: ServingConfig) -> list[str]:
    """Every model some deployment serves."""
    return sorted({m for dep in serving.deployments.values() for m in dep.models})


def component_settings(settings: ModelSettings) -> ModelSettingsArgs:
    """A layer of the stack's model settings as TritonServing's Args, every default applied: what the renderer
    takes. Validated already (the schema checks every rule the component does)."""
    problems = ArgProblems(COMPONENT, "(stack)")
    out = model_settings(problems, (), cast("ModelSettingsArgs", section_args(settings)))
    problems.check()
    return out


def render_stack(
    stack: str, serving: ServingConfig, models: Mapping[str, ModelSettings], repo: ModelRepository
) -> RenderedRepository:
    """Every model `serving` serves, rendered as `<model>/configs/<stack>.pbtxt`; the config must have passed
    validation."""
    return render_repository(
        stack,
        repo,
        served_models(serving),
        component_settings(serving.model_defaults),
        {name: component_settings(settings) for name, settings in models.items()},
    )
