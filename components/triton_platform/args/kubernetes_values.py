"""Formats of Kubernetes values components check in their Args, and what they mean.

Names as apimachinery validates them
(https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go).
"""

from __future__ import annotations

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
"""IsDNS1123Label: namespaces, and names that become part of other objects' names."""
QUANTITY = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
"""A resource quantity (apimachinery resource.Quantity, decimal and binary SI)."""

_QUANTITY_SCALE = {"m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_QUANTITY_SCALE.update({f"{p}i": 1024.0**n for n, p in enumerate("KMGTPE", start=1)})


def quantity_value(quantity: str) -> float:
    """A Kubernetes quantity string that matched QUANTITY, as a number."""
    number = quantity.rstrip("mkMGTPEi")
    return float(number) * _QUANTITY_SCALE[quantity[len(number) :]]


UNHEALTHY_POD_EVICTION_POLICY = "AlwaysAllow"
"""Every PodDisruptionBudget the platform creates or installs: an unready pod (a failed model load, a crash loop)
serves nothing, so evicting it never waits for it to become ready, which would block node drains (policy/v1
PodDisruptionBudgetSpec `unhealthyPodEvictionPolicy`)."""
