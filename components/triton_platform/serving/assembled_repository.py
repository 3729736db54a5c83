"""The model repository a Triton pod assembles itself when its models are bundled or on a PVC: the content-named
ConfigMaps of rendered configs and bundled files, the store's volume and mount, and the init container that
links them into /models; and `pod_digest`, which changes whenever what the pods load changes.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from triton_platform.args.input_files import InputFile, InputKind
from triton_platform.kube.images import image_fields
from triton_platform.kube.pod_security import security_context
from triton_platform.model_packaging.bundle import bundle_key
from triton_platform.model_packaging.digest import files_digest, version_files
from triton_platform.model_packaging.layout import assemble_script
from triton_platform.model_packaging.render import config_map_data
from triton_platform.serving.serving_context import ServingContext
from triton_platform.serving.triton_server_args import MODELS_DIR
from triton_platform.serving.triton_serving_args import TritonDeploymentArgs

STORE_DIR, RENDERED_DIR = "/store", "/rendered"
BUNDLED_FILE = InputKind("bundled model file", 1024 * 1024)
"""A bundled file rides in a ConfigMap, whose data Kubernetes caps at 1 MiB
(kubernetes.io/docs/concepts/configuration/configmap/): no file above that can ship this way."""


def _bundle_files(ctx: ServingContext, deployment: TritonDeploymentArgs) -> dict[str, bytes]:
    if ctx.source != "bundled":
        return {}
    files = version_files(ctx.spec.rendered, deployment["models"])
    return {path: InputFile(source.path, BUNDLED_FILE).read_bytes() for path, source in files.items()}


def pod_digest(ctx: ServingContext, deployment: TritonDeploymentArgs) -> str:
    """Changes whenever what the pods load changes: rendered configs, bundled files, the store's revision."""
    rendered = ctx.spec.rendered.digest(deployment["models"])
    files = files_digest(_bundle_files(ctx, deployment))
    revision = ctx.repository.get("revision", "")
    return hashlib.sha256(f"{rendered}:{files}:{revision}".encode()).hexdigest()


def config_map_name(ctx: ServingContext, deployment: TritonDeploymentArgs, name: str) -> str:
    # Named by content: a change is a new ConfigMap, created before the old one goes.
    return f"triton-{name}-config-{ctx.spec.rendered.digest(deployment['models'])[:10]}"


def bundle_map_name(ctx: ServingContext, deployment: TritonDeploymentArgs, name: str) -> str:
    return f"triton-{name}-models-{files_digest(_bundle_files(ctx, deployment))[:10]}"


def config_map(ctx: ServingContext, name: str, deployment: TritonDeploymentArgs) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": ctx.metadata(config_map_name(ctx, deployment, name), name),
        "immutable": True,
        "data": config_map_data(ctx.spec.rendered, deployment["models"]),
    }


def bundle_map(ctx: ServingContext, name: str, deployment: TritonDeploymentArgs) -> dict[str, Any]:
    files = _bundle_files(ctx, deployment)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": ctx.metadata(bundle_map_name(ctx, deployment, name), name),
        "immutable": True,
        "binaryData": {bundle_key(path): base64.b64encode(data).decode() for path, data in files.items()},
    }


def store_volume(ctx: ServingContext, name: str, deployment: TritonDeploymentArgs) -> dict[str, Any]:
    if ctx.source == "pvc":
        claim = ctx.repository["pvc"]
        return {"name": "model-store", "persistentVolumeClaim": {"claimName": claim["claim_name"], "readOnly": True}}
    files = _bundle_files(ctx, deployment)
    items = [{"key": bundle_key(path), "path": path} for path in files]
    return {"name": "model-store", "configMap": {"name": bundle_map_name(ctx, deployment, name), "items": items}}


def store_mount(ctx: ServingContext) -> dict[str, Any]:
    """The store, read-only; a loaded claim only through its `repositories/<digest>` folder."""
    mount = {"name": "model-store", "mountPath": STORE_DIR, "readOnly": True}
    pvc = ctx.repository.get("pvc")
    if pvc is not None and "origin" in pvc:
        mount["subPath"] = f"repositories/{ctx.digest}"
    return mount


def _extra_files(ctx: ServingContext, deployment: TritonDeploymentArgs) -> dict[str, tuple[str, ...]]:
    """Each served model's label and warmup data files, which the assembled repository links beside its versions."""
    models = ctx.spec.rendered.source.models
    return {model: models[model].extra_files for model in deployment["models"] if model in models}


def _written(ctx: ServingContext, deployment: TritonDeploymentArgs) -> dict[str, tuple[str, ...]]:
    """Each served model's files the stack writes into its version folders (a vLLM model's model.json)."""
    models = ctx.spec.rendered.models
    return {model: tuple(models[model].files) for model in deployment["models"] if model in models}


def assemble_container(ctx: ServingContext, deployment: TritonDeploymentArgs) -> dict[str, Any]:
    return {
        "name": "assemble-model-repository",
        **image_fields(ctx.args["image"], ctx.args["image_digests"]),
        "command": [
            "/bin/sh",
            "-c",
            assemble_script(deployment["models"], _extra_files(ctx, deployment), _written(ctx, deployment)),
        ],
        "env": [
            {"name": "STACK", "value": ctx.config_name},
            {"name": "MODELS_DIR", "value": MODELS_DIR},
            {"name": "STORE_DIR", "value": STORE_DIR},
            {"name": "RENDERED_DIR", "value": RENDERED_DIR},
        ],
        # It writes only into the `models` emptyDir (counted there); the rest is its log.
        "resources": {
            "requests": {"cpu": "50m", "memory": "32Mi", "ephemeral-storage": "16Mi"},
            "limits": {"cpu": "200m", "memory": "64Mi", "ephemeral-storage": "64Mi"},
        },
        "securityContext": security_context(),
        "volumeMounts": [
            {"name": "models", "mountPath": MODELS_DIR},
            store_mount(ctx),
            {"name": "rendered-config", "mountPath": RENDERED_DIR, "readOnly": True},
        ],
    }
