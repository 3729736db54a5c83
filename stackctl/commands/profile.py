"""`stackctl profile`: a model's latency profile (tau(b) and the request overhead) for `simulate` and `plan`,
measured against a running Triton by URL, or imported from perf_analyzer's or Model Analyzer's results; for a
decoupled (streaming) model by URL, its stream profile (prefill and decode step times) for the stream simulator."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stackctl.command import Command, Exit

if TYPE_CHECKING:
    from offline.output_file import OutputFile
    from platform_config.loader import StackConfig

MAX_SECONDS = 600.0
"""The longest load a concurrency level gets: a profile needs seconds, and ten minutes a level is already hours."""
DEFAULT_SECONDS = 3.0
"""--seconds when left out of a measurement."""
MAX_MEASURED_SEQUENCES = 1024
"""The most sequences a stream profile measures in flight: each is a connection and a thread of this command."""


def seconds_argument(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not 0.1 <= seconds <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"expected seconds from 0.1 to {MAX_SECONDS:g}, got {value!r}")
    return seconds


def max_sequences_argument(value: str) -> int:
    if not value.isdecimal() or not 1 <= int(value) <= MAX_MEASURED_SEQUENCES:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to {MAX_MEASURED_SEQUENCES}, got {value!r}")
    return int(value)


def perf_analyzer_argument(value: str) -> tuple[int, Path]:
    """`[BATCH:]FILE`: a perf_analyzer CSV and the batch size (`-b`) it ran at, 1 when left out."""
    batch, colon, path = value.partition(":")
    if not colon or not batch.isdecimal():
        return 1, Path(value)
    if not 1 <= int(batch) <= 1_000_000 or not path:
        raise argparse.ArgumentTypeError(f"expected [BATCH:]FILE with BATCH an integer >= 1, got {value!r}")
    return int(batch), Path(path)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, metavar="NAME", help="the model profiled, as Triton names it")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--url", metavar="URL", help="measure against this running Triton's HTTP endpoint, e.g. http://host:8000"
    )
    source.add_argument(
        "--import-perf-analyzer",
        type=perf_analyzer_argument,
        action="append",
        metavar="[BATCH:]FILE",
        help="import perf_analyzer's CSV export (-f FILE) of a run with -b BATCH (default 1); repeatable, one "
        "file per batch size",
    )
    source.add_argument(
        "--import-model-analyzer", metavar="FILE", help="import Model Analyzer's results/metrics-model-inference.csv"
    )
    stack = parser.add_mutually_exclusive_group()
    stack.add_argument("--stack", help="the stack whose rendered config the model ran with: reads its config")
    stack.add_argument("--config", metavar="FILE", help="as --stack, a stack YAML file anywhere")
    parser.add_argument(
        "--output",
        metavar="FILE",
        help="where the profile is written (default bench/results/profiles/MODEL.json, where simulate looks)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an --output file that is not a profile of this model (never a link or a folder)",
    )
    parser.add_argument(
        "--metrics-url", metavar="URL", help="--url's metrics endpoint (default: http:// its host, port 8002, /metrics)"
    )
    parser.add_argument(
        "--gpu",
        metavar="NAME",
        help="the GPU's name to record, e.g. from nvidia-smi --query-gpu=name (Triton's metrics name GPUs by UUID)",
    )
    parser.add_argument(
        "--seconds",
        type=seconds_argument,
        default=None,
        help=f"--url: load per concurrency level (default {DEFAULT_SECONDS:g})",
    )
    parser.add_argument(
        "--max-sequences",
        type=max_sequences_argument,
        default=None,
        metavar="N",
        help="--url of a decoupled (streaming) model: the most sequences its engine runs at once (vLLM's "
        "max_num_seqs); the step time is measured with 1, 2, 4 ... N in flight",
    )
    parser.add_argument(
        "--model-config",
        metavar="NAME",
        help="--import-model-analyzer: the config variant (Model Config Path column) when the file has several",
    )
    parser.set_defaults(model_repo=None)


def _stack_config(args: argparse.Namespace) -> tuple[StackConfig | None, str | None, dict[str, Any] | None]:
    """The stack named, the config.pbtxt it renders for --model and that config's tau(b) fields; Nones without."""
    if not (args.stack or args.config):
        return None, None, None
    from google.protobuf.json_format import MessageToDict  # noqa: PLC0415

    from platform_config.latency_profile import tau_config  # noqa: PLC0415
    from stackctl.command import stack_with_models  # noqa: PLC0415

    loaded = stack_with_models(args)
    assert loaded.rendered is not None  # nothing is deferred without defer_to_esc
    models = loaded.rendered.models
    if args.model not in models:
        raise ValueError(
            f"model {args.model!r} is not served by {loaded.source}; it serves {', '.join(sorted(models))}"
        )
    rendered = models[args.model]
    return loaded, rendered.text, tau_config(MessageToDict(rendered.config, preserving_proto_field_name=True))


