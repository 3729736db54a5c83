"""tritonserver's command line: the flags of one deployment's server (model control by storage source, the
restricted APIs, ports, metrics), and the admin key that guards the restricted APIs: its Secret, the environment
variable the flags read it from and the header clients send it in. Tests and benchmarks run the real server with
the very same flags.
"""

from __future__ import annotations

from collections.abc import Iterable

from triton_platform.triton_ports import GRPC_PORT, HTTP_PORT, METRICS_PORT

MODELS_DIR = "/models"
ADMIN_KEY_SECRET = "triton-admin-key"
ADMIN_KEY_HEADER = "triton-admin-key"
ADMIN_KEY_ENV = "TRITON_ADMIN_KEY"
ADMIN_APIS = ("model-repository", "logging", "trace", "shared-memory")
"""Restricted in every mode: loading, log and trace control, shared memory are operator actions, never a client's."""


def restricted_apis(source: str) -> str:
    """API groups that need the admin key; with dynamic model control the model config too (NVIDIA's deploy guide)."""
    return ",".join((*ADMIN_APIS, "model-config") if dynamic_model_control(source) else ADMIN_APIS)


def dynamic_model_control(source: str) -> bool:
    """Object storage (`source` s3 or gcs) is shared by every deployment, so each loads its own models explicitly.

    With bundled or PVC storage each pod assembles a repository of just its models
    and Triton loads everything it finds (mode none), with no model-control API at all.
    """
    return source in ("s3", "gcs")


def tritonserver_args(
    config_name: str,
    models: Iterable[str],
    *,
    source: str,
    exit_timeout_seconds: int,
    model_repository: str = MODELS_DIR,
    ports: tuple[int, int, int] = (HTTP_PORT, GRPC_PORT, METRICS_PORT),
    admin_key: str = f"$({ADMIN_KEY_ENV})",
    streaming: bool = False,
) -> list[str]:
    """tritonserver's flags for one deployment of models from `source`; tests run the real server with the same list.
    `streaming`: the deployment serves a decoupled model, whose time to first token Triton's first-response
    histogram measures."""
    http, grpc, metrics = ports
    args = [
        f"--model-repository={model_repository}",
        # configs/<config_name>.pbtxt is the rendered config; the base config.pbtxt is not shipped.
        f"--model-config-name={config_name}",
        "--disable-auto-complete-config",
    ]
    if dynamic_model_control(source):
        args += ["--model-control-mode=explicit", *(f"--load-model={m}" for m in sorted(models))]
    else:
        args.append("--model-control-mode=none")
    # gRPC callers send the key as header `triton-grpc-protocol-<name>`, HTTP callers as `<name>`.
    restriction = f"{restricted_apis(source)}:{ADMIN_KEY_HEADER}={admin_key}"
    return [
        *args,
        f"--http-restricted-api={restriction}",
        f"--grpc-restricted-protocol={restriction}",
        "--strict-readiness=true",
        "--exit-on-error=true",
        f"--exit-timeout-secs={exit_timeout_seconds}",
        f"--http-port={http}",
        f"--grpc-port={grpc}",
        "--allow-metrics=true",
        "--allow-gpu-metrics=true",
        "--allow-cpu-metrics=true",
        f"--metrics-port={metrics}",
        # p50/p95/p99 per model come from the _summary_us quantiles.
        "--metrics-config=summary_latencies=true",
        # nv_inference_first_response_histogram_ms of each decoupled model (core r24.11 and later,
        # src/metric_model_reporter.cc); a release without it, 24.10's 2.51, ignores the setting.
        *(["--metrics-config=histogram_latencies=true"] if streaming else []),
    ]
