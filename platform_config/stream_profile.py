"""A streaming model's profile file, read and checked: what `stackctl profile` writes for a decoupled model and what
the stream simulator (simulator/streams.py) runs.

The file is a JSON object: `kind` "stream", `model`, `prefill_seconds` (a request's wait from admission to its first
token), `step_seconds` (sequences in flight -> seconds of one decode step, a token of each), `max_sequences` (the
most sequences the engine runs at once) and `output_tokens` (the tokens each measured request streamed); it also
records where it was measured (`measured`, `source`, `triton_version`), which is not checked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from platform_config.latency_profile import (
    MAX_PROFILE_SECONDS,
    MIN_TAU_SECONDS,
    SecondsByCount,
    read_json_object,
    seconds_by_count,
    seconds_value,
)
from platform_config.paths import display_path
from triton_platform.args.excerpts import excerpt
from triton_platform.args.input_files import InputKind

STREAM_PROFILE_FILE = InputKind("stream profile", 1024 * 1024)
"""`stackctl profile` writes well under 1 KB (a step time per measured concurrency): 1 MiB is far above any, and far
below what would make the JSON parser a memory problem."""
KIND = "stream"
STREAM_KEYS = (
    'expected a JSON object with kind "stream", model, prefill_seconds, step_seconds (sequences in flight -> '
    "seconds), max_sequences and output_tokens, as stackctl profile writes for a decoupled model"
)
MAX_SEQUENCES = 1_000_000
"""The most sequences in flight a profile may state: vLLM's max_num_seqs defaults to 256; a million is a typo."""
MAX_OUTPUT_TOKENS = 1_000_000


@dataclass(frozen=True)
class StreamProfileFile:
    """A stream profile's checked fields, and the file as messages name it."""

    where: str
    model: str
    prefill_seconds: float
    concurrencies: tuple[int, ...]
    step_seconds: tuple[float, ...]
    max_sequences: int
    output_tokens: int


def _duration(value: object, where: str, key: str, what: str) -> float:
    seconds = seconds_value(value)
    if seconds is None:
        raise ValueError(f"{where}: {key} is {excerpt(json.dumps(value))}; expected a finite number of seconds")
    if not MIN_TAU_SECONDS <= seconds <= MAX_PROFILE_SECONDS:
        raise ValueError(
            f"{where}: {key} = {seconds:g} s is outside {MIN_TAU_SECONDS:g} to {MAX_PROFILE_SECONDS:g} s; expected "
            f"{what} (is it in ms or us?)"
        )
    return seconds


def _whole(value: object, where: str, key: str, *, least: int, most: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise ValueError(f"{where}: {key} is {excerpt(json.dumps(value))}; expected {what}, {least} to {most}")
    return value


STEPS = SecondsByCount(
    "step_seconds",
    "sequences in flight",
    "a number of sequences",
    "{} sequences",
    "each count once",
    '{"1": 0.04, "8": 0.11}',
    "one decode step's seconds",
    "sequences are added",
)


def stream_fields(profile: Mapping[str, object], where: str) -> StreamProfileFile:
    """A stream profile's checked fields; ValueError naming `where`, the key, its value and what is allowed."""
    kind = profile.get("kind")
    if kind != KIND:
        found = "missing" if kind is None else excerpt(json.dumps(kind))
        raise ValueError(f"{where}: kind is {found}; {STREAM_KEYS}")
    model = profile.get("model")
    if not isinstance(model, str) or not model:
        raise ValueError(f"{where}: model is {excerpt(json.dumps(model))}; expected the model's name, as Triton's")
    prefill = _duration(profile.get("prefill_seconds"), where, "prefill_seconds", "a request's prefill")
    concurrencies, steps = seconds_by_count(profile.get("step_seconds"), where, STEPS)
    most = _whole(
        profile.get("max_sequences"), where, "max_sequences", least=1, most=MAX_SEQUENCES, what="a whole number"
    )
    if concurrencies[-1] > most:
        raise ValueError(
            f"{where}: step_seconds['{concurrencies[-1]}'] measures more sequences than max_sequences = {most}; "
            "expected concurrencies the engine runs at once"
        )
    # Two tokens at least: a measurement of the step time needs a gap between two.
    tokens = _whole(
        profile.get("output_tokens"),
        where,
        "output_tokens",
        least=2,
        most=MAX_OUTPUT_TOKENS,
        what="the tokens each measured request streamed",
    )
    return StreamProfileFile(where, model, prefill, concurrencies, steps, most, tokens)


def read_stream_profile(path: Path) -> StreamProfileFile:
    """A stream profile file's checked fields; ValueError naming the file, the key, its value and what is allowed."""
    where = display_path(path)
    data, _ = read_json_object(path, where, STREAM_PROFILE_FILE, "a stream profile", STREAM_KEYS)
    return stream_fields(data, where)
