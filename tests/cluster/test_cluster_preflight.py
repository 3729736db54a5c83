"""The deploy-mode pre-flight: an unknown or unreachable kubeconfig context stops the run with one message."""

from __future__ import annotations

import http.server
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triton_platform.kube.kubernetes_provider import (
    MAX_VERSION_BYTES,
    KubeconfigError,
    KubernetesTarget,
    ServerVersionError,
    kubernetes_target,
    server_version,
    unreachable_reason,
)


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n"
        "contexts: [{name: prod, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
    )
    return path


def target(path: Path, context: str = "prod") -> KubernetesTarget:
    return kubernetes_target("prod-kubernetes", {"context": context, "kubeconfig": str(path)})


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)


def test_a_listening_api_server_passes(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert unreachable_reason(target(kubeconfig(tmp_path / "k", f"https://127.0.0.1:{port}"))) is None


def test_a_closed_port_names_the_context_and_the_server(tmp_path: Path) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    reason = unreachable_reason(target(kubeconfig(tmp_path / "k", f"https://127.0.0.1:{port}")))
    assert reason == (
        f"the API server of kubeconfig context 'prod', https://127.0.0.1:{port}, cannot be reached: Connection refused"
    )


def test_an_unknown_context_lists_the_known_ones(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "k", "https://127.0.0.1:6443")
    assert unreachable_reason(target(path, "staging")) == (
        f"kubeconfig context 'staging' is not defined in {path} (contexts there: prod)"
    )
    missing = tmp_path / "absent"
    assert unreachable_reason(target(missing, "staging")) == (
        f"kubeconfig context 'staging' is not defined in {missing} (contexts there: none)"
    )


def test_a_proxy_leaves_the_check_to_the_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    # Port 9 (discard) is closed here: without the proxy the check would report it.
    assert unreachable_reason(target(kubeconfig(tmp_path / "k", "https://127.0.0.1:9"))) is None


class _Answers(http.server.BaseHTTPRequestHandler):
    """A fake API server's /version: `status`, then `body` in pieces `pause` seconds apart."""

    status, body, pause = 200, b"", 0.0

    def do_GET(self) -> None:
        self.send_response(self.status)
        self.end_headers()
        for start in range(0, len(self.body), 1024):
            self.wfile.write(self.body[start : start + 1024])
            self.wfile.flush()
            time.sleep(self.pause)

    def log_message(self, *_: object) -> None:
        pass


@contextmanager
def api_server(
    tmp_path: Path, body: bytes, status: int = 200, pause: float = 0.0
) -> Iterator[tuple[KubernetesTarget, str]]:
    """A target whose context's server is the fake one, and its URL."""
    handler = type("Handler", (_Answers,), {"status": status, "body": body, "pause": pause})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        yield target(kubeconfig(tmp_path / "k", url)), url
    finally:
        server.shutdown()
        server.server_close()


def test_the_api_servers_version_is_read_without_a_vendor_suffix(tmp_path: Path) -> None:
    with api_server(tmp_path, b'{"major": "1", "minor": "33+", "gitVersion": "v1.33.2-eks-1a2b3c4"}') as (at, _):
        assert server_version(at) == "v1.33.2"


@pytest.mark.parametrize(
    ("body", "status", "pause", "why"),
    [
        (b"{}", 403, 0.0, " answers /version with HTTP 403 (anonymous access refused?)"),
        (b"<html>", 200, 0.0, ": its /version answer is not JSON"),
        (b'{"gitVersion": "1.33"}', 200, 0.0, ": its /version answer has no gitVersion v1.MINOR.PATCH; got '1.33'"),
        (b'["v1.33.2"]', 200, 0.0, ": its /version answer has no gitVersion v1.MINOR.PATCH; got None"),
        (b" " * (MAX_VERSION_BYTES + 1), 200, 0.0, f": its /version answer exceeds {MAX_VERSION_BYTES} bytes"),
        (b" " * 8192 + b"{}", 200, 0.2, ": its /version answer took over 0.5 s"),
    ],
    ids=["refused", "not-json", "odd-version", "not-an-object", "huge", "trickling"],
)
def test_an_api_server_answering_oddly_is_named(
    tmp_path: Path, body: bytes, status: int, pause: float, why: str
) -> None:
    with api_server(tmp_path, body, status, pause) as (at, url), pytest.raises(ServerVersionError) as raised:
        server_version(at, deadline=0.5)
    assert str(raised.value) == f"the API server of kubeconfig context 'prod' ({url}){why}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=2048))
def test_any_answer_is_a_version_or_named(tmp_path: Path, body: bytes) -> None:
    with api_server(tmp_path, body) as (at, url):
        try:
            outcome = server_version(at)
        except ServerVersionError as err:
            outcome = str(err)
    assert outcome.startswith(("v1.", f"the API server of kubeconfig context 'prod' ({url})")), outcome


def test_a_servers_credentials_are_never_shown(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]  # bound, not listening: refused
    at = target(kubeconfig(tmp_path / "k", f"https://admin:hunter2@127.0.0.1:{port}"))
    reason = unreachable_reason(at)
    with pytest.raises(ServerVersionError) as raised:
        server_version(at, deadline=2)
    for text in (str(reason), str(raised.value)):
        assert "hunter2" not in text
        assert "https://admin:***@127.0.0.1" in text, text


@pytest.mark.parametrize(
    ("document", "why"),
    [
        ("[1, 2]\n", "kubeconfig context 'prod' is not defined in"),
        ("clusters: 5\ncontexts: 'x'\n", "kubeconfig context 'prod' is not defined in"),
        ("contexts: [{name: prod, context: x}]\n", "kubeconfig context 'prod' names no API server address"),
        (
            "clusters: [{name: c, cluster: {server: 'https://[::1'}}]\ncontexts: [{name: prod, context: {cluster: c}}]\n",
            "kubeconfig context 'prod' names no API server address (cluster server 'https://[::1'",
        ),
        ("clusters: [\n", "cannot be read: "),
    ],
    ids=["a-list", "odd-shapes", "context-not-a-mapping", "bad-ipv6", "not-yaml"],
)
def test_a_kubeconfig_of_another_shape_is_named(tmp_path: Path, document: str, why: str) -> None:
    path = tmp_path / "k"
    path.write_text(document)
    with pytest.raises(KubeconfigError, match=re.escape(why)):
        server_version(target(path))
    assert unreachable_reason(target(path)) is not None


def test_a_certificate_authority_that_is_none_is_named(tmp_path: Path) -> None:
    path = tmp_path / "k"
    path.write_text(
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', certificate-authority-data: 'not base64!!'}}]\n"
        "contexts: [{name: prod, context: {cluster: c}}]\n"
    )
    with pytest.raises(ServerVersionError) as raised:
        server_version(target(path))
    assert str(raised.value) == (
        "the API server of kubeconfig context 'prod' (https://127.0.0.1:1): the kubeconfig's certificate-authority "
        "cannot be used: Error"
    )


def test_a_server_trickling_its_headers_is_cut_at_the_deadline(tmp_path: Path) -> None:
    """A byte every half second never trips a socket's per-read timeout: the deadline bounds the whole answer."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def trickle() -> None:
            connection, _ = listener.accept()
            with connection:
                for byte in b"HTTP/1.1 200 OK\r\nX: " + b"y" * 100:
                    connection.sendall(bytes([byte]))
                    time.sleep(0.5)

        threading.Thread(target=trickle, daemon=True).start()
        # Raised only where the whole request outlived the deadline (the reader thread still waiting).
        with pytest.raises(ServerVersionError, match=r"its /version answer took over 1 s"):
            server_version(target(kubeconfig(tmp_path / "k", f"http://127.0.0.1:{port}")), deadline=1)