def _output(args: argparse.Namespace) -> OutputFile:
    """Where the profile goes, checked before anything is measured (offline/output_file.py)."""
    from offline.output_file import OutputFile  # noqa: PLC0415
    from simulator.profiling import is_profile_of  # noqa: PLC0415

    if args.output:
        path = Path(args.output)
    else:
        from simulator.scenario import PROFILES  # noqa: PLC0415

        if not re.fullmatch(r"[A-Za-z0-9_.-]+", args.model) or args.model.startswith("."):
            raise ValueError(f"--model {args.model!r} is no file name; give --output FILE")
        path = PROFILES / f"{args.model}.json"
    output = OutputFile(
        path, f"a latency profile of model {args.model!r}", lambda data: is_profile_of(data, args.model), args.force
    )
    output.check()
    return output


def run(args: argparse.Namespace) -> Exit:
    from platform_config.latency_profile import config_differences  # noqa: PLC0415
    from platform_config.paths import display_path  # noqa: PLC0415
    from simulator import profile_import, profiling  # noqa: PLC0415
    from simulator.scenario import profile_of  # noqa: PLC0415

    if args.url is None and (args.metrics_url or args.seconds is not None):
        raise ValueError("--metrics-url and --seconds belong to a measurement (--url); an import leaves them out")
    if args.model_config and not args.import_model_analyzer:
        raise ValueError("--model-config chooses among Model Analyzer's config variants: give --import-model-analyzer")
    if args.max_sequences is not None:
        if args.url is None:
            raise ValueError(
                "--max-sequences belongs to a streaming model's measurement (--url); an import leaves it out"
            )
        return _stream_profile(args)
    out = _output(args)
    loaded, text, stack_fields = _stack_config(args)
    if args.url is not None:
        from simulator.stream_profiling import is_decoupled  # noqa: PLC0415

        server = profiling.Server(args.url, args.metrics_url)
        server.version()  # a server that does not answer is named by its first address, as any measurement's
        if is_decoupled(server, args.model):
            raise ValueError(
                f"model {args.model!r} at {args.url} is decoupled (it streams): measure its stream profile with "
                "--max-sequences N, the most sequences its engine runs at once (vLLM's max_num_seqs)"
            )
        seconds = DEFAULT_SECONDS if args.seconds is None else args.seconds
        profile = profiling.measured_profile(server, args.model, seconds, gpu_name=args.gpu, rendered_config=text)
        where = args.url
    elif args.import_perf_analyzer:
        profile = profile_import.perf_analyzer(args.import_perf_analyzer, args.model)
        where = ", ".join(display_path(path) for _, path in args.import_perf_analyzer)
    else:
        profile = profile_import.model_analyzer(Path(args.import_model_analyzer), args.model, args.model_config)
        where = display_path(Path(args.import_model_analyzer))
    if args.url is None:
        profile["gpu"] = args.gpu
        if text is not None and stack_fields is not None:
            # An import says little of the config it ran on (Model Analyzer's few columns): the rest is the stack's.
            profile["config_sha256"] = profiling.config_sha256(text)
            recorded = {key: value for key, value in (profile["config"] or {}).items() if value is not None}
            profile["config"] = {**stack_fields, **recorded}
    tau = profile_of(profile, where)
    if loaded is not None and stack_fields is not None:
        differences = config_differences(profile["config"], stack_fields)
        if differences:
            print(
                f"stackctl profile: warning: the profiled config differs from {loaded.source}'s rendered config of "
                f"{args.model!r} ({'; '.join(differences)}; profile -> stack); simulate and plan will say so",
                file=sys.stderr,
            )
    out.write(profiling.profile_bytes(profile))
    overhead = tau.overhead_percentiles
    middle = overhead[len(overhead) // 2]
    print(
        f"{display_path(out.path)}: model {args.model!r} from {where}; GPU {profile['gpu'] or 'not recorded'}, Triton "
        f"{profile['triton_version'] or 'not recorded'}; overhead p50 {middle * 1000:.3f} ms; tau(b) ms: "
        + ", ".join(f"{b}: {t * 1000:.3f}" for b, t in zip(tau.sizes, tau.seconds, strict=True))
    )
    return Exit.PASSED


def _stream_profile(args: argparse.Namespace) -> Exit:
    """A decoupled model's stream profile (simulator/stream_profiling.py), written where --output says, else beside
    the latency profiles as MODEL.stream.json; the output is checked before the server is asked anything."""
    from offline.output_file import OutputFile  # noqa: PLC0415
    from platform_config.paths import display_path  # noqa: PLC0415
    from platform_config.stream_profile import stream_fields  # noqa: PLC0415
    from simulator.profiling import Server, profile_bytes  # noqa: PLC0415
    from simulator.scenario import PROFILES  # noqa: PLC0415
    from simulator.stream_profiling import is_decoupled, is_stream_profile_of, measured_stream_profile  # noqa: PLC0415

    if args.stack or args.config or args.gpu or args.metrics_url:
        raise ValueError(
            "a stream profile (--max-sequences) is measured on the client and records no GPU or stack config; "
            "leave out --stack, --config, --gpu and --metrics-url"
        )
    if args.output:
        path = Path(args.output)
    elif re.fullmatch(r"[A-Za-z0-9_.-]+", args.model) and not args.model.startswith("."):
        path = PROFILES / f"{args.model}.stream.json"
    else:
        raise ValueError(f"--model {args.model!r} is no file name; give --output FILE")
    out = OutputFile(
        path,
        f"a stream profile of model {args.model!r}",
        lambda data: is_stream_profile_of(data, args.model),
        args.force,
    )
    out.check()
    server = Server(args.url)
    server.version()  # a server that does not answer is named by its first address, as any measurement's
    if not is_decoupled(server, args.model):
        raise ValueError(
            f"model {args.model!r} at {args.url} is not decoupled (its config has no model_transaction_policy "
            "{ decoupled: true }): it answers each request once; leave out --max-sequences for its latency profile"
        )
    seconds = DEFAULT_SECONDS if args.seconds is None else args.seconds
    profile = measured_stream_profile(server, args.model, args.max_sequences, seconds)
    fields = stream_fields(profile, args.url)
    out.write(profile_bytes(profile))
    steps = ", ".join(f"{c}: {t * 1000:.1f}" for c, t in zip(fields.concurrencies, fields.step_seconds, strict=True))
    print(
        f"{display_path(out.path)}: stream profile of model {args.model!r} from {args.url}; Triton "
        f"{profile['triton_version']}; prefill {fields.prefill_seconds * 1000:.1f} ms; step ms by sequences in "
        f"flight: {steps}"
    )
    return Exit.PASSED


COMMAND = Command(
    "profile",
    "measure a model's latency profile against a running Triton, or import perf_analyzer's or Model Analyzer's",
    add_arguments,
    run,
    "[profiling.md](profiling.md)",
    description="Measure a model's tau(b) and request overhead against a running Triton (--url), driving the load "
    "with bench/loadgen and reading Triton's statistics API, or import them from a perf_analyzer CSV or a Model "
    "Analyzer results CSV; writes the profile `stackctl simulate` and `plan` read. For a decoupled (streaming) "
    "model by URL, measures its stream profile instead (prefill and decode step times by sequences in flight, on "
    "the client over generate_stream; give --max-sequences) and writes MODEL.stream.json. Exits 0 when written, 2 "
    "on a bad input (`stackctl profile: ...` naming the file, line, key or value and what is allowed).",
)
