"""A real tritonserver on a CPU-only machine, for tests and benchmarks.

The `nvidia-pytriton` wheel ships tritonserver 2.51.0 with the Python backend.
It has no onnxruntime backend, so `backends/onnxruntime/model.py` provides one
as a Python-based backend under that name: models keep `platform:
"onnxruntime_onnx"` and load unchanged, through Triton's real scheduler,
dynamic batcher and metrics.
"""
