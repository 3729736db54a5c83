"""What every builder of the Triton serving stack reads: `ServingContext` (TritonServing's checked Args and its
admin key, with the metadata every object carries), the names shared by all of Triton's objects (each
deployment's object name, `APP_NAME`, the ServiceAccount) and the labels that select a deployment's pods.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from triton_platform.kube.workload_identity import identity_pod_labels
from triton_platform.model_packaging.digest import repository_digest
from triton_platform.model_packaging.store import StoreUri
from triton_platform.serving.triton_serving_args import ModelRepositoryArgs, TritonServingArgs
from triton_platform.serving.triton_serving_spec import ServingSpec

SERVICE_ACCOUNT = "triton-server"


def deployment_object_name(deployment: str) -> str:
    """Name of a Triton deployment's Deployment, Service, PDB and NetworkPolicy (and, later, its ScaledObject).

    Prometheus sees it as the `deployment` label of every series the deployment exports.
    """
    return f"triton-{deployment}"


APP_NAME = "triton-inference-server"
"""`app.kubernetes.io/name` of every Triton object."""


def selector_labels(deployment: str) -> dict[str, str]:
    """Stable across upgrades: never the version."""
    return {
        "app.kubernetes.io/name": APP_NAME,
        "app.kubernetes.io/instance": deployment_object_name(deployment),
    }


@dataclass(frozen=True)
class ServingContext:
    """What the builders read: TritonServing's checked Args and the admin key it generated."""

    spec: ServingSpec
    admin_key: Any = None
    """The restricted-API key (a string or a pulumi Output)."""

    @cached_property
    def digest(self) -> str:
        """Content digest of the rendered repository: where a published one lives (`<uri>/<digest>`)."""
        return repository_digest(self.spec.rendered)

    @property
    def args(self) -> TritonServingArgs:
        """TritonServing's Args, checked, every default applied."""
        return self.spec.args

    @property
    def repository(self) -> ModelRepositoryArgs:
        return self.spec.args["model_repository"]

    @property
    def store(self) -> StoreUri | None:
        return self.spec.store

    @property
    def namespace(self) -> str:
        return self.spec.args["namespace"]

    @property
    def source(self) -> str:
        """Where the model files come from: `bundled`, `pvc`, `s3` or `gcs`."""
        return self.repository["source"]

    @property
    def config_name(self) -> str:
        """Triton reads each model's config from `configs/<config_name>.pbtxt`: the name it was rendered under."""
        return self.spec.rendered.config_name

    def streams(self, models: Iterable[str]) -> bool:
        """Whether a deployment of `models` serves a decoupled (streaming) one: its server times first responses, and
        its Ingresses pass streams on as they come."""
        return any(self.spec.rendered.source.models[m].is_decoupled for m in models)

    def metadata(self, name: str, deployment: str | None = None, **extra: Any) -> dict[str, Any]:
        labels = dict(self.args["labels"])
        if deployment:
            labels |= {**selector_labels(deployment), "app.kubernetes.io/component": "inference-server"}
        return {"name": name, "namespace": self.namespace, "labels": labels, **extra}

    def priority_class(self) -> str:
        # Cluster-scoped: named after the namespace so stacks sharing a cluster do not collide.
        return f"{self.namespace}-inference"


def user_pod_labels(args: TritonServingArgs) -> dict[str, str]:
    """`pod_labels`, with those a workload-identity annotation of the ServiceAccount needs (Azure's
    `azure.workload.identity/use: "true"`): an annotation set by hand gives the pods their identity too."""
    return {**identity_pod_labels(args["service_account_annotations"]), **args["pod_labels"]}
