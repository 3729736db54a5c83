"""Reading, rendering and addressing a Triton model repository: what TritonServing needs of it."""
