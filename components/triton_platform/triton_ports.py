"""The ports Triton serves on (tritonserver's defaults: `--http-port`, `--grpc-port`, `--metrics-port`), by which
its Services, its NetworkPolicies and the KEDA HTTP add-on's wake Service reach it."""

HTTP_PORT, GRPC_PORT, METRICS_PORT = 8000, 8001, 8002
