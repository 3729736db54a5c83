"""Pulumi entry point: validate the stack's config and the components' Args, then build the platform from it."""

from platform_config.pulumi_source import stack_config_from_pulumi
from program.component_checks import deployable
from program.platform import build_platform, cluster_version

stack = stack_config_from_pulumi()
version = cluster_version(stack)
build_platform(deployable(stack, version), version)
