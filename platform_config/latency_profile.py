"""A latency profile's file, read without numpy: what `stackctl validate` and the stack's program read of it (the
demand signal's capacity, platform_config/capacity.py) and what the simulator builds its tau(b) from
(simulator.scenario.load_profile).

A profile is the JSON object `stackctl profile` or bench/latency_profile.py writes: `tau_seconds` (batch size ->
seconds one batch keeps one instance busy), optionally `request_overhead_percentiles_seconds`, and what it records of
where it was measured: `model`, and `config`, the fields of the model's config that change tau(b) (`tau_config`).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platform_config.paths import display_path
from triton_platform.args.excerpts import excerpt
from triton_platform.args.input_files import InputFile, InputFileError, InputKind
from triton_platform.model_packaging.config_rules import PLATFORM_BACKENDS

PROFILE_FILE = InputKind("latency profile", 1024 * 1024)
"""bench/latency_profile.py writes about 6 KB (a time per batch size and a few percentiles): 1 MiB is far above
any profile, and far below what would make the JSON parser a memory problem."""

PROFILE_KEYS = (
    "expected a JSON object with tau_seconds (batch size -> seconds) and optionally "
    "request_overhead_percentiles_seconds, as bench/latency_profile.py writes"
)
OVERHEAD_KEY = "request_overhead_percentiles_seconds"

MIN_TAU_SECONDS = 1e-6
MAX_PROFILE_SECONDS = 60.0
"""The range of a measured duration in a profile: a batch's tau(b), from MIN_TAU_SECONDS, and a request overhead,
from 0. A GPU kernel launch alone takes microseconds, and the slowest inference batches (a large model's full
batch) take seconds: a value outside is a unit slip (ms or us written as s) or no measurement, and beyond a minute
the queueing on top would leave the engine's latency histogram (timeline.EDGES, up to 1000 s), whose percentiles
would then report the histogram's end instead of the latency."""


def _seconds_value(value: object) -> float | None:
    """A JSON number as finite seconds, else None."""
    # bool is an int to Python, but `true` is no duration; an integer past float's range is not finite.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) else None


def _input_bytes(path: Path, kind: InputKind, noun: str, expected: str) -> bytes:
    """A file's bytes, read once; ValueError naming the file, why it cannot be read (as `noun`) and what is
    `expected`."""
    try:
        return InputFile(path, kind).read_bytes()
    except InputFileError as err:
        raise ValueError(f"{display_path(path)}: {err.problem}; {expected}") from None
    except OSError as err:
        raise ValueError(f"{display_path(path)}: cannot read {noun} ({err.strerror}); {expected}") from None


def _decoded(data: bytes, path: Path, expected: str, *, encoding: str = "utf-8", newline: str | None = None) -> str:
    """`data` decoded as `open(path, encoding=..., newline=...).read()` would; ValueError naming the file if not."""
    try:
        return io.TextIOWrapper(io.BytesIO(data), encoding=encoding, newline=newline).read()
    except UnicodeDecodeError as err:
        raise ValueError(f"{display_path(path)}: not UTF-8 text (byte {err.start}); {expected}") from None


def input_text(
    path: Path, kind: InputKind, noun: str, expected: str, *, encoding: str = "utf-8", newline: str | None = None
) -> str:
    """A profile's (or a profiler export's) text; ValueError naming the file, why it cannot be read (as `noun`)
    and what is `expected`."""
    data = _input_bytes(path, kind, noun, expected)
    return _decoded(data, path, expected, encoding=encoding, newline=newline)


def _read_json(path: Path, where: str) -> tuple[dict[str, object], str]:
    """A profile's JSON object and the sha256 of the bytes it was read from."""
    data = _input_bytes(path, PROFILE_FILE, "the latency profile", PROFILE_KEYS)
    text = _decoded(data, path, PROFILE_KEYS)
    try:
        profile = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}:{err.lineno}: not JSON ({err.msg}); {PROFILE_KEYS}") from None
    except ValueError:
        # json's own limit: an integer of more than 4300 digits.
        raise ValueError(f"{where}: holds a number too long to read; {PROFILE_KEYS}") from None
    except RecursionError:
        raise ValueError(f"{where}: nested too deeply to be a latency profile; {PROFILE_KEYS}") from None
    if not isinstance(profile, dict):
        raise ValueError(f"{where}: the top level is a JSON {type(profile).__name__}; {PROFILE_KEYS}")
    return profile, hashlib.sha256(data).hexdigest()


