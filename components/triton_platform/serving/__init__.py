"""TritonServing: Triton Deployments serving a model repository (its Args and spec, and the builders of its server
arguments, pods, loader Job, Services, Ingresses and budgets)."""
