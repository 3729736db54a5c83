"""Names that published Triton charts and posts use but no Triton release has (triton-inference-server/core src/metrics.cc and server src/command_line_parser.cc define the real ones).

Defined once, here, for the checks that must refuse them: the flag allow-list of
the policy pack and the metric-name check of every PromQL. Nothing the program
emits uses them.
"""

INVENTED_FLAG = "--batching-max-batch-size"
"""A tritonserver flag that does not exist (batching is per model, in config.pbtxt)."""

INVENTED_METRIC = "nv_inference_queue_size"
"""A queue metric Triton never exported; the real gauge is nv_inference_pending_request_count."""
