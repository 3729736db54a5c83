"""Facts the components own and the policy pack keeps a copy of.

The pack runs in its own virtualenv (policy/.venv: pulumi-policy, PyYAML), without the components' dependencies
(pulumi-kubernetes, pydantic, tritonclient), which importing the component package would bring along. So it
spells these out itself, and this test holds each copy to its owner.
"""

from __future__ import annotations

from policy import resource
from triton_platform.kube.namespace import ENVIRONMENT_LABEL, PROJECT, platform_labels
from triton_platform.kube.policy_exceptions import EXCEPTIONS_ANNOTATION, exception_annotations
from triton_platform.serving.serving_context import APP_NAME


def test_the_policy_pack_reads_what_the_components_write() -> None:
    assert (resource.PROJECT, resource.ENVIRONMENT_LABEL) == (PROJECT, ENVIRONMENT_LABEL)
    assert platform_labels("dev")["app.kubernetes.io/part-of"] == resource.PROJECT
    assert platform_labels("dev")[resource.ENVIRONMENT_LABEL] == "dev"
    assert resource.EXCEPTIONS_ANNOTATION == EXCEPTIONS_ANNOTATION
    assert list(exception_annotations({"host-path": "why"})) == [resource.EXCEPTIONS_ANNOTATION]
    assert resource.TRITON_NAME == APP_NAME
