"""The component package's provider (Pulumi docs, "Build a component"): Pulumi's Python language host runs
this file for `pulumi package add`, `package get-schema` and any program that uses the package, and the SDK
infers the schema from the components' type annotations."""

from pulumi.provider.experimental import component_provider_host

from triton_platform import COMPONENTS, __version__
from triton_platform.args.component_types import PACKAGE

if __name__ == "__main__":
    component_provider_host(list(COMPONENTS), name=PACKAGE, version=__version__)
