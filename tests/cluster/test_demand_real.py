"""The `demand` signal on a real tritonserver (2.51.0, CPU, loopback) scraped by a real Prometheus: production's
deployed query, as its ScaledObject carries it (components/triton_platform/scaling_signal.py, `demand_expr`).

The query adds, per pod and model, the rates of `nv_inference_request_success` and `nv_inference_request_failure`:
a vector sum, so it answers only where both series exist. Triton creates every failure series at 0 when the model
loads, so it answers before any request fails; under load that Triton rejects (a test copy of production whose
classifier times requests out of its queue, REJECT), its request rate is the rate the load generator sent. A request
refused for a full queue (`maxQueueSize`) is not counted by any of Triton's counters: the demand cannot see it.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.triton_load import load as loadgen
from platform_config.loader import load_stack
from simulator.scenario import model_capacity_rps, scenario, seconds
from tests.conftest import MODELS, SCALING, removing, setting, validate
from tests.support.local_cluster import wait_until
from tests.support.local_triton.server import TritonServer
from tests.support.triton_prometheus import Served, query, serve_with_prometheus
from triton_platform.recorded_series import rate_window
from triton_platform.scaling_signal import DEMAND_SIGNAL, deployment_selector, trigger_query
from triton_platform.serving.serving_context import deployment_object_name

pytestmark = pytest.mark.real_tools  # tritonserver, prometheus, and bench/loadgen's Go build

STACK, DEPLOYMENT = "production", "general"
REASONS = ("BACKEND", "CANCELED", "OTHER", "REJECTED")
"""The failure counter's `reason` label values (core src/metric_model_reporter.cc)."""
QUEUE_POLICY = ("classifier", "dynamicBatching", "defaultQueuePolicy")

TIMEOUT_US = 4000
"""The test copy's classifier queue timeout: shorter than its 5 ms batching delay, so a request that arrives alone
waits for the delay and is rejected when its 4 ms run out, while 8 arriving together fill a preferred batch (8) and
are sent at once."""
PERIOD, BURST = 0.04, 8
"""Every 40 ms a burst of 8 requests (served), and halfway between two bursts one lone request (rejected): 225
requests a second, a ninth of them rejected by design."""
LOAD_SECONDS = 68.0
"""Longer than the query's 1m window and a few scrapes: the window read lies inside the steady load."""


def metric_counters(triton: TritonServer) -> dict[tuple[str, str, str], float]:
    """Triton's request counters as it exports them: (metric, model, reason; "" for success) -> value."""
    with urllib.request.urlopen(triton.metrics_url, timeout=10) as response:
        text = response.read().decode()
    counters = {}
    for name, labels, value in re.findall(r"^(nv_inference_request_(?:success|failure))\{(.*)\} (\S+)$", text, re.M):
        label = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        counters[(name, label["model"], label.get("reason", ""))] = float(value)
    return counters


def capacities_in(load_query: str) -> dict[str, str]:
    """Each model's capacity as the demand query writes it: the divisor after the model's failure rate."""
    return dict(re.findall(r'nv_inference_request_failure\{[^}]*model="([^"]+)"\}\[\w+\]\)\)\) / ([^ )]+)', load_query))


def numerator(served: Served, models: list[str]) -> str:
    """The demand query's sum for `models` without the division: the requests ending per second."""
    window = rate_window(served.monitoring["scrape_interval"])
    namespace, target = served.config.kubernetes.namespace, deployment_object_name(DEPLOYMENT)
    return trigger_query(DEMAND_SIGNAL, namespace, target, window, dict.fromkeys(models, 1.0))


def failures(triton: TritonServer, models: list[str]) -> dict[tuple[str, str], float]:
    """Each of `models`' failure counters by reason."""
    return {
        (model, reason): value
        for (name, model, reason), value in metric_counters(triton).items()
        if name == "nv_inference_request_failure" and model in models
    }


def value_at(base: str, expr: str, at: float | None = None) -> float:
    [sample] = query(base, expr, at)
    assert sample["metric"] == {}, "an aggregated query: no labels, one series"
    return float(sample["value"][1])


