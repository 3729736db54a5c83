"""The offline Pulumi toolchain: versions, and the plugins the Go module proxy does not serve."""
