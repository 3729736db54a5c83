"""The typed stack configuration: the root of the schema.

Each section's model lives in its own module here (`scaling.simulation`'s, what only the simulator reads, in
`platform_config/simulation.py`), the field types they share in `platform_config/types.py`,
and every default beside its field. Each top-level section is one Pulumi config key in the ``triton-platform``
namespace (``triton-platform:serving`` and so on). Keys are camelCase like the
Kubernetes and KEDA objects they feed; unknown keys are errors, so a typo never
silently falls back to a default. Field docstrings are the config reference in
docs/configuration.md (``python -m platform_config.reference``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.alias_generators import to_camel

from platform_config.cluster import ClusterConfig
from platform_config.gpu_pool import GpuPoolConfig
from platform_config.kubernetes import KubernetesConfig
from platform_config.monitoring import MonitoringConfig
from platform_config.policy_exceptions import PolicyException
from platform_config.scaling import ScalingConfig
from platform_config.serving import ModelSettings, ServingConfig
from platform_config.types import ImageDigest, ImageTag, Strict
from triton_platform.args.formats import MODEL_NAME
from triton_platform.kube import images
from triton_platform.kube.namespace import PROJECT

Environment = Literal["dev", "staging", "production"]


class PlatformConfig(Strict):
    """A whole stack's configuration: one attribute per `triton-platform:<key>`."""

    environment: Environment
    """Tier of the stack. Production gets the strictest checks: it must deploy, never render. Required."""

    kubernetes: KubernetesConfig
    """Kubernetes provider target. Required."""

    cluster: ClusterConfig = ClusterConfig()
    """The kind of cluster and what it provides itself (GPU software, node autoscaling, workload identity)."""

    gpu_pool: GpuPoolConfig
    """GPU node pool. Required."""

    serving: ServingConfig
    """Triton deployments. Required."""

    models: dict[Annotated[str, Field(pattern=MODEL_NAME)], ModelSettings] = {}
    """Per-model settings by model directory name; each overrides `serving.modelDefaults`."""

    scaling: ScalingConfig = ScalingConfig()
    """Autoscaling."""

    monitoring: MonitoringConfig = MonitoringConfig()
    """Monitoring and alert thresholds."""

    image_digests: dict[ImageTag, ImageDigest] = {}
    """What each image tag of the stack resolves to, e.g. `nvcr.io/nvidia/tritonserver:24.10-py3: sha256:<64 hex>` (`crane digest <image>` or `docker buildx imagetools inspect <image>` prints it; take the multi-arch index digest). Every image listed runs as `<image>@<digest>`, so a re-pushed tag cannot change what runs. Production needs one for every image it runs (`stackctl validate` names each missing one); dev and staging may run tags."""

    policy_exceptions: list[PolicyException] = []
    """Objects exempt from a policy-pack rule, each with its reason. Explicit and visible: every preview with `--policy-pack policy` lists them as advisory notes."""


pinned = images.pinned
"""Moved to triton_platform/kube/images.py."""


def section_key(field_name: str) -> str:
    """The Pulumi config key of a top-level section, e.g. ``triton-platform:gpuPool``."""
    return f"{PROJECT}:{to_camel(field_name)}"


SECTION_KEYS: dict[str, str] = {section_key(name): name for name in PlatformConfig.model_fields}


def section_annotation(key: str) -> Any:
    """The schema type of a config key (None outside the platform's sections)."""
    field_name = SECTION_KEYS.get(key)
    return PlatformConfig.model_fields[field_name].annotation if field_name else None