@pytest.fixture(scope="module")
def production(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """production as committed."""
    with serve_with_prometheus(
        STACK, load_stack(STACK).config, DEPLOYMENT, tmp_path_factory.mktemp("production")
    ) as served:
        yield served


def test_the_failure_series_exist_before_any_failure_so_the_demand_answers_at_light_load(production: Served) -> None:
    query_models = sorted(capacities_in(production.queries[DEPLOYMENT]))
    assert query_models == ["classifier", "preprocess"]
    none_failed = {(model, reason): 0.0 for model in query_models for reason in REASONS}
    # Created at 0 when the models load, before any request.
    assert failures(production.triton, query_models) == none_failed

    demand = production.queries[DEPLOYMENT]
    answers: list[list[dict[str, Any]]] = []
    served = rejected = 0
    deadline = time.monotonic() + 60
    # Light load, one request at a time, until the query reads it: a new target's first scrape came up to 6 s
    # after Prometheus was ready, and rate() needs two.
    while not answers or not any(float(sample["value"][1]) > 0 for sample in answers[-1]):
        assert time.monotonic() < deadline, f"no demand read under light load in 60 s: {answers[-3:]}"
        light = loadgen(production.triton, "classifier", clients=1, seconds=2)
        served, rejected = served + len(light["latencies"]), rejected + light["rejected"]
        answers.append(query(production.prometheus_url, demand))
    assert (served > 0, rejected) == (True, 0)
    assert value_at(production.prometheus_url, demand) > 0
    assert failures(production.triton, query_models) == none_failed
    # Prometheus holds them too, at 0: the sum in the query has both operands.
    selector = deployment_selector(production.config.kubernetes.namespace, deployment_object_name(DEPLOYMENT))
    scraped = query(production.prometheus_url, f"nv_inference_request_failure{{{selector}}}")
    assert sorted((s["metric"]["model"], s["metric"]["reason"], s["value"][1]) for s in scraped) == [
        (model, reason, "0") for model in ("classifier", "pipeline", "preprocess") for reason in REASONS
    ]


def test_the_deployed_query_divides_by_the_planners_capacity(production: Served) -> None:
    """What KEDA divides each model's requests by is the capacity the simulator and the planner use, to the last
    bit: the query writes the float's repr."""
    planned = scenario(load_stack(STACK), DEPLOYMENT, "classifier", others=["preprocess"], mix=(0.5, 0.5))
    capacities = dict(zip(planned.models, planned.capacities, strict=True))
    assert capacities == {
        m: model_capacity_rps(b, t) for m, (b, t) in zip(planned.models, planned.batchers, strict=True)
    }
    written = capacities_in(production.queries[DEPLOYMENT])
    assert written == {model: repr(capacity) for model, capacity in capacities.items()}
    assert {model: float(text) for model, text in written.items()} == capacities


@pytest.fixture
def rejecting(tmp_path: Path) -> Iterator[Served]:
    """production with the classifier's queue timeout at 4 ms (REJECT, as production's): its one change."""
    config = validate(STACK, setting(MODELS, *QUEUE_POLICY, "defaultTimeoutMicroseconds", value=TIMEOUT_US))
    with serve_with_prometheus(STACK, config, DEPLOYMENT, tmp_path) as served:
        yield served


def test_the_demand_counts_every_request_sent_rejected_or_served(rejecting: Served) -> None:
    base = rejecting.prometheus_url
    capacity = float(capacities_in(rejecting.queries[DEPLOYMENT])["classifier"])
    arrivals = sorted(
        t for k in range(round(LOAD_SECONDS / PERIOD)) for t in [k * PERIOD] * BURST + [k * PERIOD + PERIOD / 2]
    )
    # The window read must hold scrapes from its start: a new target's first scrape came up to 6 s late.
    wait_until("Prometheus' first scrapes", lambda: bool(query(base, "count_over_time(up[1m]) >= 2")), 60, 0.5)
    before = metric_counters(rejecting.triton)
    start = time.time()
    sent = loadgen(rejecting.triton, "classifier", arrivals=arrivals)
    after = metric_counters(rejecting.triton)

    served, rejected = len(sent["latencies"]), sent["rejected"]
    assert served + rejected == len(arrivals)
    assert 0 < rejected < len(arrivals)
    growth = {key: after[key] - before[key] for key in before if key[1] == "classifier"}
    # Every request the generator sent ended in Triton's counters once: its 200s as successes, its errors as
    # queue-timeout rejections.
    assert growth == {
        ("nv_inference_request_success", "classifier", ""): served,
        **{("nv_inference_request_failure", "classifier", r): rejected if r == "REJECTED" else 0 for r in REASONS},
    }

    window_text = rate_window(rejecting.monitoring["scrape_interval"])
    window = seconds(window_text)
    at = start + LOAD_SECONDS - 2
    while time.time() < at + 2:  # a scrape after the instant read
        time.sleep(0.2)
    sent_rate = sum(at - window < start + t <= at for t in arrivals) / window
    demand = value_at(base, rejecting.queries[DEPLOYMENT], at)
    rate = value_at(base, numerator(rejecting, ["classifier"]), at)
    assert value_at(base, numerator(rejecting, ["preprocess"]), at) == 0.0
    assert demand * capacity == pytest.approx(rate, rel=1e-9)
    selector = deployment_selector(rejecting.config.kubernetes.namespace, deployment_object_name(DEPLOYMENT))
    rejected_rate = value_at(
        base,
        f'sum(rate(nv_inference_request_failure{{{selector}, model="classifier", reason="REJECTED"}}[{window_text}]))',
        at,
    )
    print(
        f"sent {sent_rate:.3f} req/s, the demand query's {rate:.3f} req/s (ratio {rate / sent_rate:.5f}), "
        f"{rejected_rate / rate:.1%} rejected ({rejected} of {len(arrivals)} overall), "
        f"send lag p95 {sent['lag_p95'] * 1000:.2f} ms"
    )
    assert rejected_rate > 0
    assert abs(rate / sent_rate - 1) <= 0.05, (rate, sent_rate)


@pytest.fixture
def full_queue(tmp_path: Path) -> Iterator[Served]:
    """production with the classifier's queue bounded at 2 requests, scaling on the busy ratio: with the demand, the
    stack refuses a queue bounded by count for this very reason (tests/simulator/test_demand_signal.py)."""
    config = validate(
        STACK,
        setting(SCALING, "signal", value="busy-ratio"),
        removing(SCALING, "demandTarget"),
        removing(SCALING, "capacityProfiles"),
        setting(MODELS, *QUEUE_POLICY, "maxQueueSize", value=2),
    )
    with serve_with_prometheus(STACK, config, DEPLOYMENT, tmp_path) as served:
        yield served


FULL = '{"error":"[request id: <id_unknown>] Exceeds maximum queue size"}'
"""Triton's answer (HTTP 503) to a request its model's queue has no room for."""


def infer(triton: TritonServer) -> tuple[int, str]:
    body = json.dumps(
        {"inputs": [{"name": "input_tensor", "shape": [1, 128], "datatype": "FP32", "data": [1.0] * 128}]}
    ).encode()
    request = urllib.request.Request(
        f"http://{triton.http_url}/v2/models/classifier/infer", body, {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, ""
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_a_request_refused_for_a_full_queue_is_counted_nowhere(full_queue: Served) -> None:
    """Triton 2.51 refuses it on arrival (the scheduler's Enqueue returns the error to the frontend) and neither
    its failure counter nor its statistics count it: the demand sees only requests the queue admitted."""
    before = metric_counters(full_queue.triton)
    answers: list[tuple[int, str]] = []
    lock = threading.Lock()

    def client() -> None:
        for _ in range(4):
            answer = infer(full_queue.triton)
            with lock:
                answers.append(answer)

    for _ in range(5):  # rounds of 32 clients at once, until one was refused
        threads = [threading.Thread(target=client) for _ in range(32)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if any(status != 200 for status, _ in answers):
            break
    after = metric_counters(full_queue.triton)
    assert set(answers) == {(200, ""), (503, FULL)}
    ok = sum(status == 200 for status, _ in answers)
    growth = {key: after[key] - before[key] for key in before if key[1] == "classifier"}
    assert growth == {
        ("nv_inference_request_success", "classifier", ""): ok,
        **{("nv_inference_request_failure", "classifier", r): 0 for r in REASONS},
    }
    with urllib.request.urlopen(f"http://{full_queue.triton.http_url}/v2/models/classifier/stats", timeout=10) as r:
        [stats] = json.load(r)["model_stats"]
    assert stats["inference_stats"]["fail"] == {"count": 0, "ns": 0}
    print(f"{len(answers) - ok} of {len(answers)} refused for a full queue, none counted")
