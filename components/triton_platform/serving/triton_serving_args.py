"""TritonServing's Args: plain typed values a Python, YAML or TypeScript program passes, declared once.

Each key's default, bounds and format are declared beside its TypedDict (`declare`, triton_platform/args/arg_schema.py);
`serving_spec` (triton_platform/serving/triton_serving_spec.py) checks Args against them and the rules that span keys,
naming the Arg of every problem, and the builders read the same types with every default applied. Whole numbers
may arrive as floats (`16.0`) from other languages; they are taken as integers. No `from __future__ import
annotations` here: the schema is read from the annotations as objects.
"""

import re
from typing import NotRequired, TypedDict

import pulumi

from triton_platform.args.arg_schema import Setting, declare
from triton_platform.args.excerpts import excerpt
from triton_platform.args.formats import (
    DEPLOYMENT_KEY,
    HOST_NAME,
    IMAGE,
    IMAGE_DIGEST,
    IMAGE_TAG,
    LABEL_KEY_FORMAT,
    LABEL_VALUE_FORMAT,
    MODEL,
    NAMESPACE,
    NETWORK,
    OBJECT_NAME,
    QUANTITY_FORMAT,
    VOLUME_SIZE,
    Format,
)
from triton_platform.gpu_pool.gpu_pool_contract import PoolPlacement
from triton_platform.model_packaging.model_settings_args import ModelSettingsArgs
from triton_platform.model_packaging.store import parse_store_uri


class ReplicaRangeArgs(TypedDict):
    """Replica bounds of one Triton Deployment."""

    min: int
    """Warm floor, 0 to 1000. At 0 no pod runs until an autoscaler adds one, and one scaling on Triton's own
    metrics never does (its series vanish with its pods). Without an autoscaler (`autoscaled` false) the
    Deployment runs `min` pods."""

    max: int
    """Ceiling for the autoscaler, 1 to 1000 and >= `min`; more than 1 also spreads the pods over nodes and
    zones and adds a PodDisruptionBudget."""


class ComputeResourcesArgs(TypedDict):
    """CPU and memory of the Triton container."""

    cpu: str
    """CPU cores as a Kubernetes quantity, e.g. `4` or `500m`."""

    memory: str
    """Memory as a Kubernetes quantity, e.g. `16Gi`."""


class ContainerResourcesArgs(TypedDict):
    """Requests and limits of the Triton container (GPUs come from `gpus_per_pod`)."""

    requests: NotRequired[ComputeResourcesArgs]
    """What the scheduler reserves. Default: `{"cpu": "2", "memory": "8Gi"}`."""

    limits: NotRequired[ComputeResourcesArgs]
    """The ceiling, at least the requests. A memory limit equal to the request avoids OOM kills under node
    pressure. Default: `{"cpu": "4", "memory": "8Gi"}`."""


class TritonDeploymentArgs(TypedDict):
    """One Triton Deployment and the models it serves."""

    models: list[str]
    """Model folders of `model_repository.path` this deployment loads, each once; at least one."""

    replicas: ReplicaRangeArgs
    """Replica range; an autoscaler scales within it."""

    gpus_per_pod: NotRequired[int]
    """GPUs each Triton pod requests, 1 to 16. Default: `1`."""

    resources: NotRequired[ContainerResourcesArgs]
    """CPU and memory of each Triton pod. Default: each field's default."""

    wake_on_request: NotRequired[bool]
    """Send the Service's HTTP and gRPC traffic through the KEDA HTTP add-on's interceptor, which holds requests
    while the Deployment is at zero (`replicas.min` 0, `autoscaled`, an autoscaler that routes and wakes it, e.g.
    KedaScaling's target `wake`): the Service `triton-<key>` becomes an ExternalName to the add-on's wake Service
    (`interceptor_namespace`), on the same ports, and the pods get the Service `triton-<key>-pods`, which the
    interceptor forwards to and Prometheus scrapes. Default: `false`."""


