"""offline/server_answer.py: a server's answer read within a deadline and a size bound, as data of a known shape;
and `stackctl profile --url` against a stand-in Triton that answers oddly: named with the URL and the field, exit
2, never a traceback."""

from __future__ import annotations

import ast
import http.server
import io
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offline.server_answer import MAX_EVENT_BYTES, Document, ServerAnswerError, read, stream_events
from platform_config.paths import PROJECT_ROOT
from simulator import profiling
from simulator.profiling import Server, Stats, served_config
from stackctl.main import main


class Hostile(http.server.ThreadingHTTPServer):
    """A stand-in HTTP server on loopback: each path answers a body, slowly (`trickle` seconds a byte) or huge
    (`huge` bytes of zeros); others 404."""

    routes: dict[str, bytes]
    trickle: float = 0.0
    huge: int = 0


class Handler(http.server.BaseHTTPRequestHandler):
    server: Hostile

    def do_GET(self) -> None:
        if self.server.huge and self.path == "/huge":
            self.send_response(200)
            self.end_headers()
            block = b"0" * 65536
            try:
                for _ in range(self.server.huge // len(block)):
                    self.wfile.write(block)
            except OSError:
                pass  # the reader hung up, as it should
            return
        body = self.server.routes.get(self.path)
        self.send_response(404 if body is None else 200)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        try:
            for byte in body or b"":
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(self.server.trickle)
        except OSError:
            pass

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    server = Hostile(("127.0.0.1", 0), Handler)
    server.routes = {}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def url_of(server: Hostile, path: str = "") -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def test_a_trickling_answer_is_cut_at_the_deadline(hostile: Hostile) -> None:
    hostile.routes["/v2"] = json.dumps({"version": "2.51.0"}).encode() * 50
    hostile.trickle = 0.01
    started = time.monotonic()
    with pytest.raises(ServerAnswerError) as caught:
        read(url_of(hostile, "/v2"), "the server metadata", deadline=0.3)
    assert time.monotonic() - started < 5
    assert str(caught.value) == (
        f"{url_of(hostile, '/v2')}: the server metadata did not arrive whole within 0.3 s; expected Triton's "
        "answer in milliseconds"
    )


def test_a_huge_answer_is_refused_without_being_read_whole(hostile: Hostile) -> None:
    hostile.huge = 64 * 1024 * 1024
    with pytest.raises(ServerAnswerError) as caught:
        read(url_of(hostile, "/huge"), "Triton's metrics", limit=1024 * 1024)
    assert str(caught.value) == (
        f"{url_of(hostile, '/huge')}: Triton's metrics is larger than 1 MiB; expected Triton's answer, far smaller: "
        "is this Triton?"
    )


def exactly(message: str) -> str:
    """pytest.raises' match for the whole of `message`."""
    return f"^{re.escape(message)}$"


def test_an_answer_that_is_not_json_is_refused_naming_the_url(hostile: Hostile) -> None:
    hostile.routes["/v2"] = b"<html>a proxy's page</html>"
    expected = f"{url_of(hostile)}/v2: the server metadata is not JSON (Expecting value); expected Triton's HTTP API"
    with pytest.raises(ValueError, match=exactly(expected)):
        Server(url_of(hostile)).version()


def test_a_model_without_statistics_is_refused_naming_it(hostile: Hostile) -> None:
    hostile.routes["/v2/models/m/stats"] = json.dumps({"model_stats": []}).encode()
    expected = f"{url_of(hostile)}: no statistics of model 'm'; expected Triton's statistics API"
    with pytest.raises(ValueError, match=exactly(expected)):
        Server(url_of(hostile)).stats("m")


def test_statistics_without_batch_executions_are_refused(hostile: Hostile, monkeypatch: pytest.MonkeyPatch) -> None:
    hostile.routes.update(
        {
            "/v2/models/m/config": json.dumps({"max_batch_size": 1}).encode(),
            "/v2/models/m": json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]}).encode(),
            # Statistics that never count an execution, whatever the load.
            "/v2/models/m/stats": json.dumps({"model_stats": [STATS]}).encode(),
        }
    )
    monkeypatch.setattr(profiling, "closed_loop", lambda *args: [0.001])
    expected = f"{url_of(hostile)}: model 'm''s statistics report no batch executions; nothing to fit"
    with pytest.raises(ValueError, match=exactly(expected)):
        profiling.measure(Server(url_of(hostile)), "m", 0.1)


