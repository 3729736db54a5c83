"""The streaming fixture (tests/fixtures/streaming_repo: `tokens`, a decoupled Python-backend model that batches
continuously at a stated cost) on the local tritonserver, run with the flags a Deployment serving it gets: what the
streaming tests and bench/stream_fidelity.py run."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from model_publishing.publish import write_model_repository
from platform_config.paths import PROJECT_ROOT
from tests.support.local_triton.server import TritonServer, free_ports
from triton_platform.model_packaging.render import render_repository
from triton_platform.model_packaging.source import read_repository
from triton_platform.serving.triton_server_args import tritonserver_args

REPOSITORY = PROJECT_ROOT / "tests" / "fixtures" / "streaming_repo"
MODEL = "tokens"


@contextmanager
def streaming_server(scratch: Path) -> Iterator[TritonServer]:
    """The fixture repository on the local tritonserver, run with the flags a Deployment serving it gets."""
    rendered = render_repository("streaming", read_repository(REPOSITORY), [MODEL], {}, {})
    out = scratch / "models"
    write_model_repository(rendered, out, [MODEL])
    ports = free_ports()
    args = tritonserver_args(
        "streaming",
        [MODEL],
        source="bundled",
        exit_timeout_seconds=30,
        model_repository=str(out),
        ports=ports,
        admin_key="test-key",
        streaming=True,
    )
    with TritonServer(args, ports) as running:
        yield running
