"""GpuNodePool: the GPU nodes Triton runs on (its Args, its contract with the serving, and its builders: device plugin,
Karpenter, cluster-autoscaler, overprovisioning, DCGM exporter)."""
