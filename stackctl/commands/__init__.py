"""The commands `stackctl` has, in the order `--help` lists them: one line each registers a command."""

from stackctl.command import Command
from stackctl.commands import (
    kube_context,
    model_repo,
    pin_images,
    plan,
    profile,
    publish_models,
    rules,
    simulate,
    synth,
    validate,
)

COMMANDS: tuple[Command, ...] = (
    validate.COMMAND,
    kube_context.COMMAND,
    synth.COMMAND,
    model_repo.COMMAND,
    publish_models.COMMAND,
    pin_images.COMMAND,
    rules.COMMAND,
    profile.COMMAND,
    simulate.COMMAND,
    plan.COMMAND,
)
