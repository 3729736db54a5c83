"""Streams from a running Triton over HTTP `generate_stream`, timed token by token on the client: what `stackctl
profile` measures a streaming model with and bench/stream_fidelity.py loads one with.

Each request is `POST /v2/models/<model>/generate_stream` with the JSON body `request_body` builds: `{"text_input":
..., "max_tokens": n}`, the inputs TensorRT-LLM's ensemble takes (and tests/fixtures/streaming_repo/tokens), or for a
vLLM model `{"text_input": ..., "stream": true, "sampling_parameters": "{\"max_tokens\": n, ...}"}`, its inputs
(vllm_backend r24.10 `src/model.py`: `stream` asks for a response per step, and the sampling parameters, a JSON
string, become vLLM's SamplingParams). Each response is a server-sent event `data: {...}` (server
`src/http_server.cc`, `docs/protocol/extension_generate.md`), timed as its line arrives. Triton ends the HTTP
response after the final flag, with no end marker of its own.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

from offline.server_answer import ServerAnswerError, shown, stream_events

READ_TIMEOUT_SECONDS = 60.0
"""The longest one read may wait for a token: a stream queued behind a full batch waits for a slot first."""
PROMPT = "hello"


@dataclass(frozen=True)
class Streamed:
    """One request's send time and its tokens' arrival times (time.monotonic)."""

    sent: float
    tokens: tuple[float, ...]


def request_body(max_tokens: int, *, vllm: bool = False) -> bytes:
    """A request for `max_tokens` tokens, in the inputs the model takes. vLLM's asks it to ignore the end-of-sequence
    token (SamplingParams `ignore_eos`), so each stream has the tokens asked for and the profile's step count."""
    if vllm:
        sampling = json.dumps({"max_tokens": max_tokens, "ignore_eos": True})
        return json.dumps({"text_input": PROMPT, "stream": True, "sampling_parameters": sampling}).encode()
    return json.dumps({"text_input": PROMPT, "max_tokens": max_tokens}).encode()


def stream_once(url: str, model: str, max_tokens: int, *, vllm: bool = False) -> Streamed:
    """One request streamed to its end from the Triton at `url` (http://host:port); ServerAnswerError naming the
    URL if the server refuses it or sends an error event. `vllm`: the model is served by the vLLM backend."""
    where = f"{url}/v2/models/{urllib.parse.quote(model, safe='')}/generate_stream"
    body = request_body(max_tokens, vllm=vllm)
    sent, tokens = time.monotonic(), []
    for arrived, payload in stream_events(where, f"model {model!r}'s stream", body, read_timeout=READ_TIMEOUT_SECONDS):
        if b'"error"' in payload:
            raise ServerAnswerError(f"{where}: the stream sent an error: {shown(payload.decode(errors='replace'))}")
        tokens.append(arrived)
    return Streamed(sent, tuple(tokens))


def open_loop(
    url: str, model: str, arrivals: Sequence[float], max_tokens: Sequence[int], *, vllm: bool = False
) -> list[Streamed]:
    """Each request sent at its arrival (seconds from now) on a thread of its own, whatever the others wait:
    open-loop load, as the simulator's arrivals are. In arrival order; the first error raised once all end."""
    results: list[Streamed | ServerAnswerError | None] = [None] * len(arrivals)

    def one(index: int) -> None:
        try:
            results[index] = stream_once(url, model, max_tokens[index], vllm=vllm)
        except ServerAnswerError as err:
            results[index] = err

    start, threads = time.monotonic(), []
    for index, at in enumerate(arrivals):
        time.sleep(max(0.0, start + at - time.monotonic()))
        thread = threading.Thread(target=one, args=(index,), daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    done = []
    for result in results:
        if not isinstance(result, Streamed):
            raise result or ServerAnswerError(f"{url}: a stream of model {model!r} ended without an answer")
        done.append(result)
    return done
