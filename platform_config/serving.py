"""`triton-platform:serving` and `triton-platform:models`: Triton deployments and per-model settings."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal, TypeVar, cast

from pydantic import Field, field_validator, model_validator

from platform_config.component_fields import from_component
from platform_config.types import Image, KeyProblemError, LabelKey, Labels, NamespaceName, ObjectName, Quantity, Strict
from triton_platform import triton_serving_args as args
from triton_platform.formats import DNS_NAME, MODEL_NAME
from triton_platform.kubernetes_values import DNS_LABEL, quantity_value
from triton_platform.model_packaging.settings import INT32_MAX, INT64_MAX, UINT32_MAX
from triton_platform.model_packaging.store import SCHEMES, StoreUri, parse_store_uri
from triton_platform.triton_serving_args import (
    DrainArgs,
    InferenceClientArgs,
    IngressArgs,
    ModelRepositoryArgs,
    ModelSettingsArgs,
    TritonDeploymentArgs,
)

T = TypeVar("T")


class ReplicaRange(Strict):
    """Replica bounds of one Triton Deployment."""

    min: int = from_component(args.ReplicaRangeArgs, "min")
    """Warm floor: at least 1 with autoscaling (Triton at zero exports no series), 2 in production (drains)."""

    max: int = from_component(args.ReplicaRangeArgs, "max")
    """Ceiling for the autoscaler; with autoscaling disabled it must equal `min`."""

    @model_validator(mode="after")
    def _ordered(self) -> ReplicaRange:
        if self.min > self.max:
            raise KeyProblemError("min", f"{self.min} is above max ({self.max}); min must be <= max")
        return self


class QueuePolicy(Strict):
    """Triton `dynamic_batching.default_queue_policy`."""

    max_queue_size: int | None = from_component(args.QueuePolicyArgs, "max_queue_size", default=None)
    """Requests the model's queue holds before Triton rejects new ones; 0 means unbounded."""

    default_timeout_microseconds: int | None = from_component(
        args.QueuePolicyArgs, "default_timeout_microseconds", default=None
    )
    """How long a request may wait in the queue; 0 means no timeout. At most the p95 latency SLO: a request queued longer has missed it."""

    timeout_action: Literal["REJECT", "DELAY"] | None = None
    """What Triton does with a request that timed out in the queue."""

    allow_timeout_override: bool | None = None
    """Whether a request's own timeout may override `defaultTimeoutMicroseconds`."""


class DynamicBatching(Strict):
    """Triton `dynamic_batching`. Unset fields keep the model's base config.pbtxt."""

    max_queue_delay_microseconds: int | None = from_component(
        args.DynamicBatchingArgs, "max_queue_delay_microseconds", default=None
    )
    """How long the batcher waits to fill a batch; the latency it may add to each request."""

    preferred_batch_size: list[Annotated[int, Field(ge=1, le=INT32_MAX)]] | None = None
    """Batch sizes the batcher aims for. NVIDIA advises against them for most models; set them only for engines tuned to specific sizes."""

    default_queue_policy: QueuePolicy | None = None
    """Queue bound and timeout, so overload is rejected quickly instead of queueing without limit. With a single model instance, Triton 24.10's batcher then stalls requests for 500 ms at a time (`bench/batcher_stall.py`): give such a model 2 or more instances."""


class InstanceGroup(Strict):
    """Triton `instance_group`: model copies per replica."""

    count: int | None = from_component(args.InstanceGroupArgs, "count", default=None)
    """Model instances that run concurrently in each Triton replica; unset keeps the base config's count."""

    kind: Literal["KIND_GPU", "KIND_CPU", "KIND_AUTO"] | None = None
    """Where the instances run; unset keeps the base config's kind. KIND_AUTO uses the pod's GPU when it has one and the CPU otherwise, so one config serves the GPU pool and CPU-only test servers alike."""


class LatestVersions(Strict):
    """Serve the newest versions."""

    num_versions: int = from_component(args.LatestVersionsArgs, "num_versions")
    """How many of the newest versions to serve."""


class AllVersions(Strict):
    """Serve every version folder."""


def listed_once(items: list[T], what: str) -> list[T]:
    """`items`, or a ValueError naming each one listed more than once."""
    duplicates = sorted({str(item) for item in items if items.count(item) > 1})
    if duplicates:
        raise ValueError(f"{what} listed twice: {', '.join(duplicates)}; list each once")
    return items


