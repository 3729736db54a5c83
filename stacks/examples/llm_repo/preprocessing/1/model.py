"""Stand-in for tensorrtllm_backend v0.14.0 all_models/inflight_batcher_llm/preprocessing/1/model.py.

The example repository shows the layout the platform renders and checks; before deploying, copy that release's
file here (with the engine and tokenizer into tensorrt_llm/1/). Loaded as it is, this model refuses to start.
"""


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        raise RuntimeError("copy tensorrtllm_backend v0.14.0's preprocessing/1/model.py here before serving this model")