STATS = {
    "version": "1",
    "inference_stats": {"success": {"count": 4, "ns": 4000}},
    "batch_stats": [
        {"batch_size": 2, **{k: {"count": 3, "ns": 100} for k in ("compute_input", "compute_infer", "compute_output")}}
    ],
}
ODD_STATS = {
    "a list where an object belongs": (
        {"model_stats": [["1"]]},
        "the model's statistics: model_stats[0] is ['1']; expected an object",
    ),
    "a missing field": (
        {"model_stats": [{"version": "1", "inference_stats": {}}]},
        "the model's statistics: model_stats[0]: inference_stats.success is missing; expected an object",
    ),
    "a word where a number belongs": (
        {"model_stats": [{**STATS, "inference_stats": {"success": {"count": "many", "ns": 1}}}]},
        "the model's statistics: model_stats[0]: inference_stats.success: count is 'many'; expected a whole number",
    ),
    "a version that is no number": (
        {"model_stats": [{**STATS, "version": "one"}]},
        "the model's statistics: model_stats[0]: version is 'one'; expected digits",
    ),
    "a negative count": (
        {"model_stats": [{**STATS, "inference_stats": {"success": {"count": -1, "ns": 1}}}]},
        "the model's statistics: model_stats[0]: inference_stats.success: count is -1; expected a whole number from 0",
    ),
    "a bool for a number": (
        {"model_stats": [{**STATS, "batch_stats": [{**STATS["batch_stats"][0], "batch_size": True}]}]},  # type: ignore[index]
        "the model's statistics: model_stats[0]: batch_stats[0]: batch_size is True; expected a whole number",
    ),
}


@pytest.mark.parametrize("case", ODD_STATS)
def test_odd_statistics_are_named_with_the_url_and_the_field(hostile: Hostile, case: str) -> None:
    answer, message = ODD_STATS[case]
    hostile.routes["/v2/models/m/stats"] = json.dumps(answer).encode()
    with pytest.raises(ServerAnswerError) as caught:
        Server(url_of(hostile)).stats("m")
    assert str(caught.value) == f"{url_of(hostile, '/v2/models/m/stats')}: {message}"


def test_good_statistics_are_read() -> None:
    stats = Stats.of(Document("u", "w", STATS))
    assert stats == Stats(4, 4000, {2: (3, 300)})


def test_a_max_batch_size_that_would_drive_millions_of_connections_is_refused() -> None:
    config = Document("http://h/v2/models/m/config", "model 'm''s config", {"max_batch_size": 10**9})
    with pytest.raises(ServerAnswerError) as caught:
        served_config(config)
    assert str(caught.value) == (
        "http://h/v2/models/m/config: model 'm''s config: max_batch_size is 1000000000; expected a whole number from "
        "0 up to 4096"
    )
    zero = Document("u", "w", {"instance_group": [{"count": 0}]})
    with pytest.raises(ServerAnswerError, match=r"instance_group\[0\]: count is 0; expected a whole number from 1"):
        served_config(zero)
    assert served_config(Document("u", "w", {"max_batch_size": 8, "instance_group": [{"count": 2}, {}]})) == {
        "max_batch_size": 8,
        "instance_group": [{"count": 2}, {"count": 1}],
        "platform": "",
        "backend": "",
    }


def test_the_servers_text_is_checked_before_it_is_recorded_or_printed(
    hostile: Hostile, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    hostile.routes["/v2"] = json.dumps({"version": "2.51\n::error::owned\x1b[2J"}).encode()
    hostile.routes["/metrics"] = b""
    argv = ["profile", "--model", "m", "--url", url_of(hostile), "--metrics-url", url_of(hostile, "/metrics")]
    code = main([*argv, "--output", str(tmp_path / "m.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        f"stackctl profile: {url_of(hostile)}/v2: the server metadata: version is '2.51\\n::error::owned\\x1b[2J'; "
        "expected Triton's version such as 2.51.0\n"
    )
    assert "\x1b" not in err
    assert not (tmp_path / "m.json").exists()


KEYS = [
    *("version", "inference_stats", "success", "count", "ns", "batch_stats", "batch_size"),
    *("compute_input", "compute_infer", "compute_output", "max_batch_size", "instance_group", "platform", "backend"),
]
"""The keys the readers look for, so that generated answers reach every field."""


def refusal(reader: Any, value: object) -> str | None:
    try:
        reader(Document("u", "w", value))
    except ServerAnswerError as err:
        return str(err)
    return None


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
        max_leaves=16,
    )
)
def test_any_json_answer_is_read_or_refused_by_name(value: object) -> None:
    """Statistics and configs of any shape: read, or a ServerAnswerError naming where; never another exception."""
    for reader in (Stats.of, served_config):
        message = refusal(reader, value)
        assert message is None or message.startswith("u: w")


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64))
def test_any_bytes_are_json_or_refused_by_name(body: bytes) -> None:
    message = refusal(lambda document: Document.parse("u", "w", body), None)
    assert message is None or message.startswith("u: w is not JSON (")