class SpecificVersions(Strict):
    """Serve exactly these versions."""

    versions: Annotated[list[Annotated[int, Field(ge=1, le=INT64_MAX)]], Field(min_length=1)]
    """Version folder numbers, each once; each must exist in the model repository."""

    @field_validator("versions")
    @classmethod
    def _unique_versions(cls, versions: list[int]) -> list[int]:
        return listed_once(versions, "versions")


class VersionPolicy(Strict):
    """Triton `version_policy`: exactly one of `latest`, `all`, `specific`."""

    latest: LatestVersions | None = None
    """The newest `numVersions` versions."""

    all: AllVersions | None = None
    """Every version (`all: {}`)."""

    specific: SpecificVersions | None = None
    """The listed versions."""

    @model_validator(mode="after")
    def _exactly_one(self) -> VersionPolicy:
        chosen = [k for k in ("latest", "all", "specific") if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError(f"set exactly one of latest, all, specific; got {chosen or 'none'}")
        return self


class Warmup(Strict):
    """Triton `model_warmup`: requests run at load, before the model reports ready."""

    batch_sizes: Annotated[list[Annotated[int, Field(ge=1, le=UINT32_MAX)]], Field(min_length=1)]
    """One warmup request per batch size, over every input of the model; each must be <= the model's max batch size."""

    data: Literal["zero", "random"] = from_component(args.WarmupArgs, "data")
    """Input contents: zeros, or random values."""


class ModelSettings(Strict):
    """Per-environment settings for one model, laid over its base config.pbtxt. Unset fields keep the base value."""

    max_batch_size: int | None = from_component(args.ModelSettingsArgs, "max_batch_size", default=None)
    """Largest batch Triton forms; 0 turns batching off. It may lower the base config's max_batch_size, never raise it (the base states what the model supports); the defaults' value applies only to models whose base batches."""

    dynamic_batching: DynamicBatching | None = None
    """Dynamic batcher settings."""

    instance_group: InstanceGroup | None = None
    """Instances per replica."""

    version_policy: VersionPolicy | None = None
    """Which versions to serve. A model's own policy replaces the defaults' whole."""

    warmup: Warmup | None = None
    """Warm the model up at load, so the first real requests do not pay for lazy initialisation. A model's own warmup replaces the defaults' whole, and the base config's."""

    def args(self) -> ModelSettingsArgs:
        """These settings as TritonServing takes them (`model_defaults`, `models`): the same snake_case fields, unset ones left out."""
        return cast("ModelSettingsArgs", self.model_dump(exclude_none=True))


class ComputeResources(Strict):
    """CPU and memory of the Triton container."""

    cpu: Quantity
    """CPU cores, e.g. `4` or `500m`."""

    memory: Quantity
    """Memory, e.g. `16Gi`."""


class ContainerResources(Strict):
    """Requests and limits of the Triton container (GPUs come from `gpusPerPod`)."""

    requests: ComputeResources = from_component(args.ContainerResourcesArgs, "requests")
    """What the scheduler reserves."""

    limits: ComputeResources = from_component(args.ContainerResourcesArgs, "limits")
    """The ceiling. A memory limit equal to the request avoids OOM kills under node pressure."""

    @model_validator(mode="after")
    def _limits_cover_requests(self) -> ContainerResources:
        for resource in ("cpu", "memory"):
            request, limit = getattr(self.requests, resource), getattr(self.limits, resource)
            if quantity_value(limit) < quantity_value(request):
                raise KeyProblemError(
                    "limits", f"{resource} limit {limit} is below its request {request}; limits must be >= requests"
                )
        return self


class DeploymentConfig(Strict):
    """One Triton Deployment and the models it serves."""

    models: Annotated[list[Annotated[str, Field(pattern=MODEL_NAME)]], Field(min_length=1)]
    """Model directories of `model_repo/` this deployment loads."""

    replicas: ReplicaRange
    """Replica range; KEDA scales within it."""

    gpus_per_pod: int = from_component(args.TritonDeploymentArgs, "gpus_per_pod")
    """GPUs each Triton pod requests."""

    resources: ContainerResources = from_component(args.TritonDeploymentArgs, "resources")
    """CPU and memory of each Triton pod."""

    @field_validator("models")
    @classmethod
    def _unique_models(cls, models: list[str]) -> list[str]:
        return listed_once(models, "models")

    def args(self) -> TritonDeploymentArgs:
        """This deployment as TritonServing takes it (`deployments`): the same snake_case fields."""
        return cast("TritonDeploymentArgs", self.model_dump())


class PvcSource(Strict):
    """A PersistentVolumeClaim holding the model repository."""

    claim_name: ObjectName
    """Name of the claim."""

    create: bool = from_component(args.ModelClaimArgs, "create")
    """Create the claim (kept on `pulumi destroy`, protected in production) instead of using an existing one. A created claim starts empty, so it needs `origin`."""

    size: Quantity = from_component(args.ModelClaimArgs, "size")
    """Requested size when `create` is true."""

    storage_class_name: ObjectName | None = None
    """StorageClass when `create` is true; unset uses the cluster default."""

    access_mode: Literal["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce"] = from_component(
        args.ModelClaimArgs, "access_mode"
    )
    """How pods mount it (Triton always read-only). With `origin`, the loader Job writes into it, so it must be ReadWriteMany (or ReadWriteOnce for a single replica); ReadWriteOnce cannot serve replicas on several nodes."""

    origin: str | None = None
    """`s3://bucket/prefix` or `gs://bucket/prefix` that `stackctl publish-models` publishes this stack's repository to (an S3 endpoint as `s3://https://host:port/bucket/prefix`). Set: before the Deployments roll, a Job copies `<origin>/<digest>/` into the claim's `repositories/<digest>/` and the pods mount that folder, so every model change rolls the pods. Credentials as for `s3`/`gcs` (`credentialsSecret`, else workload identity). Unset: the claim holds the version folders at its root, copied in by hand (see `revision`)."""

    loader_image: Image = from_component(args.ModelClaimArgs, "loader_image")
    """Image of the loader Job (rclone, the version the tests run), pinned."""

    @field_validator("origin")
    @classmethod
    def _origin_uri(cls, origin: str | None) -> str | None:
        if origin is None:
            return None  # `origin: null` written out means unset, as leaving it out does
        source = "gcs" if origin.startswith("gs://") else "s3"
        if not origin.startswith(("s3://", "gs://")):
            raise ValueError(f"must be s3://<bucket>/<prefix> or gs://<bucket>/<prefix>; got {origin!r}")
        parse_store_uri(origin, source)
        return origin

    @model_validator(mode="after")
    def _fillable(self) -> PvcSource:
        if self.create and self.origin is None:
            raise KeyProblemError(
                "origin",
                "required key is missing: a claim the stack creates starts empty, and Triton would find no model; "
                "set pvc.origin to the s3:// or gs:// URI `stackctl publish-models` publishes to (a Job then "
                "fills the claim), or use an existing, filled claim (create: false)",
            )
        if self.origin is not None and self.access_mode == "ReadOnlyMany":
            raise KeyProblemError(
                "accessMode",
                "the loader Job writes the repository from pvc.origin into the claim, and ReadOnlyMany cannot be "
                "written; use ReadWriteMany (Triton still mounts it read-only)",
            )
        return self

    def store(self) -> StoreUri | None:
        """Where the loader copies from, parsed."""
        if self.origin is None:
            return None
        return parse_store_uri(self.origin, "gcs" if self.origin.startswith("gs://") else "s3")


class StoreEgress(Strict):
    """Addresses pods reading the object store may connect to: a NetworkPolicy names addresses, never host names."""

    cidr: str
    """An IPv4 or IPv6 network, e.g. `10.0.0.0/16` for a VPC endpoint or proxy, or `0.0.0.0/0` for any address."""

    ports: Annotated[list[Annotated[int, Field(ge=1, le=65535)]], Field(min_length=1)]
    """TCP ports on those addresses."""

    @field_validator("cidr")
    @classmethod
    def _network(cls, cidr: str) -> str:
        try:
            ipaddress.ip_network(cidr, strict=True)
        except ValueError as err:
            raise ValueError(f"{cidr!r} is not a network in CIDR form (e.g. 10.0.0.0/16): {err}") from None
        return cidr


class ModelRepositoryConfig(Strict):
    """Where Triton's pods get the model files."""

    source: Literal["bundled", "pvc", "s3", "gcs"]
    """`bundled`: the model files of `model_repo/` ship in a ConfigMap (small dev models only, up to 900 KiB). `pvc`: a PersistentVolumeClaim. `s3`/`gcs`: object storage; Triton reads `<uri>/<digest>`, what `stackctl publish-models` uploads."""

    pvc: PvcSource | None = None
    """The claim, for source `pvc`."""

    uri: str | None = None
    """`s3://bucket/prefix` or `gs://bucket/prefix`, for source `s3` or `gcs`; a private S3 endpoint as `s3://https://host:port/bucket/prefix`. Each published version lives under `<uri>/<digest>/`."""

    revision: Annotated[str, Field(min_length=1, max_length=63)] | None = None
    """Only for a claim filled by hand (source `pvc` without `pvc.origin`): label of its current contents. Pulumi cannot see those files: change this after copying new ones in and the pods roll to load them. Published repositories (s3, gcs, `pvc.origin`) are addressed by their content digest instead."""

    credentials_secret: ObjectName | None = None
    """Secret with the object-store credentials (for `s3`, `gcs` and the loader of `pvc.origin`): for S3 its keys become the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION); for GCS its `credentials.json` key is the service-account key. Unset: the pod's workload identity (see `serviceAccountAnnotations`)."""

    store_egress: list[StoreEgress] | None = None
    """Where Triton and the loader Job may connect to read the object store (s3, gcs, `pvc.origin`); every other destination but DNS is denied. Unset: any address, on the store's port only (443, or the private endpoint's), plus GKE's metadata server (169.254.169.254, port 80) for `gcs` without `credentialsSecret`. Narrow it to your VPC endpoint's or egress proxy's network, and add the workload-identity endpoint your cloud's credentials come from (a node-local metadata address) when no `credentialsSecret` is set."""

    @model_validator(mode="after")
    def _source_fields(self) -> ModelRepositoryConfig:
        if self.source == "pvc" and self.pvc is None:
            raise KeyProblemError("pvc", "required key is missing: source 'pvc' needs the claim (pvc.claimName)")
        if self.source != "pvc" and self.pvc is not None:
            raise KeyProblemError("pvc", f"applies only to source 'pvc', not {self.source!r}")
        scheme = SCHEMES.get(self.source)
        if scheme and self.uri is None:
            raise KeyProblemError("uri", f"source {self.source!r} needs uri {scheme}<bucket>/<prefix>; got None")
        if scheme and self.uri is not None:
            try:
                parse_store_uri(self.uri, self.source)
            except ValueError as err:
                raise KeyProblemError("uri", str(err)) from None
        elif self.uri is not None:
            raise KeyProblemError("uri", f"applies only to sources 's3' and 'gcs', not {self.source!r}")
        if self.credentials_secret is not None and self.store() is None:
            raise KeyProblemError(
                "credentialsSecret",
                f"applies only to sources 's3' and 'gcs' and to a pvc with origin, not {self.source!r}"
                + (" without pvc.origin" if self.source == "pvc" else ""),
            )
        if self.store_egress is not None and self.store() is None:
            raise KeyProblemError(
                "storeEgress", f"applies only to sources 's3' and 'gcs' and to a pvc with origin, not {self.source!r}"
            )
        if self.revision is not None and self.store() is not None:
            where = "pvc.origin" if self.source == "pvc" else f"source {self.source!r}"
            raise KeyProblemError(
                "revision",
                f"does not apply with {where}: the pods read the published repository under its content digest, "
                "so a model change rolls them by itself; remove revision and run `stackctl publish-models`",
            )
        if self.revision is not None and self.source == "bundled":
            raise KeyProblemError(
                "revision", "does not apply to source 'bundled': the bundled files roll the pods by content; remove it"
            )
        return self

    def args(self, path: str) -> ModelRepositoryArgs:
        """This source as TritonServing takes it (`model_repository`), its models read from the folder `path`:
        the same snake_case fields, unset ones left out."""
        return cast("ModelRepositoryArgs", {"path": path, **self.model_dump(exclude_none=True)})

    def store(self) -> StoreUri | None:
        """The object store the stack's repository is published to: the uri, or the claim's origin."""
        if self.source in SCHEMES and self.uri is not None:
            return parse_store_uri(self.uri, self.source)
        return self.pvc.store() if self.pvc is not None else None

    def egress(self) -> list[StoreEgress]:
        """`storeEgress`, or its default: any address on the store's port. Empty without an object store."""
        store = self.store()
        if store is None:
            return []
        if self.store_egress is not None:
            return self.store_egress
        rules = [StoreEgress(cidr=cidr, ports=[store.port]) for cidr in ("0.0.0.0/0", "::/0")]
        if store.backend == "gcs" and self.credentials_secret is None:
            # GKE workload identity: tokens come from the metadata server, metadata.google.internal on port 80
            # (cloud.google.com/compute/docs/metadata/querying-metadata).
            rules.append(StoreEgress(cidr="169.254.169.254/32", ports=[80]))
        return rules


class Drain(Strict):
    """Graceful shutdown: endpoints drain, then Triton finishes in-flight requests."""

    pre_stop_seconds: int = from_component(args.DrainArgs, "pre_stop_seconds")
    """Sleep in preStop, so load balancers stop sending before Triton stops accepting."""

    exit_timeout_seconds: int = from_component(args.DrainArgs, "exit_timeout_seconds")
    """Triton's `--exit-timeout-secs`: how long it waits for in-flight requests. terminationGracePeriodSeconds is preStop + this + 15 s."""

    def args(self) -> DrainArgs:
        """This drain as TritonServing takes it (`drain`)."""
        return cast("DrainArgs", self.model_dump())


class IngressConfig(Strict):
    """Ingress for clients outside the cluster: one HTTP and one gRPC host per deployment."""

    enabled: bool = from_component(args.IngressArgs, "enabled")
    """Create the Ingresses."""

    class_name: ObjectName = from_component(args.IngressArgs, "class_name")
    """IngressClass; the gRPC Ingress uses ingress-nginx's `backend-protocol: GRPC` annotation."""

    base_domain: Annotated[str, Field(pattern=DNS_NAME, max_length=253)] | None = None
    """Hosts are `<deployment>.<baseDomain>` (HTTP) and `<deployment>-grpc.<baseDomain>` (gRPC). Required when enabled."""

    tls_secret_name: ObjectName | None = None
    """TLS certificate Secret. Required when enabled: gRPC through ingress-nginx needs HTTP/2, which needs TLS."""

    max_request_body: Quantity = from_component(args.IngressArgs, "max_request_body")
    """Largest request body the ingress passes (ingress-nginx `proxy-body-size`); its 1m default is too small for tensors."""

    controller_namespace: NamespaceName = from_component(args.IngressArgs, "controller_namespace")
    """Namespace of the ingress controller, which the NetworkPolicy admits to the inference ports."""

    @model_validator(mode="after")
    def _complete(self) -> IngressConfig:
        for key, value in (("baseDomain", self.base_domain), ("tlsSecretName", self.tls_secret_name)):
            if self.enabled and not value:
                raise KeyProblemError(key, "required key is missing: an enabled ingress needs it")
        return self

    def args(self) -> IngressArgs:
        """This ingress as TritonServing takes it (`ingress`): the same snake_case fields, unset ones left out."""
        return cast("IngressArgs", self.model_dump(exclude_none=True))


class InferenceClient(Strict):
    """Pods allowed to call the inference ports (8000, 8001)."""

    namespace: NamespaceName
    """Their namespace."""

    pod_labels: Labels = from_component(args.InferenceClientArgs, "pod_labels")
    """Their labels; empty admits every pod of the namespace."""

    def args(self) -> InferenceClientArgs:
        """This client as TritonServing takes it (`inference_clients`)."""
        return cast("InferenceClientArgs", self.model_dump())


class ServingConfig(Strict):
    """The Triton serving stack."""

    image: Image = from_component(args.TritonServingArgs, "image")
    """Triton image, pinned by tag or digest (`latest` and untagged images are rejected). The default runs Triton 2.51.0, the release the tests run."""

    p95_latency_slo_ms: Annotated[int, Field(ge=1, le=600_000)]
    """The environment's p95 request latency objective, in ms. Alerts fire above it, and no model's queue delay may exceed it. Required."""

    deployments: Annotated[
        dict[Annotated[str, Field(pattern=DNS_LABEL, max_length=40)], DeploymentConfig], Field(min_length=1)
    ]
    """Triton Deployments by name; each serves a set of models."""

    model_defaults: ModelSettings = ModelSettings()
    """Settings applied to every model they fit (ensembles take only maxBatchSize), under any per-model settings in `triton-platform:models`."""

    model_repository: ModelRepositoryConfig
    """Where the model files come from. Required."""

    inference_clients: list[InferenceClient] = from_component(args.TritonServingArgs, "inference_clients")
    """Who may call Triton's HTTP and gRPC ports besides the ingress controller; the NetworkPolicy admits nobody else."""

    ingress: IngressConfig = from_component(args.TritonServingArgs, "ingress")
    """External access."""

    startup_timeout_seconds: int = from_component(args.TritonServingArgs, "startup_timeout_seconds")
    """How long Triton may take to load every model before the startup probe restarts it."""

    drain: Drain = from_component(args.TritonServingArgs, "drain")
    """Graceful shutdown."""

    shm_size_limit: Quantity = from_component(args.TritonServingArgs, "shm_size_limit")
    """Size of the in-memory /dev/shm the Python backend uses for tensors."""

    tmp_size_limit: Quantity = from_component(args.TritonServingArgs, "tmp_size_limit")
    """Size of /tmp, where Triton downloads object-storage models."""

    service_account_annotations: dict[LabelKey, str] = from_component(
        args.TritonServingArgs, "service_account_annotations"
    )
    """Annotations of Triton's ServiceAccount, e.g. `eks.amazonaws.com/role-arn` or `iam.gke.io/gcp-service-account` for workload identity."""
