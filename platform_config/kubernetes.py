"""`triton-platform:kubernetes`: which cluster the program deploys to, or the folder it renders into."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from platform_config.types import KeyProblemError, NamespaceName, PrintableText, Strict, inside_project
from triton_platform.kube.kubernetes_provider import KubernetesProviderArgs

RENDER_OVERRIDE_ENV = "TRITON_PLATFORM_RENDER_DIR"
"""Renders every stack, whatever its mode, into $TRITON_PLATFORM_RENDER_DIR/<stack>: for previews and end-to-end
tests on machines with no cluster credentials, and for `stackctl synth`, whose mocks reach no cluster. It changes
where objects go, never what they are; a deploy stack's preview says it is active."""


def render_override() -> str | None:
    """The folder every stack renders into instead of its own target, when $TRITON_PLATFORM_RENDER_DIR names one."""
    return os.environ.get(RENDER_OVERRIDE_ENV) or None


class KubernetesConfig(Strict):
    """Where the stack's objects go: a live cluster, or YAML files."""

    mode: Literal["deploy", "render"]
    """`deploy` applies to the cluster named by `context`; `render` writes manifests to `renderDir` and needs no cluster. Required: a stack never guesses its target. Production must deploy."""

    namespace: NamespaceName
    """Namespace for every namespaced object of the platform; created by the program with the Pod Security Standards `restricted` profile enforced."""

    context: PrintableText | None = None
    """kubeconfig context to deploy to. Required in `deploy` mode, so the active context is never used by accident. Printable text: `stackctl kube-context` prints it for the CI, so a control character (newline, carriage return, escape) is refused."""

    kubeconfig: PrintableText | None = None
    """Path to a kubeconfig file for `deploy` mode, printable text. Unset: the provider's usual lookup (`KUBECONFIG`, then `~/.kube/config`), still pinned to `context`."""

    render_dir: Annotated[str, inside_project("folder", "rendered/dev")] | None = None
    """Output folder for `render` mode, relative to the project root and inside it. Unset: `rendered/<stack>`."""

    kube_version: Annotated[str, Field(pattern=r"^v1\.[0-9]+\.[0-9]+$")] = "v1.34.0"
    """The Kubernetes version Helm charts are templated for in `render` mode (charts check it against their `kubeVersion`). In `deploy` mode the API server's own version is used and this key is refused."""

    @model_validator(mode="after")
    def _mode_fields(self) -> KubernetesConfig:
        if self.mode == "deploy" and self.context is not None and not self.context.strip():
            raise KeyProblemError("context", f"{self.context!r} is blank; give the kubeconfig context to deploy to")
        if self.mode == "deploy" and not self.context:
            raise KeyProblemError(
                "context",
                "required key is missing: mode 'deploy' needs the kubeconfig context to deploy to "
                "(the active context is never used implicitly)",
            )
        if self.mode == "deploy" and self.render_dir is not None:
            raise KeyProblemError("renderDir", "applies only to mode 'render'; remove it or set mode: render")
        if self.mode == "deploy" and "kube_version" in self.model_fields_set:
            raise KeyProblemError(
                "kubeVersion",
                "applies only to mode 'render'; deploying, charts are templated for the API server's version",
            )
        for key, value in (("context", self.context), ("kubeconfig", self.kubeconfig)):
            if self.mode == "render" and value:
                raise KeyProblemError(
                    key,
                    f"{value!r} applies only to mode 'deploy'; render mode cannot be combined with a cluster connection",
                )
        return self

    def provider_args(self, stack: str, render_override: str | None = None) -> KubernetesProviderArgs:
        """The stack's Kubernetes provider: into `<render_override>/<stack>` when that is set, else as `mode` says."""
        if render_override:
            return {"render_dir": str(Path(render_override) / stack)}
        if self.mode == "render":
            return {"render_dir": self.render_dir or f"rendered/{stack}"}
        args: KubernetesProviderArgs = {"context": self.context or ""}
        if self.kubeconfig:
            args["kubeconfig"] = self.kubeconfig
        return args

    def override_notice(self, stack: str, render_override: str | None) -> str | None:
        """What a deploy stack's run says when the override sends its objects to files instead of its cluster."""
        if not render_override or self.mode != "deploy":
            return None
        return (
            f"{RENDER_OVERRIDE_ENV} is set: this deploy stack renders to {Path(render_override) / stack} instead "
            f"of deploying to context {self.context!r}"
        )
