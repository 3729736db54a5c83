"""The Triton serving stack as a Pulumi component: it only turns triton_manifests into resources."""

import dataclasses
from collections.abc import Mapping
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from triton_platform.args.component_types import type_token, with_former_type
from triton_platform.args.object_claims import claim
from triton_platform.kube.kubernetes_objects import create_object
from triton_platform.serving.model_loader_job import LOADER_DEADLINE_SECONDS
from triton_platform.serving.served_deployments import deployment_instances, deployment_names, served_models
from triton_platform.serving.serving_context import ServingContext
from triton_platform.serving.triton_manifests import deployment_manifests, shared_manifests
from triton_platform.serving.triton_serving_args import TritonServingArgs
from triton_platform.serving.triton_serving_spec import COMPONENT, serving_spec

__all__ = ["TritonServing", "TritonServingArgs"]

TYPE_TOKEN = type_token("TritonServing")
FORMER_TYPE_TOKEN = "triton-platform:serving:TritonServing"
"""The type before the component package (component_types.py)."""
DEPLOY_TIMEOUT = "30m"
"""Long enough for a new GPU node, the image pull and the startup probe's model-load budget."""
LOADER_TIMEOUT = f"{LOADER_DEADLINE_SECONDS // 60}m"
"""The loader Job's activeDeadlineSeconds: Pulumi waits exactly as long as the Job may run."""


def deployments_of(context: ServingContext) -> dict[str, dict[str, dict[str, Any]]]:
    """Each deployment's manifests, by deployment key."""
    return {
        key: deployment_manifests(context, key, deployment)
        for key, deployment in sorted(context.spec.args["deployments"].items())
    }


def named_objects(
    context: ServingContext, per_deployment: Mapping[str, Mapping[str, Mapping[str, Any]]]
) -> list[Mapping[str, Any]]:
    """What TritonServing creates: the shared objects and each deployment's (`deployments_of`), all named now."""
    return [*shared_manifests(context).values(), *(m for each in per_deployment.values() for m in each.values())]


class TritonServing(pulumi.ComponentResource):
    """Triton Deployments with their Services, NetworkPolicies, PDBs, Ingresses and model delivery."""

    services: pulumi.Output[dict[str, str]]
    """Service name of each Triton deployment, by deployment key."""

    namespace: pulumi.Output[str]
    """The namespace every Deployment lives in (`namespace`)."""

    deployment_names: pulumi.Output[dict[str, str]]
    """Name of each Deployment, by deployment key: Monitoring's `deployments.<key>.object_name` and KedaScaling's
    `targets.<key>.deployment_name`."""

    models: pulumi.Output[dict[str, list[str]]]
    """The models each deployment serves, by deployment key: Monitoring's `deployments.<key>.models`."""

    instances_per_pod: pulumi.Output[dict[str, dict[str, int]]]
    """Instances one pod runs of each model it serves (ensembles run none and are left out), by deployment key
    and model: Monitoring's `deployments.<key>.signal.instances_per_pod` for a busy ratio. A GPU instance group's
    count is per GPU, so `gpus_per_pod` is counted in."""

    deployments: dict[str, k8s.apps.v1.Deployment]
    """The Deployment resource of each Triton deployment, by deployment key (an autoscaler targets these)."""

    def __init__(self, name: str, args: TritonServingArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        # Checked, and the models read and rendered, before any resource: a mistake stops here, named; so does an
        # object another instance creates already.
        spec = serving_spec(name, args, pulumi.get_stack())
        unkeyed = ServingContext(spec)  # the admin key is generated below; no object's name reads it
        per_deployment = deployments_of(unkeyed)
        claim(f"{COMPONENT} {name}", opts, named_objects(unkeyed, per_deployment))
        super().__init__(TYPE_TOKEN, name, None, with_former_type(opts, FORMER_TYPE_TOKEN))
        child = pulumi.ResourceOptions(parent=self)
        password = random.RandomPassword(f"{name}-admin-key", length=40, special=False, opts=child)
        common = shared_manifests(dataclasses.replace(unkeyed, admin_key=password.result))
        shared: list[pulumi.CustomResource] = []
        for role, manifest in common.items():
            options = self._options(manifest, child, shared, spec.args["protect_model_claim"])
            shared.append(create_object(f"{name}-{role}", manifest, options))
        self.deployments = {}
        services: dict[str, str] = {}
        for dep_name, manifests in per_deployment.items():
            created: list[pulumi.CustomResource] = []
            for role, manifest in manifests.items():
                if manifest["kind"] == "Deployment":
                    # Created after what its pods mount or reference, and given time to roll out.
                    options = pulumi.ResourceOptions.merge(
                        child,
                        pulumi.ResourceOptions(
                            depends_on=[*shared, *created],
                            custom_timeouts=pulumi.CustomTimeouts(create=DEPLOY_TIMEOUT, update=DEPLOY_TIMEOUT),
                        ),
                    )
                    self.deployments[dep_name] = k8s.apps.v1.Deployment(
                        f"{name}-{role}", metadata=manifest["metadata"], spec=manifest["spec"], opts=options
                    )
                    continue
                created.append(create_object(f"{name}-{role}", manifest, child))
                if role == f"{dep_name}-service":
                    services[dep_name] = manifest["metadata"]["name"]
        self.services = pulumi.Output.from_input(services)
        served = spec.args["deployments"]
        self.namespace = pulumi.Output.from_input(spec.args["namespace"])
        self.deployment_names = pulumi.Output.from_input(deployment_names(served))
        self.models = pulumi.Output.from_input(served_models(served))
        self.instances_per_pod = pulumi.Output.from_input(deployment_instances(served, spec.rendered))
        self.register_outputs(
            {
                "services": self.services,
                "namespace": self.namespace,
                "deploymentNames": self.deployment_names,
                "models": self.models,
                "instancesPerPod": self.instances_per_pod,
            }
        )

    def _options(
        self,
        manifest: dict[str, Any],
        child: pulumi.ResourceOptions,
        before: list[pulumi.CustomResource],
        protect_claim: bool,
    ) -> pulumi.ResourceOptions:
        if manifest["kind"] == "Job":
            # pulumi-kubernetes 4.25 awaits a Job until its Complete condition and fails on Failed
            # (provider/pkg/await/job.go, registered for batch/v1/Job in awaiters.go); its default
            # wait is 10 minutes, too short for a large repository. After the claim it fills.
            timeouts = pulumi.CustomTimeouts(create=LOADER_TIMEOUT, update=LOADER_TIMEOUT)
            return pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(depends_on=list(before), custom_timeouts=timeouts)
            )
        if manifest["kind"] != "PersistentVolumeClaim":
            return child
        # Model data outlives the stack: never deleted by Pulumi, and where protected not even replaceable.
        return pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(retain_on_delete=True, protect=protect_claim))
