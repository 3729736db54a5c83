"""The Triton model repository: read the source, render per-stack configs, publish what Triton sees."""