def _tau(tau: object, where: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """tau_seconds as ascending batch sizes and their seconds."""
    if not isinstance(tau, dict) or not tau:
        found = "missing" if tau is None else f"a JSON {type(tau).__name__}" if tau else "empty"
        raise ValueError(
            f"{where}: tau_seconds is {found}; expected an object of batch sizes to seconds, "
            'at least one, e.g. {"1": 0.0008, "32": 0.0048}'
        )
    by_size: dict[int, float] = {}
    for key, value in tau.items():
        size = int(key) if key.isdecimal() and key.isascii() and len(key) <= 9 else 0
        if size < 1:
            raise ValueError(f"{where}: tau_seconds key {excerpt(key)} is not a batch size; expected integers >= 1")
        if size in by_size:
            raise ValueError(f"{where}: tau_seconds gives batch size {size} twice; expected each size once")
        seconds = _seconds_value(value)
        if seconds is None or seconds <= 0:
            shown = excerpt(json.dumps(value))
            raise ValueError(f"{where}: tau_seconds[{key!r}] is {shown}; expected a finite number of seconds > 0")
        if not MIN_TAU_SECONDS <= seconds <= MAX_PROFILE_SECONDS:
            raise ValueError(
                f"{where}: tau_seconds[{key!r}] = {seconds:g} s is outside {MIN_TAU_SECONDS:g} to "
                f"{MAX_PROFILE_SECONDS:g} s; expected one batch's seconds on one model instance (is it in ms or us?)"
            )
        by_size[size] = seconds
    sizes = tuple(sorted(by_size))
    for smaller, larger in itertools.pairwise(sizes):
        # Beyond the last measured size tau(b) continues the last slope: falling, it would reach 0.
        if by_size[larger] < by_size[smaller]:
            raise ValueError(
                f"{where}: tau_seconds['{larger}'] = {by_size[larger]} is below tau_seconds['{smaller}'] = "
                f"{by_size[smaller]}; expected seconds that do not fall as the batch grows"
            )
    return sizes, tuple(by_size[s] for s in sizes)


def _overhead(overhead: object, where: str) -> tuple[float, ...]:
    """request_overhead_percentiles_seconds: the percentiles 0..100 of the overhead, ascending."""
    if not isinstance(overhead, list) or not overhead:
        found = f"a JSON {type(overhead).__name__}" if overhead else "empty"
        raise ValueError(
            f"{where}: {OVERHEAD_KEY} is {found}; expected a list of seconds (percentiles 0..100), at least one"
        )
    percentiles: list[float] = []
    for i, value in enumerate(overhead):
        seconds = _seconds_value(value)
        if seconds is None or seconds < 0:
            shown = excerpt(json.dumps(value))
            raise ValueError(f"{where}: {OVERHEAD_KEY}[{i}] is {shown}; expected a finite number of seconds >= 0")
        if seconds > MAX_PROFILE_SECONDS:
            raise ValueError(
                f"{where}: {OVERHEAD_KEY}[{i}] = {seconds:g} s is above {MAX_PROFILE_SECONDS:g} s; expected one "
                "request's seconds outside the instance: transport, (de)serialization (is it in ms or us?)"
            )
        # The inverse of the overhead's distribution, which cannot fall.
        if percentiles and seconds < percentiles[-1]:
            raise ValueError(
                f"{where}: {OVERHEAD_KEY}[{i}] = {seconds} is below {OVERHEAD_KEY}[{i - 1}] = {percentiles[-1]}; "
                "expected percentiles in ascending order"
            )
        percentiles.append(seconds)
    return tuple(percentiles)


def tau_fields(
    profile: Mapping[str, object], where: str
) -> tuple[tuple[int, ...], tuple[float, ...], tuple[float, ...]]:
    """A profile's measured batch sizes, their seconds and its request overhead's percentiles; ValueError naming
    `where` and the key where the object holds no profile."""
    sizes, seconds = _tau(profile.get("tau_seconds"), where)
    return sizes, seconds, _overhead(profile.get(OVERHEAD_KEY, [0.0]), where)


@dataclass(frozen=True)
class ProfileFile:
    """A profile's file read and parsed once: what load_profile and profile_warnings both read."""

    where: str
    """The file as messages name it (display_path)."""
    data: dict[str, object]
    sha256: str = ""
    """The sha256 of the bytes `data` was read from: what a stack pins a profile by (scaling.capacityProfiles)."""


def read_profile(path: Path) -> ProfileFile:
    """A profile's JSON object; ValueError naming the file if it cannot be read or is no JSON object."""
    where = display_path(path)
    data, sha256 = _read_json(path, where)
    return ProfileFile(where, data, sha256)


TAU_FIELDS = ("max_batch_size", "instance_count", "backend")
"""The config fields that change tau(b): the batch sizes an instance runs, how many instances share a GPU (and
its CPU), and what runs the model."""


def tau_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a model config (Triton's JSON, as `GET /v2/models/<m>/config` returns it, or a ModelConfig
    as a dict with proto field names) that change tau(b). instance_count: the sum of the instance groups'
    `count` (1 where unset), per GPU for a GPU group, as Triton counts it."""
    groups = config.get("instance_group") or []
    count = sum(int(group.get("count") or 1) for group in groups) if groups else 1
    platform = str(config.get("platform") or "")
    return {
        "max_batch_size": int(config.get("max_batch_size") or 0),
        "instance_count": count,
        "backend": str(config.get("backend") or PLATFORM_BACKENDS.get(platform, platform)) or None,
    }


def config_differences(recorded: object, current: Mapping[str, Any]) -> list[str]:
    """`field recorded -> current` for each tau(b) field a profile recorded that differs from `current`
    (tau_config of the stack's rendered config); a field the profile leaves out or null is not compared."""
    if not isinstance(recorded, dict):
        return []
    return [
        f"{field} {recorded[field]!r} -> {current[field]!r}"
        for field in TAU_FIELDS
        if recorded.get(field) is not None and recorded[field] != current[field]
    ]