NETWORK_MODULES = (
    "urllib.request",
    "http.client",
    "socket",
    "requests",
    "httpx",
    "aiohttp",
    "ssl",
    "urllib3",
    "distributed",
)
"""Ways a module could read a server's answer itself."""
READER = "offline/server_answer.py"
OTHER_PEERS = {
    "planner/search.py": "distributed, for `plan --engine dask --scheduler`: the user's own scheduler, which runs the "
    "job; its answers are the candidates' results, which the planner reads as it reads a local run's",
    "components/triton_platform/kube/kubernetes_provider.py": "the deploy context's API server: a TCP connect, to stop at "
    "once when it cannot be reached, and GET /version, read as server_answer reads (a deadline, a size cap, one typed "
    "field, its text excerpted) but in the components, which import none of the tools",
}
"""Modules that talk to a peer other than a server whose answers a command reads, each with why (once each)."""


def _network_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        found += [
            f"{name} at line {node.lineno}"
            for name in names
            if any(name == module or name.startswith(f"{module}.") for module in NETWORK_MODULES)
        ]
    return found


class Stream(io.BytesIO):
    """A server's streamed answer as urlopen returns it, from bytes."""


def streamed(body: bytes) -> Any:
    return lambda request, timeout: Stream(body)


def test_a_stream_yields_each_events_payload_as_it_comes() -> None:
    body = b'data: {"text_output": "t0"}\n\n: a comment\ndata: {"text_output": "t1"}\r\n\r\n'
    events = list(stream_events("http://h/s", "the stream", b"{}", opener=streamed(body)))
    assert [payload for _, payload in events] == [b'{"text_output": "t0"}', b'{"text_output": "t1"}']
    assert events[0][0] <= events[1][0]


def test_a_stream_line_too_long_or_too_late_is_refused_naming_the_url() -> None:
    long_line = b"data: " + b"x" * MAX_EVENT_BYTES + b"\n"
    with pytest.raises(ServerAnswerError, match=r"^http://h/s: the stream sent a line longer than 1024 KiB; expected"):
        list(stream_events("http://h/s", "the stream", b"{}", opener=streamed(long_line)))
    with pytest.raises(ServerAnswerError, match=r"^http://h/s: the stream did not end within -1 s$"):
        list(stream_events("http://h/s", "the stream", b"{}", deadline=-1, opener=streamed(b"data: {}\n")))


def test_a_stream_refused_or_unreachable_is_named(hostile: Hostile) -> None:
    # The stand-in answers GET only: http.server refuses a POST with 501.
    with pytest.raises(ServerAnswerError, match=r"^http://127\.0\.0\.1:\d+/s: HTTP 501 reading the stream \("):
        list(stream_events(url_of(hostile, "/s"), "the stream", b"{}"))
    with pytest.raises(ServerAnswerError, match=r"^http://127.0.0.1:9/s: cannot read the stream \(.*is Triton running"):
        list(stream_events("http://127.0.0.1:9/s", "the stream", b"{}"))


def test_no_command_reads_a_server_around_the_reader() -> None:
    """Every module of the commands and the libraries they run reads a server only through offline/server_answer.py
    (deadline, size bound, typed fields, escaped text): a new network client anywhere else fails here, named."""
    found = {}
    folders = ("stackctl", "preview", "offline", "simulator", "planner", "platform_config", "program", "components")
    for folder in folders:
        for path in sorted((PROJECT_ROOT / folder).glob("**/*.py")):
            relative = str(path.relative_to(PROJECT_ROOT))
            if relative != READER and (imports := _network_imports(path)):
                found[relative] = imports
    assert set(found) == set(OTHER_PEERS), found
    assert "urllib.request at line" in " ".join(_network_imports(PROJECT_ROOT / READER))


def test_the_network_check_names_what_it_finds(tmp_path: Path) -> None:
    script = tmp_path / "command.py"
    script.write_text("import json, socket\nfrom http.client import HTTPConnection\nimport urllib.parse\n")
    assert _network_imports(script) == ["socket at line 1", "http.client at line 2"]