class ModelClaimArgs(TypedDict):
    """A PersistentVolumeClaim holding the model repository."""

    claim_name: str
    """Name of the claim."""

    create: NotRequired[bool]
    """Create the claim (kept on `pulumi destroy`; see `protect_model_claim`) instead of using an existing one.
    A created claim starts empty, so it needs `origin`. Default: `false`."""

    size: NotRequired[str]
    """Requested size when `create` is true, a Kubernetes quantity. Default: `50Gi`."""

    storage_class_name: NotRequired[str]
    """StorageClass when `create` is true. Default: the cluster's default class."""

    access_mode: NotRequired[str]
    """How pods mount it (Triton always read-only): `ReadOnlyMany`, `ReadWriteMany` or `ReadWriteOnce`. With
    `origin`, the loader Job writes into it, so it must be ReadWriteMany (or ReadWriteOnce for a single replica);
    ReadWriteOnce cannot serve replicas on several nodes. Default: `ReadOnlyMany`."""

    origin: NotRequired[str]
    """`s3://bucket/prefix` or `gs://bucket/prefix` the repository is published to (`stackctl publish-models`;
    an S3 endpoint as `s3://https://host:port/bucket/prefix`). Set: before the Deployments roll, a Job copies
    `<origin>/<digest>/` into the claim's `repositories/<digest>/` and the pods mount that folder, so every model
    change rolls the pods. Credentials as for `s3`/`gcs` (`credentials_secret`, else workload identity).
    Default: unset, the claim holds the version folders at its root, copied in by hand (see `revision`)."""

    loader_image: NotRequired[str]
    """Image of the loader Job (rclone), pinned. The default is the release the tests run (scripts/rclone-release
    builds it). Default: `docker.io/rclone/rclone:1.76.0`."""


class StoreEgressArgs(TypedDict):
    """Addresses pods reading the object store may connect to: a NetworkPolicy names addresses, never host names."""

    cidr: str
    """An IPv4 or IPv6 network, e.g. `10.0.0.0/16` for a VPC endpoint or proxy, or `0.0.0.0/0` for any address."""

    ports: list[int]
    """TCP ports on those addresses, at least one."""


class ModelRepositoryArgs(TypedDict):
    """Where the models are read from, and where Triton's pods get the model files."""

    path: str
    """The local folder of the model repository (`<model>/config.pbtxt` and version folders `<model>/1/`, ...), an
    absolute path (from Pulumi YAML, e.g. `${pulumi.cwd}/model_repo`), read when the program runs: each served
    model's config is rendered from its config.pbtxt, and the repository's content digest names the published
    version pods load."""

    source: str
    """`bundled`: the version files of the served models ship in a ConfigMap (small dev models only, up to
    900 KiB). `pvc`: a PersistentVolumeClaim (`pvc`). `s3`/`gcs`: object storage; Triton reads `<uri>/<digest>`,
    what `stackctl publish-models` uploads."""

    pvc: NotRequired[ModelClaimArgs]
    """The claim, for source `pvc` (required there, and only there). Default: unset."""

    uri: NotRequired[str]
    """`s3://bucket/prefix` or `gs://bucket/prefix`, for source `s3` or `gcs` (required there, and only there);
    a private S3 endpoint as `s3://https://host:port/bucket/prefix`. Each published version lives under
    `<uri>/<digest>/`. Default: unset."""

    revision: NotRequired[str]
    """Only for a claim filled by hand (source `pvc` without `pvc.origin`): label of its current contents, 1 to 63
    characters. Pulumi cannot see those files: change this after copying new ones in and the pods roll to load
    them. Published repositories (s3, gcs, `pvc.origin`) are addressed by their content digest instead.
    Default: unset."""

    credentials_secret: NotRequired[str]
    """Secret with the object-store credentials (for `s3`, `gcs` and the loader of `pvc.origin`): for S3 its keys
    become the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION); for GCS its
    `credentials.json` key is the service-account key. Default: unset, the pod's workload identity (see
    `service_account_annotations`)."""

    store_egress: NotRequired[list[StoreEgressArgs]]
    """Where Triton and the loader Job may connect to read the object store (s3, gcs, `pvc.origin`); every other
    destination but DNS is denied. Narrow it to your VPC endpoint's or egress proxy's network, and add the
    workload-identity endpoint your cloud's credentials come from (a node-local metadata address) when no
    `credentials_secret` is set. Default: any address, on the store's port only (443, or the private
    endpoint's), plus GKE's metadata server (169.254.169.254, port 80) for `gcs` without `credentials_secret`."""


class InferenceClientArgs(TypedDict):
    """Pods allowed to call the inference ports (8000, 8001)."""

    namespace: pulumi.Input[str]
    """Their namespace."""

    pod_labels: NotRequired[dict[str, str]]
    """Their labels; none admits every pod of the namespace. Default: none."""


