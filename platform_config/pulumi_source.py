"""The door from `pulumi up`/`preview`: the engine's flat config into a validated StackConfig."""

from __future__ import annotations

from collections.abc import Iterable

import pulumi
from pulumi.runtime import config as runtime_config

from model_packaging.source import read_repository
from platform_config.errors import ConfigError
from platform_config.loader import StackConfig, parse_config, stack_file
from platform_config.model_settings import render_stack
from platform_config.paths import DEFAULT_MODEL_REPO, display_path


def flat_config() -> dict[str, str]:
    """All config the engine passed to this program, whichever way it passed it."""
    return {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}


def secret_keys(keys: Iterable[str]) -> set[str]:
    """Those of `keys` the engine marked secret, whichever way it passed them."""
    from_env = set(runtime_config.get_config_secret_keys_env())
    return {k for k in keys if k in from_env or runtime_config.is_config_secret(k)}


def stack_config_from_pulumi() -> StackConfig:
    """Validate the running stack's config; a mistake stops the program with the full report, no traceback."""
    stack = pulumi.get_stack()
    source = display_path(stack_file(stack))
    repo = read_repository(DEFAULT_MODEL_REPO)
    try:
        flat = flat_config()
        config = parse_config(flat, source, repo, secret_keys=secret_keys(flat))
    except ConfigError as err:
        raise pulumi.RunError(err.report()) from None
    return StackConfig(
        stack=stack,
        source=source,
        config=config,
        rendered=render_stack(stack, config.serving, config.models, repo),
    )
