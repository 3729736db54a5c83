"""The model loader: the Job that copies a published repository from the object store into the model claim, once
per digest for the whole stack, with the script it runs and the NetworkPolicy that lets it reach only DNS and
the store.
"""

from __future__ import annotations

import shlex
from typing import Any

from triton_platform.kube.images import image_fields
from triton_platform.kube.pod_security import pod_security_context, security_context
from triton_platform.model_packaging.layout import MANIFEST
from triton_platform.model_packaging.store import rclone_settings
from triton_platform.serving.object_store_access import store_access, store_egress
from triton_platform.serving.serving_context import SERVICE_ACCOUNT, ServingContext, user_pod_labels
from triton_platform.serving.triton_serving_args import ModelClaimArgs

CLAIM_DIR = "/claim"
LOADER_NAME = "triton-model-loader"
LOADER_DEADLINE_SECONDS = 3600
"""The loader's whole budget, every retry included; Pulumi waits as long (triton_serving.LOADER_TIMEOUT)."""


def loader_script() -> str:
    """The loader Job's script: copy a published repository into the claim, then rename it into place.

    Runs with SOURCE (rclone path of `<origin>/<digest>`), DIGEST, CLAIM_DIR and
    STACK in its environment, so tests run the very same script against a local
    folder and a local S3. The rename is atomic (same folder), so a crash leaves
    only `<digest>.partial`, which the next try resumes; an existing
    `repositories/<digest>` is complete and left alone.
    """
    return f"""set -eu
target="$CLAIM_DIR/repositories/$DIGEST"
if [ -d "$target" ]; then echo "repositories/$DIGEST is already loaded"; exit 0; fi
# rclone's S3 backend ignores the AWS SDK's region variables (the credentials Secret's, workload identity's).
export RCLONE_S3_REGION="${{RCLONE_S3_REGION:-${{AWS_REGION:-${{AWS_DEFAULT_REGION:-}}}}}}"
if ! rclone lsf "$SOURCE" --files-only | grep -qx {shlex.quote(MANIFEST)}; then
  echo "$SOURCE is not a complete published repository (no {MANIFEST}): run stackctl publish-models --stack $STACK" >&2
  exit 1
fi
mkdir -p "$CLAIM_DIR/repositories"
rclone copy "$SOURCE" "$target.partial" --checksum
if ! grep -qF "\\"digest\\": \\"$DIGEST\\"" "$target.partial/{MANIFEST}"; then
  echo "$SOURCE/{MANIFEST} does not record digest $DIGEST" >&2
  exit 1
fi
mv "$target.partial" "$target"
echo "loaded repositories/$DIGEST from $SOURCE"
"""


def loader_job_name(ctx: ServingContext) -> str:
    # One Job per published version: a new digest is a new Job, and the Deployments wait for it.
    return f"model-loader-{ctx.digest[:16]}"


def loader_job_manifest(ctx: ServingContext, pvc: ModelClaimArgs) -> dict[str, Any]:
    """Fills `repositories/<digest>` of the claim from pvc.origin, once per digest, for every deployment.

    One Job for the stack, not one per deployment: the repository is the stack's,
    and a single writer never races another for the same `.partial` folder.
    """
    store = ctx.store
    assert store is not None
    access = store_access(ctx)
    labels = {"app.kubernetes.io/name": LOADER_NAME, "app.kubernetes.io/component": "model-loader"}
    metadata = ctx.metadata(loader_job_name(ctx))
    metadata["labels"] |= labels
    settings = {**rclone_settings(store), "SOURCE": store.rclone_path(ctx.digest), "DIGEST": ctx.digest}
    container: dict[str, Any] = {
        "name": "load",
        **image_fields(pvc["loader_image"], ctx.args["image_digests"]),
        "command": ["/bin/sh", "-c", loader_script()],
        "env": [
            *(
                {"name": k, "value": v}
                for k, v in sorted({**settings, "CLAIM_DIR": CLAIM_DIR, "STACK": ctx.config_name}.items())
            ),
            *access.env,
        ],
        "resources": {
            # rclone streams to the claim; its own disk use is logs only.
            "requests": {"cpu": "100m", "memory": "128Mi", "ephemeral-storage": "64Mi"},
            "limits": {"cpu": "1", "memory": "512Mi", "ephemeral-storage": "256Mi"},
        },
        "securityContext": security_context(),
        "volumeMounts": [{"name": "claim", "mountPath": CLAIM_DIR}, *access.mounts],
    }
    if access.env_from:
        container["envFrom"] = access.env_from
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": 3,
            "activeDeadlineSeconds": LOADER_DEADLINE_SECONDS,
            # A day to read its logs; a later `pulumi refresh` then drops it and `up` reruns it (a no-op).
            "ttlSecondsAfterFinished": 86_400,
            "template": {
                "metadata": {"labels": {**metadata["labels"], **user_pod_labels(ctx.args)}},
                "spec": {
                    "restartPolicy": "Never",
                    # Triton's ServiceAccount: the same workload identity reads the same store.
                    "serviceAccountName": SERVICE_ACCOUNT,
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    # Triton's UID: the files it writes are Triton's to read.
                    "securityContext": pod_security_context(),
                    "containers": [container],
                    "volumes": [
                        {"name": "claim", "persistentVolumeClaim": {"claimName": pvc["claim_name"]}},
                        *access.volumes,
                    ],
                },
            },
        },
    }


def loader_network_policy(ctx: ServingContext) -> dict[str, Any]:
    """The loader Job reaches DNS and the object store; nothing reaches it."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": ctx.metadata(LOADER_NAME),
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": LOADER_NAME}},
            "policyTypes": ["Ingress", "Egress"],
            "egress": store_egress(ctx),
        },
    }
