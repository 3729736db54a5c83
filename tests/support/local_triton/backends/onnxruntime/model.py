"""A Python-based Triton backend named `onnxruntime`, running model.onnx with the PyPI onnxruntime.

Only for CPU test machines whose tritonserver lacks the real backend. Each
execute() receives the requests the dynamic batcher grouped and runs them as
one batch, as the real backend does.
"""

import json
import os
from typing import Any

import numpy as np
import onnxruntime
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        path = os.path.join(args["model_repository"], args["model_version"], "model.onnx")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.inputs = [i["name"] for i in config["input"]]
        self.outputs = [o["name"] for o in config["output"]]
        self.batching = config.get("max_batch_size", 0) > 0

    def execute(self, requests: list[Any]) -> list[Any]:
        if not self.batching:  # no batch dimension to join requests along
            return [response for request in requests for response in self._run([request])]
        return self._run(requests)

    def _run(self, requests: list[Any]) -> list[Any]:
        feeds = {
            name: [pb_utils.get_input_tensor_by_name(r, name).as_numpy() for r in requests] for name in self.inputs
        }
        sizes = [len(array) for array in feeds[self.inputs[0]]]
        joined = {name: np.concatenate(arrays) if len(arrays) > 1 else arrays[0] for name, arrays in feeds.items()}
        results = self.session.run(self.outputs, joined)
        responses, start = [], 0
        for size in sizes:
            tensors = [
                pb_utils.Tensor(name, result[start : start + size])
                for name, result in zip(self.outputs, results, strict=True)
            ]
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
            start += size
        return responses
