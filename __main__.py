"""Pulumi entry point: validate the stack's config and the components' Args, then build the platform from it."""

from platform_config.pulumi_source import stack_config_from_pulumi
from program.component_checks import deployable
from program.platform import build_platform

build_platform(deployable(stack_config_from_pulumi()))
