"""`stackctl profile`'s imports (perf_analyzer's CSV, Model Analyzer's results), each refusal with its message, and
what `simulate` and `plan` make of a profile: another model's refused, a differing config warned of.

The fixtures under tests/fixtures/profiles (its README.md) are in the tools' own formats: perf_analyzer's `-f`
export as its report_writer.cc writes it (perf_analyzer_b1.csv is the docs' example; b8 has the columns later
releases add), Model Analyzer's metrics-model-inference.csv with its default columns (model_analyzer_inference.csv is
Model Analyzer's own sample, tests/common/single-model-ckpt/golden-metrics-model-inference.csv of
triton-inference-server/model_analyzer, Instance Group written `1:GPU`) and with the perf_server_compute_* ones.
The measurement against the real tritonserver is tests/cluster/test_profile_real.py; the server-side refusals here run
against a stand-in HTTP server on loopback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import planner.plan
import platform_config.types
import simulator.scenario
from platform_config.latency_profile import config_differences, tau_config
from platform_config.paths import PROJECT_ROOT
from simulator import profile_import, profiling
from simulator.profiling import Server, load_input
from stackctl.main import main

FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "profiles"
PA_B1 = FIXTURES / "perf_analyzer_b1.csv"
PA_B8 = FIXTURES / "perf_analyzer_b8.csv"
MA = FIXTURES / "model_analyzer_inference.csv"
MA_COMPUTE = FIXTURES / "model_analyzer_inference_compute.csv"
DEV = PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml"
PA_FORMAT = (
    "expected perf_analyzer's CSV export (-f FILE) of a --concurrency-range run: a header starting "
    "Concurrency,Inferences/Second and naming Server Compute Input, Server Compute Infer, Server Compute Output, "
    "Client Send, Network+Server Send/Recv, Client Recv, then a row per concurrency in microseconds"
)
MA_FORMAT = (
    "expected Model Analyzer's results/metrics-model-inference.csv: a header naming Model, Batch, Concurrency and "
    "either Server Compute Input time (ms), Server Compute Infer time (ms), Server Compute Output time (ms) or "
    "Throughput (infer/sec)"
)
HEADER = PA_B1.read_text(encoding="utf-8").splitlines()[0]


def profile(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["profile", *argv])
    out, err = capsys.readouterr()
    return code, out, err.strip()


def written(path: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return result


def test_perf_analyzer_runs_at_two_batch_sizes_give_tau_at_both(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "classifier.json"
    argv = ["--model", "classifier", "--import-perf-analyzer", str(PA_B1), "--import-perf-analyzer", f"8:{PA_B8}"]
    code, _, err = profile(capsys, *argv, "--output", str(out), "--stack", "dev", "--gpu", "NVIDIA L4")
    assert (code, err) == (0, "")
    result = written(out)
    # The Concurrency 1 rows: compute input + infer + output, and client send + network + client recv, in µs.
    assert result["tau_seconds"] == {"1": pytest.approx(0.012006), "8": pytest.approx(0.022856)}
    assert result["request_overhead_percentiles_seconds"] == [pytest.approx(0.002373)]
    relative = [str(path.relative_to(PROJECT_ROOT)) for path in (PA_B1, PA_B8)]
    assert result["source"] == {"kind": "perf_analyzer", "from": relative}
    assert result["gpu"] == "NVIDIA L4"
    # The stack's rendered config, which the import says nothing of.
    assert result["config"] == {"max_batch_size": 8, "instance_count": 1, "backend": "onnxruntime"}
    assert isinstance(result["config_sha256"], str)
    assert len(result["config_sha256"]) == 64


def test_model_analyzer_results_give_tau_of_the_chosen_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "p.json"
    argv = ["--model", "add_sub", "--import-model-analyzer", str(MA), "--model-config", "add_sub_config_default"]
    code, _, err = profile(capsys, *argv, "--output", str(out))
    assert (code, err) == (0, "")
    result = written(out)
    # No compute columns: Batch / throughput at concurrency 1 (lines 5 and 4), the rows at concurrency 2 not read.
    assert result["tau_seconds"] == {"1": pytest.approx(1 / 2508.0), "2": pytest.approx(2 / 4876.1)}
    # 1:GPU is the count over the GPUs Model Analyzer ran on, which does not say the count per GPU.
    assert result["config"] == {"max_batch_size": 8, "instance_count": None, "backend": None}
    shown = str(MA.relative_to(PROJECT_ROOT))
    assert result["source"] == {"kind": "model_analyzer", "from": [shown], "model_config": "add_sub_config_default"}
    assert "request_overhead_percentiles_seconds" not in result


def test_model_analyzer_compute_columns_are_tau_itself(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    code, _, _ = profile(
        capsys, "--model", "classifier", "--import-model-analyzer", str(MA_COMPUTE), "--output", str(out)
    )
    assert code == 0
    assert written(out)["tau_seconds"] == {
        "1": pytest.approx(0.000442),
        "4": pytest.approx(0.000644),
        "8": pytest.approx(0.000929),
    }


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


ROW = "1,69.2,225,2148,64,206,11781,19,0,13891,18795,19753,21018"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "{f}:1: no header; " + PA_FORMAT),
        (
            HEADER.replace("Concurrency", "Request Rate") + "\n" + ROW + "\n",
            "{f}:1: perf_analyzer ran with --request-rate-range; " + PA_FORMAT + " (a request-rate run does not say "
            "how many requests were outstanding)",
        ),
        ("Batch,x\n1,2\n", "{f}:1: the header starts 'Batch'; " + PA_FORMAT),
        (
            HEADER.replace(",Client Recv", "") + "\n",
            "{f}:1: the header has no Client Recv; " + PA_FORMAT,
        ),
        (
            f"{HEADER}\n{ROW}\n2,87.2,235\n3,84,x,1,1,1,1,1,1,1,1,1,1\n",
            "{f}:3: 3 fields; expected 13, one for each column of the header\n"
            "{f}:4: Client Send is 'x'; expected a finite number >= 0",
        ),
        (
            f"{HEADER}\n{ROW.replace(',206,', ',-1,')}\n",
            "{f}:2: Server Compute Input is '-1'; expected a finite number >= 0\n"
            "{f}: no row at Concurrency 1, the only one whose executions are all of batch size 1; run perf_analyzer "
            "with --concurrency-range 1 (or 1:N)",
        ),
        (f"{HEADER}\n{ROW}\n{ROW}\n", "{f}:3: a second row at Concurrency 1 (the first at line 2)"),
        (
            f"{HEADER}\n1,1,0,0,0,0,0,0,0,0,0,0,0\n",
            "{f}:2: the server's compute time is 0 µs; expected a measured execution",
        ),
        (
            f"{HEADER}\n1,1,0,0,0,0,0.5,0,0,0,0,0,0\n",
            "{f}:2: tau(1) = 5e-07 s is outside 1e-06 to 60 s; expected one batch's seconds on one model instance",
        ),
        (
            f"{HEADER}\n{'x' * 200_000}\n",
            "{f}:2: not CSV (field larger than field limit (131072)); " + PA_FORMAT,
        ),
        ("\xff", "{f}: not UTF-8 text (byte 0); " + PA_FORMAT),
    ],
    ids=[
        "empty",
        "request-rate",
        "header",
        "column",
        "width-and-cell",
        "negative",
        "twice",
        "zero",
        "below-1us",
        "not-csv",
        "binary",
    ],
)
def test_a_perf_analyzer_csv_that_does_not_parse_is_refused_naming_file_and_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "pa.csv"
    path.write_bytes(content.encode("latin-1") if content == "\xff" else content.encode())
    out = tmp_path / "p.json"
    code, _, err = profile(capsys, "--model", "m", "--import-perf-analyzer", str(path), "--output", str(out))
    assert code == 2
    assert err == "stackctl profile: " + expected.format(f=path)
    assert not out.exists()


def test_two_perf_analyzer_runs_at_one_batch_size_and_a_missing_file_are_refused_at_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "nope.csv"
    argv = ["--import-perf-analyzer", str(PA_B1), "--import-perf-analyzer", f"1:{PA_B8}"]
    code, _, err = profile(capsys, "--model", "m", *argv, "--output", str(tmp_path / "p.json"))
    assert (code, err) == (
        2,
        f"stackctl profile: {PA_B8.relative_to(PROJECT_ROOT)}: a second run at batch size 1; expected one file per "
        "batch size",
    )
    # One export given for two batch sizes: tau(8) would be tau(1).
    argv = ["--import-perf-analyzer", str(PA_B1), "--import-perf-analyzer", f"8:{PA_B1}"]
    code, _, err = profile(capsys, "--model", "m", *argv, "--output", str(tmp_path / "p.json"))
    assert (code, err) == (
        2,
        f"stackctl profile: {PA_B1.relative_to(PROJECT_ROOT)}: given for batch sizes 1 and 8; expected each batch "
        "size's own run, exported to its own file (perf_analyzer -b SIZE -f FILE)",
    )
    code, _, err = profile(capsys, "--model", "m", "--import-perf-analyzer", str(missing))
    assert (code, err) == (
        2,
        f"stackctl profile: {missing}: cannot read it (No such file or directory); {PA_FORMAT}",
    )


def test_a_falling_tau_is_refused_as_the_simulator_would(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    faster = write(tmp_path, "b8.csv", f"{HEADER}\n1,1,1,1,1,1,100,1,1,1,1,1,1\n")
    argv = ["--import-perf-analyzer", str(PA_B1), "--import-perf-analyzer", f"8:{faster}"]
    code, _, err = profile(capsys, "--model", "m", *argv, "--output", str(tmp_path / "p.json"))
    assert (code, err) == (
        2,
        f"stackctl profile: {faster}:2: tau(8) = 0.000102 s is below tau(1) = 0.012006 s of "
        f"{PA_B1.relative_to(PROJECT_ROOT)}:2; expected seconds that do not fall as the batch grows",
    )


def test_a_falling_tau_in_model_analyzers_own_sample_is_refused_naming_its_rows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # add_sub_config_1's Batch / throughput at concurrency 1: 2 / 4804.5 (line 8) below 1 / 2186.0 (line 9).
    argv = ["--import-model-analyzer", str(MA), "--model-config", "add_sub_config_1"]
    code, _, err = profile(capsys, "--model", "add_sub", *argv, "--output", str(tmp_path / "p.json"))
    shown = MA.relative_to(PROJECT_ROOT)
    assert (code, err) == (
        2,
        f"stackctl profile: {shown}:8: tau(2) = 0.000416276 s is below tau(1) = 0.000457457 s of {shown}:9; "
        "expected seconds that do not fall as the batch grows",
    )
    assert not (tmp_path / "p.json").exists()


MA_HEADER = MA.read_text(encoding="utf-8").splitlines()[0]
INSTANCE_FORMAT = (
    "expected COUNT:KIND parts joined by ' + ' (KIND one of GPU, CPU, MODEL, AUTO), e.g. 1:GPU or 2:GPU + 1:CPU"
)


@pytest.mark.parametrize(
    ("group", "count"),
    [("2:CPU", 2), ("1:GPU", None), ("4:GPU", None), ("2:GPU + 1:CPU", None), ("1:MODEL", None)],
)
def test_model_analyzers_instance_group_gives_the_count_only_where_it_is_per_device(
    tmp_path: Path, group: str, count: int | None
) -> None:
    # A GPU group's count is Model Analyzer's total over the GPUs (count x GPUs): not Triton's count per GPU.
    path = write(tmp_path, "ma.csv", f"{MA_HEADER}\nclassifier,1,1,c,{group},8,Yes,1000,1\n")
    result = profile_import.model_analyzer(path, "classifier")
    assert result["config"] == {"max_batch_size": 8, "instance_count": count, "backend": None}


@pytest.mark.parametrize(
    ("argv", "content", "expected"),
    [
        (
            [],
            "Model,Batch\n",
            "{f}:1: the header has no Concurrency; " + MA_FORMAT + "\n{f}:1: the header has neither Server Compute "
            "Input time (ms), Server Compute Infer time (ms), Server Compute Output time (ms) nor Throughput "
            "(infer/sec); " + MA_FORMAT,
        ),
        (
            [],
            "Model,Batch,Concurrency\n",
            "{f}:1: the header has neither Server Compute Input time (ms), Server Compute Infer time (ms), Server "
            "Compute Output time (ms) nor Throughput (infer/sec); " + MA_FORMAT,
        ),
        (
            [],
            f"{MA_HEADER}\nclassifier,1\n",
            "{f}:2: 2 fields; expected 9, one for each column of the header",
        ),
        (
            [],
            f"{MA_HEADER}\nranker,1,1,r,1:GPU,8,Yes,10,1\n",
            "{f}: no rows of model 'classifier'; the file has 'ranker'",
        ),
        (
            [],
            None,
            "{f}: the model's rows come from 5 config variants (add_sub_config_0, add_sub_config_1, add_sub_config_2, "
            "add_sub_config_3, add_sub_config_default); choose one with --model-config NAME",
        ),
        (
            ["--model-config", "nope"],
            None,
            "{f}: no config variant 'nope'; the file has add_sub_config_0, add_sub_config_1, add_sub_config_2, "
            "add_sub_config_3, add_sub_config_default",
        ),
        (
            [],
            # 1/GPU: the form of Model Analyzer's releases before Aug 2022.
            f"{MA_HEADER}\nclassifier,1,1,c,1/GPU,8,Yes,x,1\nclassifier,0,1,c,1:GPU + 1:TPU,8,Yes,10,1\n",
            "{f}:2: Throughput (infer/sec) is 'x'; expected a finite number >= 0\n"
            "{f}:2: Instance Group is '1/GPU'; " + INSTANCE_FORMAT + "\n"
            "{f}:3: Instance Group is '1:GPU + 1:TPU'; " + INSTANCE_FORMAT + "\n"
            "{f}:3: Batch is '0'; expected a batch size, an integer >= 1",
        ),
        (
            [],
            f"{MA_HEADER}\nclassifier,1,1,c,1:GPU,8,Yes,10,1\nclassifier,1,1,c,1:GPU,8,Yes,11,1\n",
            "{f}:3: a second row at Batch 1, Concurrency 1; expected one",
        ),
        (
            [],
            f"{MA_HEADER},Batch\nclassifier,1,1,c,1:GPU,8,Yes,10,1,2\n",
            "{f}:1: the header names 'Batch' twice; " + MA_FORMAT,
        ),
        (
            [],
            f"{MA_HEADER}\nclassifier,1,1,c,0:CPU,8.5,Yes,10,1\n",
            "{f}:2: Max Batch Size is '8.5'; expected a whole number\n"
            "{f}:2: Instance Group is '0:CPU': a group of 0 instances; each COUNT is at least 1",
        ),
        (
            [],
            f"{MA_HEADER}\nclassifier,1,2,c,1:GPU,8,Yes,10,1\n",
            "{f}: no row of model 'classifier' (config c) at Concurrency 1, the only ones whose executions hold "
            "exactly the row's Batch; profile with concurrency 1 among the concurrencies",
        ),
    ],
    ids=[
        *("columns", "no-times", "width", "other-model", "variants", "unknown-variant", "cells", "twice"),
        *("header-twice", "fractional-batch-zero-instances", "no-c1"),
    ],
)
def test_a_model_analyzer_csv_that_does_not_parse_is_refused_naming_file_and_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], content: str | None, expected: str
) -> None:
    path = MA if content is None else write(tmp_path, "ma.csv", content)
    shown = path.relative_to(PROJECT_ROOT) if content is None else path
    model = "add_sub" if content is None else "classifier"  # Model Analyzer's sample profiles add_sub
    code, _, err = profile(
        capsys, "--model", model, "--import-model-analyzer", str(path), *argv, "--output", str(tmp_path / "p")
    )
    assert code == 2
    assert err == "stackctl profile: " + expected.format(f=shown)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--url", "http://127.0.0.1:8000/v2", "--model", "m"],
            "--url 'http://127.0.0.1:8000/v2' is not a Triton HTTP endpoint; expected http://HOST:PORT (Triton's "
            "--http-port, 8000 by default), without a path, query or fragment",
        ),
        (
            ["--url", "http://127.0.0.1:8000?verbose=1", "--model", "m"],
            "--url 'http://127.0.0.1:8000?verbose=1' is not a Triton HTTP endpoint; expected http://HOST:PORT "
            "(Triton's --http-port, 8000 by default), without a path, query or fragment",
        ),
        (
            ["--url", "http://127.0.0.1:eight", "--model", "m"],
            "--url 'http://127.0.0.1:eight' is not a Triton HTTP endpoint; expected http://HOST:PORT (Triton's "
            "--http-port, 8000 by default), without a path, query or fragment",
        ),
        (
            ["--import-model-analyzer", str(MA), "--model", "m", "--metrics-url", "http://x:8002/metrics"],
            "--metrics-url and --seconds belong to a measurement (--url); an import leaves them out",
        ),
        (
            # The default's own value too: what was given is refused, not what differs from the default.
            ["--import-perf-analyzer", str(PA_B1), "--model", "m", "--seconds", "3"],
            "--metrics-url and --seconds belong to a measurement (--url); an import leaves them out",
        ),
        (
            ["--import-perf-analyzer", str(PA_B1), "--model", "m", "--model-config", "x"],
            "--model-config chooses among Model Analyzer's config variants: give --import-model-analyzer",
        ),
        (
            ["--import-perf-analyzer", str(PA_B1), "--model", "nope", "--stack", "dev"],
            "model 'nope' is not served by stacks/Pulumi.dev.yaml; it serves classifier, pipeline, preprocess, ranker",
        ),
        (
            ["--import-perf-analyzer", str(PA_B1), "--model", "../x"],
            "--model '../x' is no file name; give --output FILE",
        ),
    ],
    ids=["url-path", "url-query", "url-port", "metrics-url", "seconds", "model-config", "not-served", "file-name"],
)
def test_options_that_do_not_go_together_are_refused(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    code, _, err = profile(capsys, *argv)
    assert (code, err) == (2, "stackctl profile: " + expected)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--import-perf-analyzer", "0:x.csv"],
            "argument --import-perf-analyzer: expected [BATCH:]FILE with BATCH an integer >= 1, got '0:x.csv'",
        ),
        (
            ["--url", "http://h:8000", "--seconds", "0.05"],
            "argument --seconds: expected seconds from 0.1 to 600, got '0.05'",
        ),
        (
            ["--url", "http://h:8000", "--seconds", "601"],
            "argument --seconds: expected seconds from 0.1 to 600, got '601'",
        ),
        (
            ["--url", "http://h:8000", "--seconds", "nan"],
            "argument --seconds: expected seconds from 0.1 to 600, got 'nan'",
        ),
        (
            ["--url", "http://h:8000", "--seconds", "3s"],
            "argument --seconds: expected seconds from 0.1 to 600, got '3s'",
        ),
    ],
    ids=["batch-prefix", "seconds-short", "seconds-long", "seconds-nan", "seconds-unit"],
)
def test_an_argument_out_of_range_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["profile", "--model", "m", *argv])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().endswith(f"stackctl profile: error: {expected}")


def test_a_server_that_does_not_answer_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # Port 9 (discard) on loopback: nothing listens on a test machine.
    code, _, err = profile(capsys, "--url", "http://127.0.0.1:9", "--model", "m", "--output", str(tmp_path / "p"))
    assert code == 2
    assert err.startswith("stackctl profile: http://127.0.0.1:9/v2: cannot read the server metadata (")
    assert err.endswith("); is Triton running there?")


def test_metrics_that_cannot_be_read_are_named_with_the_way_around() -> None:
    server = Server("http://127.0.0.1:9", "http://127.0.0.1:9/metrics")
    with pytest.raises(ValueError, match=r"^http://127.0.0.1:9/metrics: cannot read Triton's metrics \("):
        server.gpu_uuids()


def test_a_model_the_load_generator_cannot_feed_is_refused_naming_its_inputs() -> None:
    metadata = {"inputs": [{"name": "ids", "datatype": "INT64", "shape": [-1, 16]}]}
    with pytest.raises(ValueError, match=r"^model 'bert' takes ") as err:
        load_input(metadata, "bert")
    assert str(err.value) == (
        "model 'bert' takes 'ids INT64 [-1, 16]'; the load generator (bench/loadgen) sends one FP32 input of shape "
        "[-1, WIDTH] (a batching model, one item a request): measure this model with perf_analyzer and import its "
        "CSV (--import-perf-analyzer)"
    )
    assert load_input({"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 128]}]}, "m") == ("x", 128)


def test_the_gpu_is_read_from_the_gpu_uuid_label_of_tritons_gpu_series(monkeypatch: pytest.MonkeyPatch) -> None:
    # Triton's metrics as core src/metrics.cc labels them: gpu_uuid only, no name.
    text = (
        "# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)\n# TYPE nv_gpu_utilization gauge\n"
        'nv_gpu_utilization{gpu_uuid="GPU-0b3b1c1e-aaaa"} 0.5\n'
        'nv_gpu_memory_total_bytes{gpu_uuid="GPU-0b3b1c1e-aaaa"} 8e+10\n'
        'nv_inference_count{model="m",version="1"} 3\n'
        # A label that is no GPU UUID (an escape sequence, a workflow command) is recorded and printed nowhere.
        'nv_gpu_power_usage{gpu_uuid="\x1b[2J::error::x"} 1\n'
    )
    server = Server("http://127.0.0.1:9")
    assert server.metrics_url == "http://127.0.0.1:8002/metrics"
    monkeypatch.setattr(profiling, "read", lambda url, what: text.encode())
    assert server.gpu_uuids() == ["GPU-0b3b1c1e-aaaa"]


@pytest.mark.parametrize(
    ("url", "metrics"),
    [
        ("http://[::1]:8000", "http://[::1]:8002/metrics"),  # an IPv6 literal keeps its brackets
        ("http://[fe80::1%25eth0]:8000/", "http://[fe80::1%25eth0]:8002/metrics"),
        ("https://triton.example:8443", "http://triton.example:8002/metrics"),  # Triton's metrics are plain HTTP
        ("http://triton.example", "http://triton.example:8002/metrics"),
    ],
)
def test_the_default_metrics_endpoint_is_the_urls_host_on_port_8002_over_http(url: str, metrics: str) -> None:
    assert Server(url).metrics_url == metrics


def test_the_config_fields_that_change_tau_normalize_platform_and_count_instances() -> None:
    server_side = {
        "max_batch_size": 8,
        "backend": "onnxruntime",
        "platform": "onnxruntime_onnx",
        "instance_group": [{"count": 2, "kind": "KIND_GPU", "gpus": [0]}],
    }
    rendered = {"max_batch_size": 8, "platform": "onnxruntime_onnx", "instance_group": [{"count": 2}]}
    assert (
        tau_config(server_side)
        == tau_config(rendered)
        == {
            "max_batch_size": 8,
            "instance_count": 2,
            "backend": "onnxruntime",
        }
    )
    assert tau_config({"backend": "python"}) == {"max_batch_size": 0, "instance_count": 1, "backend": "python"}
    recorded = {"max_batch_size": 32, "instance_count": None, "backend": "onnxruntime"}
    assert config_differences(recorded, tau_config(rendered)) == ["max_batch_size 32 -> 8"]
    assert config_differences(None, tau_config(rendered)) == []


def dev_with_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: dict[str, object]) -> Path:
    """The dev stack simulating classifier with a profile in `tmp_path`, which stands for the project root."""
    monkeypatch.setattr(platform_config.types, "PROJECT_ROOT", tmp_path)
    monkeypatch.setattr(simulator.scenario, "PROJECT_ROOT", tmp_path)
    (tmp_path / "profile.json").write_text(json.dumps(content), encoding="utf-8")
    text = DEV.read_text(encoding="utf-8")
    anchor = "  triton-platform:scaling:\n"
    assert anchor in text
    stack = tmp_path / "Pulumi.dev.yaml"
    line = '    simulation: {profile: "profile.json", model: classifier}\n'
    stack.write_text(text.replace(anchor, anchor + line), encoding="utf-8")
    return stack


SIMULATE = ["--profile", "step", "--hours", "0.02", "--peak-rps", "20", "--no-plot"]


def test_a_profile_of_another_model_is_refused_naming_both(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = dev_with_profile(tmp_path, monkeypatch, {"model": "ranker", "tau_seconds": {"1": 0.001}})
    code = main(["simulate", "--config", str(stack), *SIMULATE, "--out", str(tmp_path / "out")])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"stackctl simulate: {tmp_path / 'profile.json'} is the latency profile of model 'ranker', not of model "
        "'classifier' that the simulation runs; measure 'classifier' (stackctl profile --model classifier, "
        "docs/profiling.md) or point scaling.simulation.profile at its profile"
    )


def test_an_imported_profile_runs_in_simulate_and_a_config_that_differs_is_warned_of(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "imported.json"
    assert (
        main(["profile", "--model", "classifier", "--import-model-analyzer", str(MA_COMPUTE), "--output", str(out)])
        == 0
    )
    imported = written(out)
    # Measured with max batch 32 and two instances, where dev renders 8 and 1.
    imported["config"] = {"max_batch_size": 32, "instance_count": 2, "backend": "onnxruntime"}
    stack = dev_with_profile(tmp_path, monkeypatch, imported)
    capsys.readouterr()
    code = main(["simulate", "--config", str(stack), *SIMULATE, "--out", str(tmp_path / "out")])
    _, err = capsys.readouterr()
    assert code == 0, err
    warning = (
        f"{tmp_path / 'profile.json'} was measured on a config of model 'classifier' that differs from the stack's "
        "rendered config (max_batch_size 32 -> 8; instance_count 2 -> 1); tau(b) may not hold for it: measure again "
        "with stackctl profile (docs/profiling.md)"
    )
    assert err.strip() == f"stackctl simulate: warning: {warning}"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["inputs"]["profile"] == str(tmp_path / "profile.json")

    # plan surfaces it before its search (stopped here: the search itself is tests/planner/test_planner.py's).
    def stop(*args: object, **kwargs: object) -> None:
        raise ValueError("stopped before the search")

    monkeypatch.setattr(planner.plan, "make_plan", stop)
    code = main(["plan", "--config", str(stack), *SIMULATE[:-1], "--out", str(tmp_path / "plan")])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"stackctl plan: warning: {warning}",
        "stackctl plan: stopped before the search",
    ]


def test_a_profile_on_the_stacks_own_config_runs_without_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "imported.json"
    argv = ["--model", "classifier", "--import-perf-analyzer", str(PA_B1), "--stack", "dev", "--output", str(out)]
    assert main(["profile", *argv]) == 0
    stack = dev_with_profile(tmp_path, monkeypatch, written(out))
    capsys.readouterr()
    # A tau(1) of 12 ms fills a 100 ms SLO quickly: the run may miss its SLO (exit 1), but it runs, unwarned.
    code = main(["simulate", "--config", str(stack), *SIMULATE, "--out", str(tmp_path / "out")])
    assert code in (0, 1)
    assert "warning" not in capsys.readouterr().err


def exactly(message: str) -> str:
    """pytest.raises' match for the whole of `message`."""
    return f"^{re.escape(message)}$"


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        (
            "echo 'dial tcp: connection refused' >&2; exit 1",
            "bench/loadgen failed against http://h:8000: 'dial tcp: connection refused'",
        ),
        (
            "echo 'err 0.010 model not ready'",
            "http://h:8000: model 'm' served none of the requests of 2 client(s) in 0.5 s; is the model loaded and "
            "ready?",
        ),
    ],
    ids=["failed", "served-none"],
)
def test_a_load_generator_that_fails_or_is_served_nothing_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, expected: str
) -> None:
    loadgen = tmp_path / "loadgen"
    loadgen.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    loadgen.chmod(0o755)
    monkeypatch.setattr(profiling, "loadgen_binary", lambda: loadgen)
    with pytest.raises(ValueError, match=exactly(expected)):
        profiling.closed_loop("http://h:8000", "m", ("x", 4), 2, 0.5)