class IngressArgs(TypedDict):
    """Ingress for clients outside the cluster: one HTTP and one gRPC host per deployment."""

    enabled: NotRequired[bool]
    """Create the Ingresses. Default: `false`."""

    class_name: NotRequired[str]
    """IngressClass; the gRPC Ingress uses ingress-nginx's `backend-protocol: GRPC` annotation. Default: `nginx`."""

    base_domain: NotRequired[str]
    """Hosts are `<deployment>.<base_domain>` (HTTP) and `<deployment>-grpc.<base_domain>` (gRPC). Required when
    enabled. Default: unset."""

    tls_secret_name: NotRequired[str]
    """TLS certificate Secret. Required when enabled: gRPC through ingress-nginx needs HTTP/2, which needs TLS.
    Default: unset."""

    max_request_body: NotRequired[str]
    """Largest request body the ingress passes (ingress-nginx `proxy-body-size`); its 1m default is too small
    for tensors. Default: `64m`."""

    controller_namespace: NotRequired[str]
    """Namespace of the ingress controller, which the NetworkPolicy admits to the inference ports.
    Default: `ingress-nginx`."""


class DrainArgs(TypedDict):
    """Graceful shutdown: endpoints drain, then Triton finishes in-flight requests."""

    pre_stop_seconds: NotRequired[int]
    """Sleep in preStop, 0 to 300 s, so load balancers stop sending before Triton stops accepting. Default: `10`."""

    exit_timeout_seconds: NotRequired[int]
    """Triton's `--exit-timeout-secs`, 1 to 3600: how long it waits for in-flight requests.
    terminationGracePeriodSeconds is preStop + this + 15 s. Default: `30`."""


class TritonServingArgs(TypedDict):
    """Triton Deployments, the models each serves, how their files reach the pods, and who may call them."""

    namespace: str
    """Namespace of every namespaced object (it must exist); it also names the cluster-scoped PriorityClass
    `<namespace>-inference`, so stacks sharing a cluster do not collide."""

    deployments: dict[str, TritonDeploymentArgs]
    """Triton Deployments by name (a DNS label of at most 40 characters: objects are named `triton-<name>`);
    each serves a set of models. At least one."""

    model_repository: ModelRepositoryArgs
    """Where the models are read from and how their files reach the pods."""

    pool: PoolPlacement
    """Where the GPU pool lets Triton pods run and the GPU resource they request (`GpuNodePool.placement`)."""

    metrics_namespace: pulumi.Input[str]
    """Namespace of the Prometheus that scrapes Triton (`Monitoring.metrics_namespace`): each Deployment's
    NetworkPolicy admits it, and only it, to the metrics port."""

    image: NotRequired[str]
    """Triton image, pinned by tag or digest. The default is Triton 2.51.0, the release the tests run.
    Default: `nvcr.io/nvidia/tritonserver:24.10-py3`."""

    config_name: NotRequired[str]
    """Name of the rendered configs: Triton reads each model's `configs/<config_name>.pbtxt`, rendered from its
    config.pbtxt and the settings below (letters, digits, `_`, `.` and `-`). Default: the Pulumi stack's name."""

    model_defaults: NotRequired[ModelSettingsArgs]
    """Settings applied to every served model they fit (ensembles take only `max_batch_size`), under any
    per-model settings in `models`. Default: each field's default."""

    models: NotRequired[dict[str, ModelSettingsArgs]]
    """Settings of individual models, by model name, over `model_defaults`; each a model some deployment serves.
    Default: none."""

    inference_clients: NotRequired[list[InferenceClientArgs]]
    """Who may call Triton's HTTP and gRPC ports besides the ingress controller; the NetworkPolicy admits nobody
    else. Default: none."""

    ingress: NotRequired[IngressArgs]
    """External access; no Ingress unless `enabled`. Default: each field's default."""

    startup_timeout_seconds: NotRequired[int]
    """How long Triton may take to load every model before the startup probe restarts it, 30 to 7200 s.
    Default: `600`."""

    drain: NotRequired[DrainArgs]
    """Graceful shutdown: by default a 10 s preStop sleep, then 30 s for in-flight requests. Default: each field's
    default."""

    shm_size_limit: NotRequired[str]
    """Size of the in-memory /dev/shm the Python backend uses for tensors, a Kubernetes quantity. Default: `1Gi`."""

    tmp_size_limit: NotRequired[str]
    """Size of /tmp, where Triton downloads object-storage models, a Kubernetes quantity. Default: `10Gi`."""

    service_account_annotations: NotRequired[dict[str, str]]
    """Annotations of Triton's ServiceAccount, e.g. `eks.amazonaws.com/role-arn` or
    `iam.gke.io/gcp-service-account` for workload identity. A workload-identity annotation must hold its cloud's
    form of identity (an IAM role ARN, a Google service account email, an Azure client ID); with
    `azure.workload.identity/client-id` the pods get the `azure.workload.identity/use: "true"` label Azure's
    webhook needs. Default: none."""

    pod_labels: NotRequired[dict[str, str]]
    """Labels on Triton's pods and the model loader's, besides the platform's and those the ServiceAccount's
    workload identity needs (never in selectors). Default: none."""

    metrics_pod_labels: NotRequired[dict[str, str]]
    """Pod labels of that Prometheus; empty admits every pod of `metrics_namespace`. The default selects the
    Prometheus Operator's pods. Default: `{"app.kubernetes.io/name": "prometheus"}`."""

    labels: NotRequired[dict[str, str]]
    """Labels every object carries besides its own, never used in selectors. Default: none."""

    interceptor_namespace: NotRequired[str]
    """Namespace of the KEDA HTTP add-on's interceptor, for deployments with `wake_on_request`: their Services point
    there, and their pods admit the interceptor's. Default: `keda`."""

    cluster_domain: NotRequired[str]
    """The cluster's DNS domain: an ExternalName's target is a fully qualified name. Default: `cluster.local`."""

    autoscaled: NotRequired[bool]
    """An autoscaler (e.g. `KedaScaling`) owns each Deployment's replica count, so `spec.replicas` is left unset;
    without one, each Deployment runs `replicas.min` pods. Default: `false`."""

    image_digests: NotRequired[dict[str, str]]
    """Digest of each image tag (`<image>: sha256:<hex>`): a listed image runs as `<image>@<digest>`. Default: none."""

    protect_model_claim: NotRequired[bool]
    """Protect the model-repository claim this component creates (`model_repository.pvc.create`) from deletion
    and replacement. The claim is kept on `pulumi destroy` either way. Default: `false`."""


