"""What TritonServing tells the components that watch and scale its Deployments, per deployment key: the object's
name, the models it serves and how many instances of each one pod runs. TritonServing outputs these
(`deployment_names`, `models`, `instances_per_pod`); Monitoring and KedaScaling take them as given, so no caller
writes an object name or counts instance groups itself."""

from __future__ import annotations

from collections.abc import Mapping

from triton_platform.model_packaging.config_rules import ENSEMBLE
from triton_platform.model_packaging.instances import instances_per_pod
from triton_platform.model_packaging.render import RenderedRepository
from triton_platform.serving.serving_context import deployment_object_name
from triton_platform.serving.triton_serving_args import TritonDeploymentArgs


def deployment_names(deployments: Mapping[str, TritonDeploymentArgs]) -> dict[str, str]:
    """The `metadata.name` of each deployment's Deployment and Service, by key."""
    return {key: deployment_object_name(key) for key in deployments}


def served_models(deployments: Mapping[str, TritonDeploymentArgs]) -> dict[str, list[str]]:
    """The models each deployment serves, by key, in the order given."""
    return {key: list(deployment["models"]) for key, deployment in deployments.items()}


def deployment_instances(
    deployments: Mapping[str, TritonDeploymentArgs], rendered: RenderedRepository
) -> dict[str, dict[str, int]]:
    """The instances one pod of each deployment runs of each model it serves, by key, ensembles left out (they
    run none): what a busy ratio divides by. `deployments`: checked Args (every default applied)."""
    return {
        key: {
            model: instances_per_pod(rendered.models[model].config, deployment["gpus_per_pod"])
            for model in deployment["models"]
            if rendered.models[model].config.platform != ENSEMBLE
        }
        for key, deployment in deployments.items()
    }
