"""The stack's explicit Kubernetes provider: a named cluster context, or YAML files."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from platform_config.schema import KubernetesConfig


def render_dir(config: KubernetesConfig, stack: str) -> str | None:
    """Where render mode writes manifests, relative to the project root (None when deploying)."""
    if config.mode != "render":
        return None
    return config.render_dir or f"rendered/{stack}"


def provider_args(config: KubernetesConfig, stack: str) -> dict[str, str]:
    """Provider arguments: exactly one target, never the ambient kubeconfig context.

    The provider's default namespace is the platform's, so an object that names
    none lands there rather than in `default`.
    """
    if config.mode == "render":
        return {"render_yaml_to_directory": render_dir(config, stack) or "", "namespace": config.namespace}
    args = {"context": config.context or "", "namespace": config.namespace}
    if config.kubeconfig:
        args["kubeconfig"] = config.kubeconfig
    return args


def create_provider(stack: str, config: KubernetesConfig) -> k8s.Provider:
    # Pinned to the stack, not to the project, so two stacks never share state by accident.
    args = provider_args(config, stack)
    return k8s.Provider(
        f"{stack}-kubernetes",
        k8s.ProviderArgs(
            render_yaml_to_directory=args.get("render_yaml_to_directory"),
            context=args.get("context"),
            kubeconfig=args.get("kubeconfig"),
            namespace=args["namespace"],
        ),
    )


def provider_options(provider: k8s.Provider) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(providers={"kubernetes": provider})
