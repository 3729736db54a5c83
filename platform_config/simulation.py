"""`triton-platform:scaling.simulation`: what `stackctl simulate` needs that the cluster, not the program, decides."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from platform_config.types import Strict, inside_project
from triton_platform.args.formats import MODEL_NAME


class SimulationConfig(Strict):
    """Inputs of `stackctl simulate` that the cluster, not the program, decides."""

    model: Annotated[str, Field(pattern=MODEL_NAME)] | None = None
    """Model whose batching and latency profile drive the simulation. Unset: the deployment's first model with a profile."""

    shares: dict[Annotated[str, Field(pattern=MODEL_NAME)], Annotated[float, Field(gt=0, le=1)]] | None = None
    """Each model's fraction of its deployment's load, for `stackctl simulate` and `stackctl plan` to split a one-column load (a `--trace` of `t_seconds,rps` or a `--profile`) over the deployment's models and run them together (docs/simulation.md, "Several models"); the fractions of one deployment's models sum to 1, each above 0 up to 1; an ensemble's share runs on its steps. Unset: a one-column load runs one model (`model`)."""

    profile: Annotated[str, inside_project("file", "bench/results/profiles/classifier.json")] | None = None
    """Latency profile tau(b) of that model, a JSON file written by `stackctl profile` (docs/profiling.md), relative to the project root and inside it (links followed), so the stack's simulation runs the same in every checkout. Unset: `bench/results/profiles/<model>.json`."""

    gpu_memory_ratio: Annotated[float, Field(ge=0, le=1)] | None = None
    """GPU memory used/total of one serving pod (its models' footprint; read it off the dashboard's GPU memory panel), below `gpuMemoryRatioTarget`. Unset: the GPU-memory trigger is left out of the simulation."""

    node_provision_seconds: Annotated[int, Field(ge=0, le=3600)] | None = None
    """Time for the node autoscaler to bring up a GPU node (launch, boot, GPU driver, device plugin), for `stackctl simulate`, `stackctl plan` and the wake estimate. Unset: the stated default of `gpuPool.autoscaler` on `cluster.platform` (docs/scale-to-zero.md, "Node provisioning"): 110 s for Karpenter, 270 s for the cluster-autoscaler and a cloud's managed node autoscaling. Refused on a static pool, whose nodes stay up."""

    pod_start_seconds: Annotated[int, Field(ge=1, le=3600)] = 60
    """Image pull, model load and first readiness of a pod on a node already up (a Triton cold start is 30-60 s)."""

    image_bytes: Annotated[int, Field(ge=0)] = 16_000_000_000
    """Size of the Triton image a new node pulls and unpacks, for the wake estimate of a deployment at zero (docs/scale-to-zero.md). Default: 16 GB, about an NGC `tritonserver:<yy.mm>-py3` image unpacked; give yours (`docker image inspect --format '{{.Size}}'`)."""

    image_pull_bytes_per_second: Annotated[int, Field(ge=1)] = 100_000_000
    """How fast a node pulls and unpacks that image, for the wake estimate. Default: 100 MB/s, an assumption; measure yours from the kubelet's `Successfully pulled image ... in <time>` event."""

    model_load_bytes_per_second: Annotated[int, Field(ge=1)] = 200_000_000
    """How fast Triton reads and loads a deployment's model files, for the wake estimate. Default: 200 MB/s, an assumption; measure yours from Triton's `successfully loaded` log lines."""
