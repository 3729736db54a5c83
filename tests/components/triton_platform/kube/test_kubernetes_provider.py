"""The Kubernetes provider from plain arguments: whether it deploys is its own argument, checked before it exists."""

from __future__ import annotations

import pulumi
import pytest

from tests.support.mocks import install, pulumi_test
from triton_platform.kube.kubernetes_provider import (
    KubernetesProviderArgs,
    KubernetesTarget,
    create_provider,
    kubernetes_target,
)

PROVIDER = "pulumi:providers:kubernetes"


def test_a_render_dir_renders_and_a_context_deploys() -> None:
    assert kubernetes_target("p", {"render_dir": "out/dev"}) == KubernetesTarget("p", "out/dev", None, None)
    assert not kubernetes_target("p", {"render_dir": "out/dev"}).deploys
    deploy = kubernetes_target("p", {"context": "prod-eu", "kubeconfig": "/etc/kube/prod"})
    assert deploy == KubernetesTarget("p", None, "prod-eu", "/etc/kube/prod")
    assert deploy.deploys


@pytest.mark.parametrize(
    ("args", "problems"),
    [
        ({}, ["args.context: required unless args.render_dir is set (the active kubeconfig context is never used)"]),
        (
            {"context": "", "kubeconfig": "/k"},
            ["args.context: required unless args.render_dir is set (the active kubeconfig context is never used)"],
        ),
        (
            {"render_dir": "out", "context": "prod", "kubeconfig": "/k"},
            [
                "args.context: 'prod' cannot be combined with args.render_dir 'out'; a provider renders or deploys, "
                "not both",
                "args.kubeconfig: '/k' applies only when deploying; args.render_dir is set",
            ],
        ),
    ],
)
def test_a_provider_needs_exactly_one_target(args: KubernetesProviderArgs, problems: list[str]) -> None:
    with pytest.raises(ValueError, match=r"^Kubernetes provider dev-kubernetes: ") as caught:
        kubernetes_target("dev-kubernetes", args)
    assert str(caught.value).splitlines() == [f"Kubernetes provider dev-kubernetes: {p}" for p in problems]


@pytest.mark.parametrize(
    ("args", "inputs"),
    [
        ({"render_dir": "out/dev"}, {"renderYamlToDirectory": "out/dev"}),
        (
            {"context": "prod-eu", "kubeconfig": "/etc/kube/prod"},
            {"context": "prod-eu", "kubeconfig": "/etc/kube/prod"},
        ),
    ],
)
def test_the_provider_gets_its_target_and_nothing_else(args: KubernetesProviderArgs, inputs: dict[str, str]) -> None:
    mocks = install()

    @pulumi_test
    def run() -> pulumi.Output[str]:
        provider = create_provider(kubernetes_target("p", args))

        def check(urn: str) -> str:
            assert mocks.registered(PROVIDER) == {"p": inputs}
            return urn

        return provider.urn.apply(check)

    run()


def test_a_context_or_kubeconfig_with_a_control_character_is_refused_shown_escaped() -> None:
    with pytest.raises(ValueError, match=r"^Kubernetes provider p: ") as caught:
        kubernetes_target("p", {"context": "prod\r\x1b[2K", "kubeconfig": "/etc/kube/prod\n"})
    assert str(caught.value).splitlines() == [
        r"Kubernetes provider p: args.context: 'prod\r\x1b[2K' holds the control character '\r' at position 4; give "
        "printable text: no newline, carriage return, escape sequence or other control character",
        r"Kubernetes provider p: args.kubeconfig: '/etc/kube/prod\n' holds the control character '\n' at position "
        "14; give printable text: no newline, carriage return, escape sequence or other control character",
    ]
