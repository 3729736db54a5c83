"""`stackctl validate`: check a stack's config and report every error, each at its file, line and column."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from platform_config.errors import FILE_ISSUE, ConfigError
from stackctl.command import Command, Exit, model_repo_argument, print_json, stack_arguments, stack_source
from stackctl.terminal import workflow_command

if TYPE_CHECKING:
    from platform_config.capacity import ModelCapacity
    from platform_config.loader import StackConfig
    from platform_config.wake import WakeEstimate
    from triton_platform.model_packaging.source import ModelRepository


def add_arguments(parser: argparse.ArgumentParser) -> None:
    stack_arguments(parser)
    model_repo_argument(parser, "model repository to check names against (default: model_repo/)")


def _errors(err: ConfigError, path: Path) -> list[dict[str, Any]]:
    """Each issue with the line and column of its key in the stack file (None where the file has no such place)."""
    from platform_config.key_positions import key_position  # noqa: PLC0415

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    errors = []
    for issue in err.issues:
        position = (issue.line, issue.column) if issue.line else key_position(text, issue.path) if text else None
        line, column = position if position else (None, None)
        errors.append({"file": err.source, "line": line, "column": column, "key": issue.path, "message": issue.message})
    return errors


def _escape(text: str, *, property_value: bool = False) -> str:
    """A value in a GitHub Actions workflow command (actions/toolkit, packages/core/src/command.ts escapeData and
    escapeProperty)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if property_value else text


def _annotate(errors: list[dict[str, Any]]) -> None:
    """Under GitHub Actions, each error as an `::error` annotation on its line of the stack file (the runner reads
    workflow commands from stderr as from stdout, so --json's stdout stays one object)."""
    for error in errors:
        where = f"file={_escape(error['file'], property_value=True)}"
        if error["line"] is not None:
            where += f",line={error['line']},col={error['column']}"
        title = _escape(error["key"], property_value=True)
        workflow_command(f"::error {where},title={title}::{_escape(error['key'] + ': ' + error['message'])}")


def _wakes(loaded: StackConfig, repo: ModelRepository | None) -> dict[str, WakeEstimate]:
    """The wake estimate of each deployment at zero (platform_config/wake.py), where the file holds what it reads."""
    from platform_config.node_provisioning import pool_node_provisioning  # noqa: PLC0415
    from platform_config.paths import DEFAULT_MODEL_REPO  # noqa: PLC0415
    from platform_config.schema import section_key  # noqa: PLC0415
    from platform_config.wake import kept_gpu, wake_estimate  # noqa: PLC0415
    from triton_platform.model_packaging.source import read_repository  # noqa: PLC0415

    config = loaded.config
    if {section_key(key) for key in ("cluster", "serving", "scaling", "gpuPool")} & set(loaded.deferred):
        return {}
    repo = read_repository(DEFAULT_MODEL_REPO) if repo is None else repo
    node = pool_node_provisioning(config.cluster, config.gpu_pool, config.scaling.simulation)
    return {
        name: wake_estimate(
            node, config.scaling.simulation, repo, deployment.models, kept_gpu(config.gpu_pool, config.serving, name)
        )
        for name, deployment in sorted(config.serving.deployments.items())
        if deployment.wake is not None
    }


def _capacities(loaded: StackConfig) -> dict[str, dict[str, ModelCapacity]]:
    """For the demand signal, each deployment's capacity per pod of each model (platform_config/capacity.py)."""
    from platform_config.capacity import demand_capacities  # noqa: PLC0415

    if loaded.rendered is None or loaded.deferred:
        return {}
    configs = {model: served.config for model, served in loaded.rendered.models.items()}
    return demand_capacities(loaded.config.serving, loaded.config.scaling, configs)[0]


def _token_triggers(loaded: StackConfig) -> dict[str, list[str]]:
    """Each deployment's token triggers and why (triton_platform/token_signal.py), where it has any."""
    from program.platform import token_triggers_of  # noqa: PLC0415
    from triton_platform.monitoring.token_rules import token_metrics  # noqa: PLC0415
    from triton_platform.token_signal import NOT_PICKED, WHY  # noqa: PLC0415

    rendered, config = loaded.rendered, loaded.config
    if rendered is None or loaded.deferred or not config.scaling.enabled:
        return {}
    out = {}
    for key, deployment in sorted(config.serving.deployments.items()):
        triggers = token_triggers_of(config, rendered, key)
        if not triggers:
            continue
        backends = {
            token_metrics(rendered.source.models[m]) for m in deployment.models if m in config.serving.token_objectives
        }
        out[key] = [f"{name} against {config.scaling.token_target(name):g} ({WHY[name]})" for name in triggers] + [
            f"not on {NOT_PICKED[b]}" for b in sorted(backends & set(NOT_PICKED))
        ]
    return out


