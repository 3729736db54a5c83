"""Largest values of the integer fields Args land in: protobuf's (Triton's model_config.proto,
https://github.com/triton-inference-server/common/blob/main/protobuf/model_config.proto) and Kubernetes' int32
replica counts."""

INT32_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1
