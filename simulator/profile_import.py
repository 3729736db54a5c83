"""Latency profiles from what a user's own tools already measured: perf_analyzer's CSV export (`-f FILE`) and
Model Analyzer's inference results (`results/metrics-model-inference.csv`). Anything that does not parse is
refused naming the file and line, every problem found at once.

Both tools report, per request, the mean time the server spent computing the execution that request was in
(Triton's compute input + infer + output). Only a row at concurrency 1 says which batch that execution had: one
request outstanding is never batched with another, so its execution holds exactly the request's own batch size
(perf_analyzer's `-b`, Model Analyzer's Batch column). Rows at higher concurrency mix batch sizes the CSV does not
record, and are not read.

perf_analyzer (report_writer.cc of triton-inference-server/perf_analyzer, `-f`): a header `Concurrency,
Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,
Server Compute Output,Client Recv,p50 latency,...` (later releases add columns; they are not read), then a row per
concurrency, times in microseconds. The batch size is not in the file: it is given with each file (`B:FILE`, 1 when
left out), so several runs (`-b 1`, `-b 8`, ...) give tau(b) at several sizes. The overhead is the client's send,
network and receive time (`Client Send + Network+Server Send/Recv + Client Recv`) of the smallest batch's row: a
constant, as the CSV holds means only.

Model Analyzer (model_analyzer/record/types/*.py headers; its golden tests/common/single-model-ckpt CSV): a header
naming `Model,Batch,Concurrency,Model Config Path,...`, a row per model config variant, batch size and
concurrency, times in milliseconds. tau(b) is `Server Compute Input/Infer/Output time (ms)` when the export
carries them (`inference_output_fields` with perf_server_compute_*), else Batch / `Throughput (infer/sec)`: at
concurrency 1 that is the whole request's mean latency, client and network included, so an upper bound of
tau(b). Its `Max Batch Size` column, when present, is recorded as the config's max_batch_size. Its `Instance
Group` column is `COUNT:KIND` per kind, joined by ` + ` (`1:GPU`, `2:GPU + 1:CPU`; model_analyzer/triton/model/
model_config.py `instance_group_string`, since Model Analyzer's commit 80ece0e2 of Aug 2022; the `1/GPU,2/CPU` of
earlier releases is refused). A GPU count there is the total over the GPUs the model runs on (a group's count x its
GPUs), not the count per GPU that Triton's config and the simulator use, so it gives instance_count only when every
group is a CPU group; otherwise instance_count is left null, and not compared with the stack's config.

Every tau(b) read is checked here as the simulator would (1 µs to 60 s, not falling as b grows), each refusal
naming the file and line the value came from.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from platform_config.latency_profile import MAX_PROFILE_SECONDS, MIN_TAU_SECONDS, input_text
from platform_config.paths import display_path
from triton_platform.args.excerpts import excerpt
from triton_platform.args.input_files import InputKind

EXPORT_FILE = InputKind("profiler export", 16 * 1024 * 1024)
"""A perf_analyzer or Model Analyzer CSV holds a row per measured point (tens to thousands of rows of under 300
characters): 16 MiB is far above any export, and keeps a wrong file from being read whole into memory."""

MAX_ERRORS = 20
"""Problems listed in one refusal; the rest are counted."""

PA_COMPUTE = ("Server Compute Input", "Server Compute Infer", "Server Compute Output")
PA_OVERHEAD = ("Client Send", "Network+Server Send/Recv", "Client Recv")
PA_FORMAT = (
    "expected perf_analyzer's CSV export (-f FILE) of a --concurrency-range run: a header starting "
    f"Concurrency,Inferences/Second and naming {', '.join(PA_COMPUTE + PA_OVERHEAD)}, then a row per concurrency "
    "in microseconds"
)
MA_COMPUTE = ("Server Compute Input time (ms)", "Server Compute Infer time (ms)", "Server Compute Output time (ms)")
MA_THROUGHPUT = "Throughput (infer/sec)"
MA_FORMAT = (
    "expected Model Analyzer's results/metrics-model-inference.csv: a header naming Model, Batch, Concurrency and "
    f"either {', '.join(MA_COMPUTE)} or {MA_THROUGHPUT}"
)


class Problems:
    """Every problem found in the files, raised at once as one ValueError."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def add(self, message: str) -> None:
        self.found.append(message)

    def raise_any(self) -> None:
        if self.found:
            shown = self.found[:MAX_ERRORS]
            more = len(self.found) - len(shown)
            raise ValueError("\n".join(shown) + (f"\n... and {more} more" if more else ""))


