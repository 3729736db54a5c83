"""The package's type tokens: `triton-platform:index:<Component>`, as Pulumi's component provider names them.

Stacks deployed before the component package knew each component by a module token of its own
(`triton-platform:gpu:GpuNodePool`, ...); an alias on that token carries them, and Pulumi derives the
children's aliases from their parent's, so no existing resource is replaced or recreated.
"""

from typing import Optional

import pulumi

PACKAGE = "triton-platform"
"""The package's name: the first part of every type token, and the provider's name."""


def type_token(component: str) -> str:
    """The token `component_provider_host` gives a component class: `<package>:index:<class name>`."""
    return f"{PACKAGE}:index:{component}"


def with_former_type(opts: Optional[pulumi.ResourceOptions], former: str) -> pulumi.ResourceOptions:
    """`opts` plus an alias to the type the component had before, so its stacks keep their URNs."""
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=former)]))
