"""The deploy-mode pre-flight: an unknown or unreachable kubeconfig context stops the run with one message."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from triton_platform.kubernetes_provider import KubernetesTarget, kubernetes_target, unreachable_reason


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