def _table(path: Path, expected: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """A CSV's header and its non-blank rows with their line numbers; ValueError naming the file if unreadable."""
    where = display_path(path)
    # utf-8-sig: a spreadsheet's CSV starts with a byte-order mark. newline="": csv reads line ends itself.
    text = input_text(path, EXPORT_FILE, "it", expected, encoding="utf-8-sig", newline="")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        rows = [(reader.line_num, row) for row in reader if any(field.strip() for field in row)]
    except csv.Error as err:
        raise ValueError(f"{where}:{reader.line_num}: not CSV ({err}); {expected}") from None
    if not header:
        raise ValueError(f"{where}:1: no header; {expected}")
    names = [field.strip() for field in header]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        # csv gives each cell by position; a second column of one name would be read in place of the first.
        raise ValueError(f"{where}:1: the header names {', '.join(map(excerpt, twice))} twice; {expected}")
    return names, rows


def _number(text: str, where: str, column: str, problems: Problems) -> float | None:
    """A finite number >= 0 of a cell, else None with the problem added."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        problems.add(f"{where}: {column} is {excerpt(text)}; expected a finite number >= 0")
        return None
    return value


def _cells(
    header: list[str], row: list[str], where: str, columns: Sequence[str], problems: Problems
) -> dict[str, float] | None:
    """The row's numbers in `columns`, or None (the problems added) where it has the wrong width or a bad cell."""
    if len(row) != len(header):
        problems.add(f"{where}: {len(row)} fields; expected {len(header)}, one for each column of the header")
        return None
    values = {column: _number(row[header.index(column)], where, column, problems) for column in columns}
    if any(value is None for value in values.values()):
        return None
    return {column: float(value or 0.0) for column, value in values.items()}


def _missing(header: list[str], columns: Sequence[str], where: str, expected: str, problems: Problems) -> bool:
    absent = [column for column in columns if column not in header]
    if absent:
        problems.add(f"{where}:1: the header has no {', '.join(absent)}; {expected}")
    return bool(absent)


def _profile(model: str, kind: str, files: list[Path], tau: dict[int, float], overhead: float | None) -> dict[str, Any]:
    sources = [display_path(path) for path in files]
    return {
        "model": model,
        "measured": f"imported {datetime.now(UTC):%Y-%m-%d %H:%M} UTC from {kind} {', '.join(sources)}",
        "source": {"kind": kind, "from": sources},
        "triton_version": None,
        "gpu": None,
        "config_sha256": None,
        "config": None,
        "tau_seconds": {str(size): tau[size] for size in sorted(tau)},
        **({"request_overhead_percentiles_seconds": [overhead]} if overhead is not None else {}),
    }


def perf_analyzer(runs: Sequence[tuple[int, Path]], model: str) -> dict[str, Any]:
    """A profile from perf_analyzer CSV exports, each with the batch size (`-b`) it ran at."""
    problems = Problems()
    tau: dict[int, float] = {}
    origin: dict[int, str] = {}
    overhead: dict[int, float] = {}
    seen: dict[Path, int] = {}
    for batch, path in runs:
        where = display_path(path)
        if batch in tau:
            problems.add(f"{where}: a second run at batch size {batch}; expected one file per batch size")
            continue
        same = seen.setdefault(path.resolve(), batch)
        if same != batch:
            problems.add(
                f"{where}: given for batch sizes {same} and {batch}; expected each batch size's own run, exported "
                "to its own file (perf_analyzer -b SIZE -f FILE)"
            )
            continue
        header, rows = _table(path, PA_FORMAT)
        if header[0] == "Request Rate":
            problems.add(
                f"{where}:1: perf_analyzer ran with --request-rate-range; {PA_FORMAT} (a request-rate run "
                "does not say how many requests were outstanding)"
            )
            continue
        if header[0] != "Concurrency":
            problems.add(f"{where}:1: the header starts {excerpt(header[0])}; {PA_FORMAT}")
            continue
        if _missing(header, PA_COMPUTE + PA_OVERHEAD, where, PA_FORMAT, problems):
            continue
        single = None
        for line, row in rows:
            cells = _cells(header, row, f"{where}:{line}", ("Concurrency", *PA_COMPUTE, *PA_OVERHEAD), problems)
            if cells is not None and cells["Concurrency"] == 1:
                if single is not None:
                    problems.add(f"{where}:{line}: a second row at Concurrency 1 (the first at line {single[0]})")
                single = (line, cells)
        if single is None:
            problems.add(
                f"{where}: no row at Concurrency 1, the only one whose executions are all of batch size {batch}; "
                "run perf_analyzer with --concurrency-range 1 (or 1:N)"
            )
            continue
        line, cells = single
        seconds = sum(cells[column] for column in PA_COMPUTE) / 1e6
        if seconds <= 0:
            problems.add(f"{where}:{line}: the server's compute time is 0 µs; expected a measured execution")
            continue
        tau[batch] = seconds
        origin[batch] = f"{where}:{line}"
        overhead[batch] = sum(cells[column] for column in PA_OVERHEAD) / 1e6
    _check_tau(tau, origin, problems)
    problems.raise_any()
    return _profile(model, "perf_analyzer", [path for _, path in runs], tau, overhead[min(overhead)])


INSTANCE_KINDS = ("GPU", "CPU", "MODEL", "AUTO")
"""The kinds Model Analyzer writes in its Instance Group column: Triton's KIND_* without the prefix."""
INSTANCE_FORMAT = (
    f"expected COUNT:KIND parts joined by ' + ' (KIND one of {', '.join(INSTANCE_KINDS)}), e.g. 1:GPU or 2:GPU + 1:CPU"
)


def _instances(text: str, where: str, problems: Problems) -> int | None:
    """The instance count per device of Model Analyzer's Instance Group (`1:GPU`, `2:GPU + 1:CPU`): the CPU
    groups' count when every group is a CPU group, else None. A GPU count is the total over the model's GPUs
    (count x GPUs, model_config.py `_get_instance_groups`), which does not say the count per GPU."""
    total = 0
    known = True
    for part in text.split("+"):
        count, _, kind = part.strip().partition(":")
        if not count.isdecimal() or kind not in INSTANCE_KINDS:
            problems.add(f"{where}: Instance Group is {excerpt(text)}; {INSTANCE_FORMAT}")
            return None
        if int(count) == 0:
            problems.add(
                f"{where}: Instance Group is {excerpt(text)}: a group of 0 instances; each COUNT is at least 1"
            )
            return None
        total += int(count)
        known = known and kind == "CPU"
    return total if known else None


def _check_tau(tau: dict[int, float], origin: dict[int, str], problems: Problems) -> None:
    """tau(b) as the simulator takes it (platform_config/latency_profile.py `_tau`), each problem naming the row
    (`origin`, FILE:LINE) its value came from rather than the profile's keys, which the user never wrote."""
    for size in sorted(tau):
        if not MIN_TAU_SECONDS <= tau[size] <= MAX_PROFILE_SECONDS:
            problems.add(
                f"{origin[size]}: tau({size}) = {tau[size]:g} s is outside {MIN_TAU_SECONDS:g} to "
                f"{MAX_PROFILE_SECONDS:g} s; expected one batch's seconds on one model instance"
            )
    sizes = sorted(tau)
    for smaller, larger in itertools.pairwise(sizes):
        if tau[larger] < tau[smaller]:
            problems.add(
                f"{origin[larger]}: tau({larger}) = {tau[larger]:g} s is below tau({smaller}) = {tau[smaller]:g} s "
                f"of {origin[smaller]}; expected seconds that do not fall as the batch grows"
            )


def _chosen_config(models: list[tuple[int, dict[str, str]]], where: str, chosen: str | None) -> str | None:
    """The model config variant the profile is taken from: `chosen`, or the only one the file has."""
    variants = sorted({row.get("Model Config Path", "") for _, row in models})
    if chosen is None and len(variants) > 1:
        raise ValueError(
            f"{where}: the model's rows come from {len(variants)} config variants ({', '.join(variants)}); "
            "choose one with --model-config NAME"
        )
    if chosen is not None and chosen not in variants:
        raise ValueError(f"{where}: no config variant {excerpt(chosen)}; the file has {', '.join(variants)}")
    return chosen if chosen is not None else variants[0]


def _named_rows(path: Path, header: list[str], rows: list[tuple[int, list[str]]]) -> list[tuple[int, dict[str, str]]]:
    """Model Analyzer's rows as {column: value}, after its header is checked; every row of the wrong width refused."""
    where = display_path(path)
    problems = Problems()
    _missing(header, ("Model", "Batch", "Concurrency"), where, MA_FORMAT, problems)
    if not all(column in header for column in MA_COMPUTE) and MA_THROUGHPUT not in header:
        problems.add(f"{where}:1: the header has neither {', '.join(MA_COMPUTE)} nor {MA_THROUGHPUT}; {MA_FORMAT}")
    problems.raise_any()
    named = []
    for line, row in rows:
        if len(row) != len(header):
            problems.add(
                f"{where}:{line}: {len(row)} fields; expected {len(header)}, one for each column of the header"
            )
        else:
            named.append((line, dict(zip(header, (field.strip() for field in row), strict=True))))
    problems.raise_any()
    return named


def _config_columns(row: dict[str, str], at: str, config: dict[str, Any], problems: Problems) -> None:
    """Model Analyzer's Max Batch Size and Instance Group columns, where the export has them, into `config`."""
    if row.get("Max Batch Size"):
        size = _number(row["Max Batch Size"], at, "Max Batch Size", problems)
        if size is not None and not size.is_integer():
            problems.add(f"{at}: Max Batch Size is {excerpt(row['Max Batch Size'])}; expected a whole number")
            size = None
        config["max_batch_size"] = int(size) if size is not None else None
    if row.get("Instance Group"):
        config["instance_count"] = _instances(row["Instance Group"], at, problems)


def model_analyzer(path: Path, model: str, model_config: str | None = None) -> dict[str, Any]:
    """A profile from Model Analyzer's metrics-model-inference.csv, of one model and config variant."""
    where = display_path(path)
    header, rows = _table(path, MA_FORMAT)
    named = _named_rows(path, header, rows)
    ours = [(line, row) for line, row in named if row["Model"] == model]
    if not ours:
        found = sorted({row["Model"] for _, row in named})
        raise ValueError(
            f"{where}: no rows of model {model!r}; the file has {', '.join(map(repr, found)) or 'no rows'}"
        )
    variant = _chosen_config(ours, where, model_config)
    computed = all(column in header for column in MA_COMPUTE)
    columns = ("Batch", "Concurrency", *(MA_COMPUTE if computed else (MA_THROUGHPUT,)))
    problems = Problems()
    tau: dict[int, float] = {}
    origin: dict[int, str] = {}
    config: dict[str, Any] = {"max_batch_size": None, "instance_count": None, "backend": None}
    for line, row in ours:
        if row.get("Model Config Path", "") != variant:
            continue
        at = f"{where}:{line}"
        cells = _cells(header, [row[column] for column in header], at, columns, problems)
        _config_columns(row, at, config, problems)
        if cells is None or cells["Concurrency"] != 1:
            continue
        batch = cells["Batch"]
        if batch < 1 or batch != int(batch):
            problems.add(f"{at}: Batch is {excerpt(row['Batch'])}; expected a batch size, an integer >= 1")
        elif int(batch) in tau:
            problems.add(f"{at}: a second row at Batch {int(batch)}, Concurrency 1; expected one")
        else:
            tau[int(batch)] = (
                sum(cells[column] for column in MA_COMPUTE) / 1e3
                if computed
                else batch / max(cells[MA_THROUGHPUT], 1e-300)
            )
            origin[int(batch)] = at
    _check_tau(tau, origin, problems)
    problems.raise_any()
    if not tau:
        raise ValueError(
            f"{where}: no row of model {model!r} (config {variant}) at Concurrency 1, the only ones whose "
            "executions hold exactly the row's Batch; profile with concurrency 1 among the concurrencies"
        )
    profile = _profile(model, "model_analyzer", [path], tau, None)
    profile["source"]["model_config"] = variant
    profile["config"] = config
    return profile