def _print_figures(
    loaded: StackConfig, wakes: dict[str, WakeEstimate], capacities: dict[str, dict[str, ModelCapacity]]
) -> None:
    """The figures validation derived: each wake estimate against its budget, each capacity the demand reads, each
    deployment's token triggers."""
    for name, estimate in wakes.items():
        budget = loaded.config.serving.deployments[name].wake
        assert budget is not None
        print(
            f"{loaded.source}: deployment {name} wakes from zero in about {estimate.seconds:.0f} s, within its "
            f"{budget.budget_seconds} s budget: {estimate.describe()}"
        )
    for name, models in capacities.items():
        for model, capacity in models.items():
            print(
                f"{loaded.source}: deployment {name} scales on demand: a pod serves "
                f"{capacity.requests_per_second:,.1f} {model} requests per second ({capacity.why})"
            )
    for name, reasons in _token_triggers(loaded).items():
        print(f"{loaded.source}: deployment {name} scales on its tokens too: {'; '.join(reasons)}")


def run(args: argparse.Namespace) -> Exit:
    from platform_config.loader import load_stack_file  # noqa: PLC0415
    from platform_config.schema import section_key  # noqa: PLC0415
    from triton_platform.model_packaging.source import read_repository  # noqa: PLC0415

    path, stack = stack_source(args)
    repo = read_repository(args.model_repo) if args.model_repo else None
    try:
        loaded = load_stack_file(path, stack, repo, defer_to_esc=True)
        unpinned = _whole_stack_checks(loaded, path, stack)
    except ConfigError as err:
        if all(issue.path == FILE_ISSUE for issue in err.issues):
            # No file to find anything in (a FIFO, a device, too large): an input error, as for every command.
            raise
        # The findings are this command's result, not a failure to run it.
        errors = _errors(err, path)
        if os.environ.get("GITHUB_ACTIONS") == "true":
            _annotate(errors)
        if args.json:
            print_json({"command": "validate", "passed": False, "file": err.source, "errors": errors})
        else:
            count = len(errors)
            print(f"{err.source}: {count} config error{'s' if count != 1 else ''}", file=sys.stderr)
            for error in errors:
                at = f"{error['file']}:{error['line']}:{error['column']}" if error["line"] else error["file"]
                print(f"{at}: {error['key']}: {error['message']}", file=sys.stderr)
        return Exit.FAILED
    config = loaded.config
    # A section the file leaves to ESC is absent from the config: name it instead of its value.
    mode = "mode from ESC" if section_key("kubernetes") in loaded.deferred else config.kubernetes.mode
    environment = "environment from ESC" if section_key("environment") in loaded.deferred else config.environment
    summary = f"stack {loaded.stack} ({environment}, {mode})"
    if section_key("serving") not in loaded.deferred:
        deployments = config.serving.deployments
        models = sorted({m for d in deployments.values() for m in d.models})
        summary += f", {len(deployments)} deployment(s), {len(models)} model(s)"
    wakes = _wakes(loaded, repo)
    capacities = _capacities(loaded)
    if args.json:
        print_json(
            {
                "command": "validate",
                "passed": True,
                "wakes": {
                    name: {"seconds": round(e.seconds, 3), "parts": {p.name: round(p.seconds, 3) for p in e.parts}}
                    for name, e in wakes.items()
                },
                "capacities": {
                    name: {model: c.requests_per_second for model, c in models.items()}
                    for name, models in capacities.items()
                },
                "file": loaded.source,
                "stack": loaded.stack,
                "summary": summary,
                "deferred": list(loaded.deferred),
                "unpinned": unpinned,
                "errors": [],
            }
        )
        return Exit.PASSED
    print(f"{loaded.source}: OK: {summary}")
    if unpinned:
        print(
            f"{loaded.source}: still by tag, to pin before deploy: {', '.join(unpinned)} "
            f"(`stackctl pin-images --stack {loaded.stack}` resolves them and the charts' images into "
            "triton-platform:imageDigests; the deploy workflow runs it before its preview, whose policy pack "
            "refuses any production image by tag)"
        )
    _print_figures(loaded, wakes, capacities)
    if loaded.deferred:
        print(
            f"{loaded.source}: deferred to the Pulumi CLI: {', '.join(loaded.deferred)} "
            f"(not in the file; ESC environment(s) {', '.join(loaded.environments)} may supply them, and "
            f"`pulumi preview --stack {loaded.stack}` validates them with the rest)"
        )
    return Exit.PASSED


def _whole_stack_checks(loaded: StackConfig, path: Path, stack: str | None) -> list[str]:
    """The checks of a whole stack that passed the schema (ConfigError), so that no problem is named twice: the
    components' own checks of the Args the program builds, in stack keys. Returns production's images still to
    pin: not an error here, since the deploy workflow pins them (`stackctl pin-images`) before its preview, whose
    policy pack refuses any image by tag."""
    from offline.image_pins import unpinned_images  # noqa: PLC0415
    from offline.synth import synthesize  # noqa: PLC0415
    from program.component_checks import check_components  # noqa: PLC0415

    if loaded.deferred:
        return []
    check_components(loaded)
    if loaded.config.environment == "production":
        return unpinned_images(synthesize(path, stack))
    return []


COMMAND = Command(
    "validate",
    "check a stack's config and report every error",
    add_arguments,
    run,
    "[configuration.md](configuration.md), below",
    description="Check a stack's config and report every error at its file:line:column (as ::error annotations "
    "under GitHub Actions). Exits 0 when the stack passes, 1 with findings, 2 when the stack cannot be read.",
    json=True,
)
