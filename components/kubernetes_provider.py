"""The stack's explicit Kubernetes provider: a named cluster context, or YAML files."""

from __future__ import annotations

import os
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from platform_config.schema import KubernetesConfig

# Renders every stack, whatever its mode, into $TRITON_PLATFORM_RENDER_DIR/<stack>: for
# previews and end-to-end tests on machines with no cluster credentials. It changes
# where objects go, never what they are, and every preview says it is active.
RENDER_OVERRIDE_ENV = "TRITON_PLATFORM_RENDER_DIR"


def render_override() -> str | None:
    return os.environ.get(RENDER_OVERRIDE_ENV) or None


def render_dir(config: KubernetesConfig, stack: str) -> str | None:
    """Where the stack's manifests are written, relative to the project root (None when deploying)."""
    override = render_override()
    if override:
        return str(Path(override) / stack)
    if config.mode != "render":
        return None
    return config.render_dir or f"rendered/{stack}"


def provider_args(config: KubernetesConfig, stack: str) -> dict[str, str]:
    """Provider arguments: exactly one target, never the ambient kubeconfig context.

    No default namespace: every namespaced object names its own (a test holds the
    program to that), and a default would be stamped onto cluster-scoped custom
    resources in render mode, where the provider cannot ask the API server for scope.
    """
    directory = render_dir(config, stack)
    if directory is not None:
        return {"render_yaml_to_directory": directory}
    args = {"context": config.context or ""}
    if config.kubeconfig:
        args["kubeconfig"] = config.kubeconfig
    return args


def create_provider(stack: str, config: KubernetesConfig) -> k8s.Provider:
    # Pinned to the stack, not to the project, so two stacks never share state by accident.
    args = provider_args(config, stack)
    if render_override() and config.mode == "deploy":
        pulumi.log.warn(
            f"{RENDER_OVERRIDE_ENV} is set: this {config.mode} stack renders to {args['render_yaml_to_directory']} "
            f"instead of deploying to context {config.context!r}"
        )
    return k8s.Provider(
        f"{stack}-kubernetes",
        k8s.ProviderArgs(
            render_yaml_to_directory=args.get("render_yaml_to_directory"),
            context=args.get("context"),
            kubeconfig=args.get("kubeconfig"),
        ),
    )


def provider_options(provider: k8s.Provider) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(providers={"kubernetes": provider})
