"""Preprocessing on the Python backend: raw 0-255 values scaled to the classifier's 0-1 input."""

from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils

SCALE = np.float32(1.0 / 255.0)


class TritonPythonModel:
    def execute(self, requests: list[Any]) -> list[Any]:
        responses = []
        for request in requests:
            raw = pb_utils.get_input_tensor_by_name(request, "raw").as_numpy()
            scaled = pb_utils.Tensor("input_tensor", (raw * SCALE).astype(np.float32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[scaled]))
        return responses
