"""Pulumi entry point: validate the stack's config, then build the platform from it."""

from platform_config.pulumi_source import stack_config_from_pulumi
from program.platform import build_platform

build_platform(stack_config_from_pulumi())
