"""A streaming (decoupled) model's stream profile measured against a running Triton by URL: what `stackctl profile
--url` writes for a decoupled model, and what the stream simulator (simulator/streams.py) runs.

Measured on the client over HTTP `generate_stream` (simulator/stream_client.py), as a user of the model sees it:

- the prefill: the median time to first token of requests streamed one at a time (nothing else in flight, so no
  decode step is in the way);
- the decode step time with c sequences in flight, for c = 1, 2, 4 ... up to max_sequences: rounds of c requests
  sent together, each streaming `output_tokens` tokens; the median gap between two tokens of a request. The median
  leaves out the gaps a prefill of a request admitted a step late lengthens.

Triton reports no inter-token latency of its own (docs/streaming.md), hence the client. max_sequences is the
engine's, given by the user (vLLM's `max_num_seqs`; Triton's API does not show it).
"""

from __future__ import annotations

import json
import time
import urllib.parse
from datetime import UTC, datetime
from typing import Any

import numpy as np

from offline.server_answer import Document
from simulator.profiling import Server
from simulator.stream_client import Streamed, open_loop

DEFAULT_OUTPUT_TOKENS = 16
"""Tokens each measuring request asks for: 15 gaps a request, few enough that a round takes seconds."""


def is_decoupled(server: Server, model: str) -> bool:
    """Whether the served config of `model` says `model_transaction_policy { decoupled: true }`."""
    return _config(server, model).get("model_transaction_policy", "decoupled", kind=bool, default=False)


def is_vllm(server: Server, model: str) -> bool:
    """Whether the vLLM backend serves `model`, which takes its request's length in `sampling_parameters`."""
    return _config(server, model).get("backend", kind=str, default="") == "vllm"


def _config(server: Server, model: str) -> Document:
    quoted = urllib.parse.quote(model, safe="")
    return server.document(f"/v2/models/{quoted}/config", f"model {model!r}'s config")


def concurrencies(max_sequences: int) -> list[int]:
    """1, 2, 4 ... below max_sequences, and max_sequences."""
    found, c = [], 1
    while c < max_sequences:
        found.append(c)
        c *= 2
    return [*found, max_sequences]


def rounds(url: str, model: str, count: int, tokens: int, seconds: float, *, vllm: bool = False) -> list[Streamed]:
    """Rounds of `count` requests sent together, for at least `seconds` and at least three rounds."""
    streamed: list[Streamed] = []
    start, done = time.monotonic(), 0
    while done < 3 or time.monotonic() - start < seconds:
        streamed += open_loop(url, model, [0.0] * count, [tokens] * count, vllm=vllm)
        done += 1
    return streamed


def measure_stream(server: Server, model: str, max_sequences: int, tokens: int, seconds: float) -> dict[str, Any]:
    """The prefill and the step time by sequences in flight of `model` on `server`."""
    where = f"{server.url}: model {model!r}"
    vllm = is_vllm(server, model)
    open_loop(server.url, model, [0.0], [tokens], vllm=vllm)  # warm
    steps: dict[str, float] = {}
    prefill = 0.0
    for count in concurrencies(max_sequences):
        streamed = rounds(server.url, model, count, tokens, seconds, vllm=vllm)
        short = [len(s.tokens) for s in streamed if len(s.tokens) < 2]
        if short:
            raise ValueError(
                f"{where} streamed {short[0]} token(s) where {tokens} were asked (max_tokens); a stream profile "
                "needs two or more a request"
            )
        if count == 1:
            prefill = float(np.median([s.tokens[0] - s.sent for s in streamed]))
        steps[str(count)] = float(np.median(np.concatenate([np.diff(s.tokens) for s in streamed])))
    # Measured noise can make a larger batch's median a hair faster; a profile's step times do not fall.
    for fewer, more in zip(list(steps), list(steps)[1:], strict=False):
        steps[more] = max(steps[more], steps[fewer])
    return {"prefill_seconds": prefill, "step_seconds": steps, "max_sequences": max_sequences, "output_tokens": tokens}


def measured_stream_profile(
    server: Server, model: str, max_sequences: int, seconds: float, tokens: int = DEFAULT_OUTPUT_TOKENS
) -> dict[str, Any]:
    """A whole stream profile of `model` on `server`: the measurement and what it ran on."""
    version = server.version()
    measurement = measure_stream(server, model, max_sequences, tokens, seconds)
    return {
        "kind": "stream",
        "model": model,
        "measured": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC at {server.url} by stackctl profile",
        "source": {"kind": "measured", "from": server.url},
        "triton_version": version,
        **measurement,
    }


def is_stream_profile_of(data: bytes, model: str) -> bool:
    """Whether `data` is a stream profile file of `model`: what `stackctl profile` may replace without --force."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(value, dict) and value.get("model") == model and value.get("kind") == "stream"
