"""`stackctl profile --url` of a decoupled model against a stand-in Triton in this process (an HTTP server on
loopback that answers the server metadata, a model's config and `generate_stream` with a fixed prefill and a fixed
gap between tokens, whatever else is in flight): the measurement, the file it writes, and each refusal with its
message. tests/cluster/test_stream_profile_real.py measures the real server's continuously batching fixture."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from platform_config.stream_profile import read_stream_profile
from simulator.profiling import Server
from simulator.stream_client import request_body
from simulator.stream_profiling import concurrencies, is_stream_profile_of, measured_stream_profile
from stackctl.main import main

PREFILL = 0.03
GAP = 0.01
CONFIGS = {
    "tokens": {"model_transaction_policy": {"decoupled": True}},
    "broken": {"model_transaction_policy": {"decoupled": True}},
    "plain": {"max_batch_size": 8},
}


class StandIn(BaseHTTPRequestHandler):
    def answer(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/v2":
            self.answer(200, {"name": "triton", "version": "2.51.0"})
            return
        model = self.path.removeprefix("/v2/models/").removesuffix("/config")
        self.answer(200, CONFIGS[model]) if model in CONFIGS else self.answer(404, {"error": "no model"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        model = self.path.removeprefix("/v2/models/").removesuffix("/generate_stream")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        time.sleep(PREFILL)
        for index in range(body["max_tokens"]):
            if index:
                time.sleep(GAP)
            event = {"error": "boom"} if model == "broken" else {"text_output": f"t{index}"}
            try:
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
            except ConnectionError:
                return  # the client stops reading at an error event

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_step_time_is_measured_at_powers_of_two_up_to_max_sequences() -> None:
    assert concurrencies(1) == [1]
    assert concurrencies(6) == [1, 2, 4, 6]
    assert concurrencies(8) == [1, 2, 4, 8]


def test_the_prefill_and_each_step_time_are_measured_on_the_client(url: str) -> None:
    profile = measured_stream_profile(Server(url), "tokens", max_sequences=4, seconds=0.1, tokens=4)
    assert (profile["kind"], profile["model"], profile["triton_version"]) == ("stream", "tokens", "2.51.0")
    assert profile["source"] == {"kind": "measured", "from": url}
    assert (profile["max_sequences"], profile["output_tokens"]) == (4, 4)
    # The stand-in's own sleeps, plus loopback HTTP on a busy machine.
    assert PREFILL <= profile["prefill_seconds"] < PREFILL + 0.02
    assert list(profile["step_seconds"]) == ["1", "2", "4"]
    assert all(GAP <= seconds < GAP + 0.01 for seconds in profile["step_seconds"].values())


def test_stackctl_profile_writes_a_stream_profile_for_a_decoupled_model(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tokens.stream.json"
    argv = ["--url", url, "--model", "tokens", "--max-sequences", "2", "--seconds", "0.1", "--output", str(out)]
    assert main(["profile", *argv]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"{out}: stream profile of model 'tokens' from {url}; Triton 2.51.0; prefill ")
    assert "; step ms by sequences in flight: 1: " in printed
    read = read_stream_profile(out)
    assert (read.model, read.concurrencies, read.max_sequences, read.output_tokens) == ("tokens", (1, 2), 2, 16)
    assert is_stream_profile_of(out.read_bytes(), "tokens")
    assert not is_stream_profile_of(out.read_bytes(), "other")
    assert not is_stream_profile_of(b'{"model": "tokens", "tau_seconds": {}}', "tokens")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--model", "tokens"],
            "model 'tokens' at {url} is decoupled (it streams): measure its stream profile with --max-sequences N, "
            "the most sequences its engine runs at once (vLLM's max_num_seqs)",
        ),
        (
            ["--model", "tokens", "--max-sequences", "2", "--gpu", "H100"],
            "a stream profile (--max-sequences) is measured on the client and records no GPU or stack config; leave "
            "out --stack, --config, --gpu and --metrics-url",
        ),
        (
            ["--model", "plain", "--max-sequences", "2"],
            "model 'plain' at {url} is not decoupled (its config has no model_transaction_policy { decoupled: true "
            "}): it answers each request once; leave out --max-sequences for its latency profile",
        ),
        (
            ["--model", "broken", "--max-sequences", "1", "--seconds", "0.1"],
            "{url}/v2/models/broken/generate_stream: the stream sent an error: "
            """'{"error": "boom"}'""",
        ),
    ],
    ids=["no-max-sequences", "gpu", "not-decoupled", "error-event"],
)
def test_each_refusal_is_named(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["profile", "--url", url, *argv, "--output", str(tmp_path / "p.json")]) == 2
    assert capsys.readouterr().err.strip() == "stackctl profile: " + message.replace("{url}", url)
    assert not (tmp_path / "p.json").exists()


def test_max_sequences_out_of_range_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["profile", "--model", "m", "--url", "http://h:8000", "--max-sequences", "0"])
    assert exit_.value.code == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("stackctl profile: error: argument --max-sequences: expected a whole number from 1 to 1024, got '0'")
    )


def test_max_sequences_with_an_import_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["--model", "m", "--import-model-analyzer", "x.csv", "--max-sequences", "2", "--output", str(tmp_path / "p")]
    assert main(["profile", *argv]) == 2
    assert capsys.readouterr().err.strip() == (
        "stackctl profile: --max-sequences belongs to a streaming model's measurement (--url); an import leaves it out"
    )


def test_the_output_is_refused_before_the_server_is_asked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    other = tmp_path / "notes.json"
    other.write_text('{"model": "tokens", "tau_seconds": {"1": 0.001}}', encoding="utf-8")
    # Nothing listens on port 9: asking the server would fail naming it; the output is refused first.
    argv = ["--url", "http://127.0.0.1:9", "--model", "tokens", "--max-sequences", "2", "--output", str(other)]
    assert main(["profile", *argv]) == 2
    assert "holds something other than a stream profile of model 'tokens'" in capsys.readouterr().err


def test_a_request_takes_the_inputs_its_backend_reads() -> None:
    # The fixture and TensorRT-LLM's ensemble take max_tokens as an input; vllm_backend r24.10 reads it from the
    # sampling_parameters JSON string, and streams only when asked.
    assert request_body(16) == b'{"text_input": "hello", "max_tokens": 16}'
    assert json.loads(request_body(16, vllm=True)) == {
        "text_input": "hello",
        "stream": True,
        "sampling_parameters": '{"max_tokens": 16, "ignore_eos": true}',
    }
