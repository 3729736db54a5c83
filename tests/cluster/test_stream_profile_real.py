"""`stackctl profile --url` of a decoupled model against the real local tritonserver (2.51.0, CPU): the stream profile
of tests/fixtures/streaming_repo/tokens, which batches continuously at a stated cost (prefill 50 ms, a decode step
of 40 ms + 10 ms per further sequence in flight), comes out near that cost, and the stream simulator reads it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.stream_fidelity import fixture_profile
from simulator.streams import load_stream_profile
from stackctl.main import main
from tests.support.local_triton.server import TritonServer
from tests.support.local_triton.streaming import streaming_server

pytestmark = pytest.mark.real_tools

TOLERANCE = 0.2
"""Loopback HTTP, the client's threads and the Python backend's stub share two cores with the server."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TritonServer]:
    with streaming_server(tmp_path_factory.mktemp("streaming")) as running:
        yield running


def test_the_measured_prefill_and_step_times_are_the_fixtures(
    server: TritonServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tokens.stream.json"
    url = f"http://{server.http_url}"
    argv = ["--url", url, "--model", "tokens", "--max-sequences", "4", "--seconds", "0.5", "--output", str(out)]
    code = main(["profile", *argv])
    printed, err = capsys.readouterr()
    assert (code, err) == (0, ""), f"{err}\n{server.errors()}"
    assert printed.startswith(f"{out}: stream profile of model 'tokens' from {url}; Triton 2.51.0; prefill ")
    measured, stated = load_stream_profile(out), fixture_profile()
    assert measured.concurrencies == (1, 2, 4)
    assert measured.prefill_seconds == pytest.approx(stated.prefill_seconds, rel=TOLERANCE)
    for count, seconds in zip(measured.concurrencies, measured.step_seconds, strict=True):
        assert seconds == pytest.approx(stated.step(count), rel=TOLERANCE), count