PA_HEADER = ",".join(["Concurrency", "Inferences/Second", *profile_import.PA_COMPUTE, *profile_import.PA_OVERHEAD])
CELLS = (
    st.sampled_from(["1", "0", "-1", "1e400", "nan", "12.5", "", "x", '"', "\x00", "\ufeff", "classifier"]) | st.text()
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    head=st.sampled_from([PA_HEADER, MA_HEADER, "Concurrency,Concurrency", "Request Rate,x", ""]) | st.text(),
    rows=st.lists(st.lists(CELLS, min_size=4, max_size=8).map(",".join), max_size=6),
    raw=st.binary(max_size=64),
)
def test_any_csv_is_imported_or_refused_naming_the_file(tmp_path: Path, head: str, rows: list[str], raw: bytes) -> None:
    """Whatever a file holds, each import gives a profile of the model or one ValueError whose every line starts at
    the file."""
    path = tmp_path / "run.csv"
    imported: list[str] = []
    for content in (("\n".join([head, *rows]) + "\n").encode("utf-8", "surrogatepass"), raw):
        path.write_bytes(content)
        readers: list[Callable[[], dict[str, Any]]] = [
            lambda: profile_import.perf_analyzer([(1, path)], "classifier"),
            lambda: profile_import.model_analyzer(path, "classifier"),
        ]
        for read in readers:
            try:
                profile = read()
            except ValueError as err:
                lines = str(err).splitlines()
                assert all(line.startswith((str(path), "... and ")) for line in lines), lines
            else:
                imported.append(profile["model"])
    if imported:
        assert set(imported) == {"classifier"}
