"""`stackctl kube-context`: the kubeconfig context a deploy-mode stack deploys to; the CI names the context it
builds after it (.github/actions/cluster-credentials)."""

from __future__ import annotations

import argparse

from platform_config.errors import ConfigError, ConfigIssue
from stackctl.command import Command, Exit, stack_arguments, stack_source


def run(args: argparse.Namespace) -> Exit:
    from platform_config.loader import load_stack_file  # noqa: PLC0415
    from platform_config.schema import section_key  # noqa: PLC0415

    path, stack = stack_source(args)
    loaded = load_stack_file(path, stack, defer_to_esc=True)
    key = section_key("kubernetes")
    if key in loaded.deferred:
        raise ConfigError(
            loaded.source,
            [ConfigIssue(key, "left to ESC; the CI reads the cluster's context from the stack file: write it there")],
        )
    kubernetes = loaded.config.kubernetes
    if not kubernetes.context:
        raise ConfigError(
            loaded.source,
            [
                ConfigIssue(
                    f"{key}.context",
                    f"unset: mode {kubernetes.mode!r} reaches no cluster, so its GitHub environment needs no "
                    "cluster credentials (leave CLOUD unset, or none, and no KUBECONFIG_CONTENT)",
                )
            ],
        )
    print(kubernetes.context)
    return Exit.PASSED


COMMAND = Command(
    "kube-context",
    "print the kubeconfig context a deploy-mode stack deploys to (the CI names its own so)",
    stack_arguments,
    run,
    "[ci.md](ci.md#variables)",
)
