"""KEDA's metrics adapter between Prometheus and the HPA: failure counting and fallback.

Follows kedacore/keda pkg/fallback (kedacore/keda): the HPA asks for each
trigger's metric at every sync; a failed read (Prometheus down, a query error, a
missing series with `ignoreNullValues: false`) increments that trigger's failure
count and a good read resets it. Once the count exceeds `failureThreshold`, an
AverageValue trigger answers `replicas x target`, so the HPA proposes the fallback
replica count (`static`: `replicas`; `currentReplicas`: the current count;
`currentReplicasIfHigher`: the larger of the two). Below the threshold, or with no
fallback, the read is an error the HPA sees as an invalid metric.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

FallbackBehavior = Literal["static", "currentReplicas", "currentReplicasIfHigher"]


@dataclass(frozen=True)
class Fallback:
    failure_threshold: int
    replicas: int
    behavior: FallbackBehavior = "currentReplicasIfHigher"

    def replica_count(self, current: int) -> int:
        if self.behavior == "static":
            return self.replicas
        if self.behavior == "currentReplicas":
            return current
        return max(current, self.replicas)


@dataclass
class KedaAdapter:
    """The metric values the HPA receives for one ScaledObject's AverageValue triggers."""

    targets: tuple[float, ...]
    fallback: Fallback | None = None
    failures: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.failures = [0] * len(self.targets)

    def read(self, values: list[float | None], current: int) -> list[float | None]:
        """Each trigger's answer to this sync: its value, the fallback's, or None (an error)."""
        answers: list[float | None] = []
        for i, (value, target) in enumerate(zip(values, self.targets, strict=True)):
            if value is not None:
                self.failures[i] = 0
                answers.append(value)
                continue
            self.failures[i] += 1
            if self.fallback is not None and self.failures[i] > self.fallback.failure_threshold:
                answers.append(self.fallback.replica_count(current) * target)
            else:
                answers.append(None)
        return answers

    def falling_back(self) -> bool:
        return self.fallback is not None and any(f > self.fallback.failure_threshold for f in self.failures)
