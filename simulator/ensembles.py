"""An ensemble request's end-to-end latency and rejections, from its steps' simulated ones.

The simulation runs an ensemble's requests on its steps' models (scenario.model_load), so only the steps have
latency histograms; `stackctl simulate` reports the ensemble from them (docs/simulation.md, "Several models").

Method: Triton's ensemble scheduler starts a step once every tensor it reads is there, so the steps form a DAG
by tensors: step j waits for step i when one of j's `ensemble_scheduling.step[].input_map` values is one of i's
`output_map` values (the ensemble's own inputs are there at once). A request ends when its last step does: the
latest finish over the DAG, a sum along a chain and a max across parallel branches. Each step's time is drawn
from its model's latency histogram over the run (a timeline.EDGES bin by its counts, then a value log-uniform
inside it, as the bins are spaced); a step that is itself an ensemble is drawn by the same method. Monte Carlo,
because sums and maxima of histograms over a DAG have no closed form; a seeded numpy Generator makes the figures
the same for a seed. The percentiles are read as the steps' are (timeline.percentiles of the draws' histogram), so
the ensemble's and its steps' figures compare bin for bin.

Assumptions: the steps' times are independent, and each is drawn from the whole run's histogram of its model,
which holds the model's own requests and the ensembles' alike (they share its queue). Where the load varies,
every step is slow in the same seconds, so the real tail is heavier than the drawn one. A request fails when
any of its steps rejects it: 1 - prod(1 - r_step), the steps again independent. Triton's own ensemble
scheduling overhead (handing tensors from step to step) is not modelled; each step's time holds instead the
request overhead of its model's profile (a client's transport and (de)serialization), once per step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from graphlib import CycleError, TopologicalSorter
from typing import Any

import numpy as np
from numpy.typing import NDArray
from tritonclient.grpc.model_config_pb2 import ModelConfig

from simulator.scenario import ensemble_steps
from simulator.timeline import EDGES, percentiles

SAMPLES = 200_000
"""Requests drawn per ensemble: its p99 rests on the 2,000 slowest, and another seed moves it by less than a bin
(2%): production's pipeline over lognormal steps (sigma 0.1 to 1) kept p50, p95 and p99 in the same bins over
seeds 0-7. About 0.1 s per two-step ensemble."""


def waits_for(config: ModelConfig) -> dict[int, set[int]]:
    """Each step of an ensemble (by index) and the steps it waits for: those whose outputs it reads."""
    steps = config.ensemble_scheduling.step
    made = [set(step.output_map.values()) for step in steps]
    return {
        j: {i for i in range(len(steps)) if i != j and made[i] & set(step.input_map.values())}
        for j, step in enumerate(steps)
    }


def _draw(histogram: NDArray[np.integer[Any]], rng: np.random.Generator, samples: int) -> NDArray[np.float64]:
    """`samples` latencies (s) from counts over EDGES' bins; NaN when the histogram is empty (nothing served)."""
    counts = np.asarray(histogram, dtype=np.float64)
    total = counts.sum()
    if total == 0:
        return np.full(samples, np.nan)
    bins = rng.choice(len(counts), size=samples, p=counts / total)
    low, high = EDGES[bins], EDGES[bins + 1]
    return np.asarray(low * (high / low) ** rng.random(samples), dtype=np.float64)


def _latencies(
    config_of: Mapping[str, ModelConfig],
    model: str,
    histograms: Mapping[str, NDArray[np.integer[Any]]],
    rng: np.random.Generator,
    samples: int,
) -> NDArray[np.float64]:
    """`samples` latencies (s) of requests to `model`: drawn from its histogram, or over its steps' DAG."""
    config = config_of[model]
    steps = ensemble_steps(config)
    if not steps:
        return _draw(histograms[model], rng, samples)
    waits = waits_for(config)
    try:
        order = list(TopologicalSorter(waits).static_order())
    except CycleError:
        raise ValueError(
            f"the steps of ensemble {model!r} wait for each other's tensors in a cycle; Triton refuses such an "
            "ensemble_scheduling"
        ) from None
    # Drawn in the steps' order, so the draws do not depend on how the DAG is walked.
    times = [_latencies(config_of, step, histograms, rng, samples) for step in steps]
    finish: dict[int, NDArray[np.float64]] = {}
    for j in order:
        start = np.max([finish[i] for i in waits[j]], axis=0) if waits[j] else 0.0
        finish[j] = start + times[j]
    return np.asarray(np.max(list(finish.values()), axis=0), dtype=np.float64)


def _rejected(config_of: Mapping[str, ModelConfig], model: str, rejected_pct: Mapping[str, float]) -> float:
    """The fraction of requests to `model` rejected: its own, or, for an ensemble, that of any step."""
    steps = ensemble_steps(config_of[model])
    if not steps:
        return rejected_pct[model] / 100
    return 1 - math.prod(1 - _rejected(config_of, step, rejected_pct) for step in steps)


def end_to_end(
    config_of: Mapping[str, ModelConfig],
    ensemble: str,
    histograms: Mapping[str, NDArray[np.integer[Any]]],
    rejected_pct: Mapping[str, float],
    *,
    seed: int,
    samples: int = SAMPLES,
) -> dict[str, Any]:
    """An ensemble request's p50, p95 and p99 (ms) and rejected %, from its steps' latency histograms over
    timeline.EDGES and rejected % (by model: `histograms`, `rejected_pct`), and its step models in order (`steps`).

    `config_of`: every model's config that the ensemble reaches, nested ensembles included; NaN percentiles when a
    step served no request."""
    steps = ensemble_steps(config_of[ensemble])
    if not steps:
        raise ValueError(f'model {ensemble!r} is no ensemble (its config\'s platform is not "ensemble")')
    latencies = _latencies(config_of, ensemble, histograms, np.random.default_rng(seed), samples)
    # NaN (a step served nothing) reaches every draw, and binning none leaves an empty histogram: NaN percentiles.
    served = latencies[np.isfinite(latencies)]
    bins = len(EDGES) - 1
    counts = np.bincount(np.clip(np.searchsorted(EDGES, served) - 1, 0, bins - 1), minlength=bins)
    p50, p95, p99 = (float(percentiles(counts[None, :], q)[0] * 1000) for q in (50, 95, 99))
    return {
        "p50_ms": p50,
        "p95_ms": p95,
        "p99_ms": p99,
        "rejected_pct": 100 * _rejected(config_of, ensemble, rejected_pct),
        "steps": list(steps),
    }