DEFAULT_IMAGE = "nvcr.io/nvidia/tritonserver:24.10-py3"
DEFAULT_TRITON_VERSION = "2.51.0"
"""The Triton release in DEFAULT_IMAGE (NVIDIA's release notes, "Triton Inference Server Release 24.10": Triton
2.51.0). It is the newest tritonserver the project's tests can run (the one nvidia-pytriton 0.7.0, the newest
release, bundles), and tests/cluster/test_triton_real.py holds the server they run to this version, so every config the
platform renders is proven on the release it deploys by default."""
DEFAULT_LOADER_IMAGE = "docker.io/rclone/rclone:1.76.0"
"""The loader's rclone (2026-11-06): the release the publishing and loader tests run (tests/conftest.py checks the
rclone on their PATH against this tag)."""
PROMETHEUS_POD_LABELS = {"app.kubernetes.io/name": "prometheus"}
"""The Prometheus Operator's pods: who may scrape Triton unless `metrics_pod_labels` says otherwise."""
SOURCES = ("bundled", "pvc", "s3", "gcs")
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce")
CONFIG_NAME = r"^[A-Za-z0-9_.-]+$"
"""A config name is a file name (`configs/<name>.pbtxt`) and a tritonserver flag's value."""


def _config_name_problem(name: str) -> str | None:
    if re.fullmatch(CONFIG_NAME, name):
        return None
    return f"must be a config name (letters, digits, '_', '.' and '-'); got {excerpt(name)}"


def _store_uri_problem(uri: str) -> str | None:
    """Why `uri` is not a published repository's address (model_packaging/store.py), or None."""
    if not uri.startswith(("s3://", "gs://")):
        return f"must be s3://<bucket>/<prefix> or gs://<bucket>/<prefix>; got {excerpt(uri)}"
    try:
        parse_store_uri(uri, "gcs" if uri.startswith("gs://") else "s3")
    except ValueError as err:
        return str(err)
    return None


CONFIG_NAME_FORMAT = Format(rule=_config_name_problem)
STORE_URI = Format(rule=_store_uri_problem)
"""`s3://bucket/prefix` (a private endpoint as `s3://https://host:port/bucket/prefix`) or `gs://bucket/prefix`."""
REVISION = Format(max_length=63)

