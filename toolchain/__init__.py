"""The offline Pulumi toolchain's parts of our own: the random provider, and the entry points of the kubernetes
provider and the YAML language host (scripts/pulumi-toolchain builds the rest from upstream sources)."""
