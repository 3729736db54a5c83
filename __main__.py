"""Pulumi entry point: validate the stack's config, then build the platform from it."""

from components.platform import build_platform
from platform_config.pulumi_source import stack_config_from_pulumi

build_platform(stack_config_from_pulumi())