declare(ReplicaRangeArgs, min=Setting(minimum=0, maximum=1000), max=Setting(minimum=1, maximum=1000))
declare(ComputeResourcesArgs, cpu=Setting(format=QUANTITY_FORMAT), memory=Setting(format=QUANTITY_FORMAT))
declare(
    ContainerResourcesArgs,
    requests=Setting(default={"cpu": "2", "memory": "8Gi"}),
    limits=Setting(default={"cpu": "4", "memory": "8Gi"}),
)
declare(
    TritonDeploymentArgs,
    models=Setting(format=MODEL, min_items=1, unique=True),
    replicas=Setting(),
    gpus_per_pod=Setting(default=1, minimum=1, maximum=16),
    resources=Setting(default={}),
    wake_on_request=Setting(default=False),
)
declare(
    ModelClaimArgs,
    claim_name=Setting(format=OBJECT_NAME),
    create=Setting(default=False),
    size=Setting(default="50Gi", format=VOLUME_SIZE),
    storage_class_name=Setting(format=OBJECT_NAME),
    access_mode=Setting(default=ACCESS_MODES[0], choices=ACCESS_MODES),
    origin=Setting(format=STORE_URI),
    loader_image=Setting(default=DEFAULT_LOADER_IMAGE, format=IMAGE),
)
declare(StoreEgressArgs, cidr=Setting(format=NETWORK), ports=Setting(minimum=1, maximum=65535, min_items=1))
declare(
    ModelRepositoryArgs,
    path=Setting(min_length=1),
    source=Setting(choices=SOURCES),
    pvc=Setting(),
    uri=Setting(format=STORE_URI),
    revision=Setting(min_length=1, format=REVISION),
    credentials_secret=Setting(format=OBJECT_NAME),
    # No default here: with an object store, the store's own port (`serving_spec`).
    store_egress=Setting(),
)
declare(
    InferenceClientArgs,
    namespace=Setting(format=NAMESPACE),
    pod_labels=Setting(default={}, keys=LABEL_KEY_FORMAT, format=LABEL_VALUE_FORMAT),
)
declare(
    IngressArgs,
    enabled=Setting(default=False),
    class_name=Setting(default="nginx", format=OBJECT_NAME),
    base_domain=Setting(format=HOST_NAME),
    tls_secret_name=Setting(format=OBJECT_NAME),
    max_request_body=Setting(default="64m", format=QUANTITY_FORMAT),
    controller_namespace=Setting(default="ingress-nginx", format=NAMESPACE),
)
declare(
    DrainArgs,
    pre_stop_seconds=Setting(default=10, minimum=0, maximum=300),
    exit_timeout_seconds=Setting(default=30, minimum=1, maximum=3600),
)
declare(
    TritonServingArgs,
    namespace=Setting(format=NAMESPACE),
    deployments=Setting(keys=DEPLOYMENT_KEY, min_items=1),
    model_repository=Setting(),
    pool=Setting(),
    metrics_namespace=Setting(format=NAMESPACE),
    image=Setting(default=DEFAULT_IMAGE, format=IMAGE),
    # No single default: the Pulumi stack's name (`serving_spec`).
    config_name=Setting(format=CONFIG_NAME_FORMAT),
    model_defaults=Setting(default={}),
    models=Setting(default={}, keys=MODEL),
    inference_clients=Setting(default=[]),
    ingress=Setting(default={}),
    startup_timeout_seconds=Setting(default=600, minimum=30, maximum=7200),
    drain=Setting(default={}),
    shm_size_limit=Setting(default="1Gi", format=QUANTITY_FORMAT),
    tmp_size_limit=Setting(default="10Gi", format=QUANTITY_FORMAT),
    service_account_annotations=Setting(default={}, keys=LABEL_KEY_FORMAT),
    pod_labels=Setting(default={}, keys=LABEL_KEY_FORMAT, format=LABEL_VALUE_FORMAT),
    metrics_pod_labels=Setting(default=PROMETHEUS_POD_LABELS, keys=LABEL_KEY_FORMAT, format=LABEL_VALUE_FORMAT),
    labels=Setting(default={}, keys=LABEL_KEY_FORMAT, format=LABEL_VALUE_FORMAT),
    interceptor_namespace=Setting(default="keda", format=NAMESPACE),
    cluster_domain=Setting(default="cluster.local", format=HOST_NAME),
    autoscaled=Setting(default=False),
    image_digests=Setting(default={}, keys=IMAGE_TAG, format=IMAGE_DIGEST),
    protect_model_claim=Setting(default=False),
)
