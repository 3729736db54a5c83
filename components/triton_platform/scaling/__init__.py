"""KedaScaling: a KEDA ScaledObject per Triton Deployment (its Args and the component)."""
