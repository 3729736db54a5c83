"""The door from `pulumi up`/`preview`: the engine's flat config into a validated StackConfig."""

from __future__ import annotations

import pulumi

from platform_config.errors import ConfigError
from platform_config.loader import StackConfig, parse_config
from platform_config.model_settings import render_stack
from platform_config.paths import DEFAULT_MODEL_REPO, display_path, stack_file
from triton_platform.kube.namespace import PROJECT
from triton_platform.model_packaging.source import read_repository


def flat_config() -> dict[str, str]:
    """All config the engine passed to this program.

    The language host hands a program its config in the PULUMI_CONFIG environment variable (the
    secret keys in PULUMI_CONFIG_SECRET_KEYS); `pulumi.Config` reads one key at a time, and these
    are the SDK's public readers of the whole set.
    """
    return dict(pulumi.runtime.get_config_env())


def secret_keys() -> set[str]:
    """The config keys the engine marked secret."""
    return set(pulumi.runtime.get_config_secret_keys_env())


NO_ENGINE = (
    "__main__.py is the Pulumi program of project {project!r}: it runs under the Pulumi engine, which hands it the "
    "stack's config (`pulumi preview --stack <stack>`, `pulumi up --stack <stack>`, or `make up`); started on its "
    "own (as project {started!r}) it has no stack to read. To check a stack without the engine: "
    "python -m stackctl validate --stack <stack>"
)


def stack_config_from_pulumi() -> StackConfig:
    """Validate the running stack's config; a mistake stops the program with the full report, no traceback."""
    if pulumi.get_project() != PROJECT:
        # Without the engine the SDK's defaults answer (project 'project', stack 'stack'), and the config is
        # empty: every key would be reported missing from a stacks/Pulumi.stack.yaml that was never read.
        raise SystemExit(NO_ENGINE.format(project=PROJECT, started=pulumi.get_project()))
    stack = pulumi.get_stack()
    source = display_path(stack_file(stack))
    repo = read_repository(DEFAULT_MODEL_REPO)
    try:
        flat = flat_config()
        config = parse_config(flat, source, repo, secret_keys=secret_keys())
    except ConfigError as err:
        raise pulumi.RunError(err.report()) from None
    return StackConfig(
        stack=stack,
        source=source,
        config=config,
        rendered=render_stack(stack, config.serving, config.models, repo),
    )
