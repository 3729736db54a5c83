"""A decoupled (streaming) model on the real tritonserver (2.51.0, CPU), served with the flags a Deployment that
serves one gets (tritonserver_args, `streaming`): its tokens arrive one by one, as the model sends them, over
HTTP's `generate_stream` (server-sent events) and over gRPC's bidirectional `ModelStreamInfer`.

The model (tests/fixtures/streaming_repo/tokens) waits `prefill_ms` (50) before its first token and `token_ms`
(40) between tokens. That the tokens are not held back and sent together shows in their arrival times: the first
comes long before the last. 2.51 has no first-response histogram (Triton added it in 2.52, 24.11): with the
setting on, its metrics still hold none, which is why `stackctl validate` refuses a time-to-first-token objective
on a 24.10 image (platform_config/token_checks.py)."""

from __future__ import annotations

import json
import queue
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import numpy as np
import pytest
import tritonclient.grpc as triton_grpc

from tests.support.local_triton.server import TritonServer
from tests.support.local_triton.streaming import streaming_server

pytestmark = pytest.mark.real_tools

TOKENS = 8
TOKEN_SECONDS = 0.04
"""The fixture's `token_ms`: the gap the model leaves between two tokens."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TritonServer]:
    with streaming_server(tmp_path_factory.mktemp("streaming")) as running:
        assert "--metrics-config=histogram_latencies=true" in running.args
        yield running


def spread(arrivals: list[float]) -> float:
    return arrivals[-1] - arrivals[0]


def test_generate_stream_sends_each_token_as_an_event_as_it_comes(server: TritonServer) -> None:
    body = json.dumps({"text_input": "hello", "max_tokens": TOKENS}).encode()
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/models/tokens/generate_stream",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    events, arrivals = [], []
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.headers.get_content_type() == "text/event-stream"
        for line in response:
            if line.startswith(b"data: "):
                arrivals.append(time.monotonic())
                events.append(json.loads(line[len(b"data: ") :]))
    assert [event["text_output"] for event in events] == [f"t{i}" for i in range(TOKENS)]
    # Sent together, the events would arrive within a few ms; as the model sends them, over the gaps it leaves.
    assert spread(arrivals) >= (TOKENS - 1) * TOKEN_SECONDS / 2


def test_grpc_streams_each_token_as_a_response_then_a_final_flag(server: TritonServer) -> None:
    received: queue.Queue[tuple[float, object, object]] = queue.Queue()
    client = triton_grpc.InferenceServerClient(server.grpc_url)
    text = triton_grpc.InferInput("text_input", [1], "BYTES")
    text.set_data_from_numpy(np.array([b"hello"], dtype=np.object_))
    count = triton_grpc.InferInput("max_tokens", [1], "INT32")
    count.set_data_from_numpy(np.array([TOKENS], dtype=np.int32))
    client.start_stream(callback=lambda result, error: received.put((time.monotonic(), result, error)))
    try:
        client.async_stream_infer("tokens", [text, count], enable_empty_final_response=True)
        tokens, arrivals = [], []
        while True:
            at, result, error = received.get(timeout=30)
            assert error is None, error
            response = result.get_response()  # type: ignore[attr-defined]
            if response.parameters["triton_final_response"].bool_param:
                assert result.as_numpy("text_output") is None  # type: ignore[attr-defined]
                break
            tokens.append(result.as_numpy("text_output")[0].decode())  # type: ignore[attr-defined]
            arrivals.append(at)
    finally:
        client.stop_stream()
        client.close()
    assert tokens == [f"t{i}" for i in range(TOKENS)]
    assert spread(arrivals) >= (TOKENS - 1) * TOKEN_SECONDS / 2


def test_a_non_streaming_call_of_a_decoupled_model_is_refused(server: TritonServer) -> None:
    # Triton refuses a decoupled model on the one-response `/infer`: clients must stream.
    body = json.dumps(
        {
            "inputs": [
                {"name": "text_input", "shape": [1], "datatype": "BYTES", "data": ["hello"]},
                {"name": "max_tokens", "shape": [1], "datatype": "INT32", "data": [2]},
            ]
        }
    ).encode()
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/models/tokens/infer", data=body, headers={"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert "decoupled" in refused.value.read().decode()


def test_triton_2_51_exports_no_first_response_histogram(server: TritonServer) -> None:
    body = json.dumps({"text_input": "hello", "max_tokens": 2}).encode()
    stream = urllib.request.Request(
        f"http://{server.http_url}/v2/models/tokens/generate_stream",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(stream, timeout=30) as response:
        response.read()
    with urllib.request.urlopen(server.metrics_url, timeout=10) as response:
        metrics = response.read().decode()
    assert 'nv_inference_request_success{model="tokens",version="1"}' in metrics  # the model is scraped
    assert "nv_inference_first_response_histogram_ms" not in metrics
