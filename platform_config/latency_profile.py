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


def seconds_value(value: object) -> float | None:
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


def read_json_object(
    path: Path,
    where: str,
    kind: InputKind = PROFILE_FILE,
    noun: str = "a latency profile",
    expected: str = PROFILE_KEYS,
) -> tuple[dict[str, object], str]:
    """A profile's JSON object and the sha256 of the bytes it was read from; ValueError naming `where`, what is
    wrong, and what is `expected`. `kind` bounds the file's size; `noun` names what it should be."""
    data = _input_bytes(path, kind, noun, expected)
    text = _decoded(data, path, expected)
    try:
        profile = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}:{err.lineno}: not JSON ({err.msg}); {expected}") from None
    except ValueError:
        # json's own limit: an integer of more than 4300 digits.
        raise ValueError(f"{where}: holds a number too long to read; {expected}") from None
    except RecursionError:
        raise ValueError(f"{where}: nested too deeply to be {noun}; {expected}") from None
    if not isinstance(profile, dict):
        raise ValueError(f"{where}: the top level is a JSON {type(profile).__name__}; {expected}")
    return profile, hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class SecondsByCount:
    """How errors name a table of seconds by a count: tau_seconds by batch size here, a stream profile's
    step_seconds by sequences in flight (platform_config/stream_profile.py)."""

    key: str
    counts: str
    """The counts in the plural: `expected an object of <counts> to seconds`."""
    count: str
    """One count with its article: `key '0' is not <count>`."""
    named: str
    """A count named with `{}` for its number: `gives <named> twice`."""
    once: str
    example: str
    each: str
    """What one value is: `expected <each> (is it in ms or us?)`."""
    grows: str
    """How the count grows: `seconds that do not fall as <grows>`."""


TAU = SecondsByCount(
    "tau_seconds",
    "batch sizes",
    "a batch size",
    "batch size {}",
    "each size once",
    '{"1": 0.0008, "32": 0.0048}',
    "one batch's seconds on one model instance",
    "the batch grows",
)


def seconds_by_count(table: object, where: str, named: SecondsByCount) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """A table of seconds by a count (keys: whole numbers >= 1) as ascending counts and their seconds, which do
    not fall; ValueError naming `where`, the key, its value and what is allowed."""
    key = named.key
    if not isinstance(table, dict) or not table:
        found = "missing" if table is None else f"a JSON {type(table).__name__}" if table else "empty"
        raise ValueError(
            f"{where}: {key} is {found}; expected an object of {named.counts} to seconds, at least one, "
            f"e.g. {named.example}"
        )
    by_count: dict[int, float] = {}
    for entry, value in table.items():
        count = int(entry) if entry.isdecimal() and entry.isascii() and len(entry) <= 9 else 0
        if count < 1:
            raise ValueError(f"{where}: {key} key {excerpt(entry)} is not {named.count}; expected integers >= 1")
        if count in by_count:
            raise ValueError(f"{where}: {key} gives {named.named.format(count)} twice; expected {named.once}")
        seconds = seconds_value(value)
        if seconds is None or seconds <= 0:
            shown = excerpt(json.dumps(value))
            raise ValueError(f"{where}: {key}[{entry!r}] is {shown}; expected a finite number of seconds > 0")
        if not MIN_TAU_SECONDS <= seconds <= MAX_PROFILE_SECONDS:
            raise ValueError(
                f"{where}: {key}[{entry!r}] = {seconds:g} s is outside {MIN_TAU_SECONDS:g} to "
                f"{MAX_PROFILE_SECONDS:g} s; expected {named.each} (is it in ms or us?)"
            )
        by_count[count] = seconds
    counts = tuple(sorted(by_count))
    for smaller, larger in itertools.pairwise(counts):
        # Beyond the last measured count the seconds continue the last slope: falling, they would reach 0.
        if by_count[larger] < by_count[smaller]:
            raise ValueError(
                f"{where}: {key}['{larger}'] = {by_count[larger]} is below {key}['{smaller}'] = "
                f"{by_count[smaller]}; expected seconds that do not fall as {named.grows}"
            )
    return counts, tuple(by_count[c] for c in counts)


def _overhead(overhead: object, where: str) -> tuple[float, ...]:
    """request_overhead_percentiles_seconds: the percentiles 0..100 of the overhead, ascending."""
    if not isinstance(overhead, list) or not overhead:
        found = f"a JSON {type(overhead).__name__}" if overhead else "empty"
        raise ValueError(
            f"{where}: {OVERHEAD_KEY} is {found}; expected a list of seconds (percentiles 0..100), at least one"
        )
    percentiles: list[float] = []
    for i, value in enumerate(overhead):
        seconds = seconds_value(value)
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
    sizes, seconds = seconds_by_count(profile.get("tau_seconds"), where, TAU)
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
    data, sha256 = read_json_object(path, where)
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
