"""A streaming model's token objectives (TokenObjectives, triton_platform/monitoring/token_rules.py): the Args'
rules, the recorded TTFT and ITL percentiles from the series each source exports, the alerts per model, the
dashboard's row, and promtool's own rule unit tests on those series."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from platform_config.paths import PROJECT_ROOT
from tests.program.test_monitoring import metric_names
from tests.support.promtool import promtool_test, tool
from triton_platform.args.arg_problems import ArgsError
from triton_platform.monitoring.dashboards import panel_queries
from triton_platform.monitoring.monitoring_args import MonitoredDeployment, MonitoringArgs, TokenObjectives
from triton_platform.monitoring.monitoring_rules import rule_groups
from triton_platform.monitoring.monitoring_settings import monitoring_settings
from triton_platform.monitoring.token_rules import token_queries
from triton_platform.recorded_series import ITL_P95, ITL_P99, TTFT_P95, TTFT_P99

DEPLOYMENT: MonitoredDeployment = {
    "object_name": "triton-chat",
    "max_replicas": 4,
    "models": ["chat", "llama", "classifier"],
    "signal": {"kind": "queue-depth", "target": 4},
}
TOKEN_SERIES = {
    # Triton core r24.11 src/metric_model_reporter.cc: the histogram family nv_inference_first_response_histogram_ms
    # (Prometheus' exposition adds `_bucket`, `_sum`, `_count`), decoupled models only.
    "nv_inference_first_response_histogram_ms_bucket",
    # vllm_backend r24.10 src/utils/metrics.py: histograms vllm:time_to_first_token_seconds and
    # vllm:time_per_output_token_seconds, labelled model and version.
    "vllm:time_to_first_token_seconds_bucket",
    "vllm:time_per_output_token_seconds_bucket",
}
TOKEN_ALERTS = {
    "TritonTimeToFirstTokenAboveSLO",
    "TritonTimeToFirstTokenP99AboveSLO",
    "TritonInterTokenLatencyAboveSLO",
    "TritonInterTokenLatencyP99AboveSLO",
}


def settings(objectives: dict[str, TokenObjectives]) -> MonitoringArgs:
    args: MonitoringArgs = {
        "namespace": "ml",
        "latency_slo_ms": 250,
        "deployments": {"chat": DEPLOYMENT},
        "token_objectives": objectives,
    }
    return monitoring_settings("mon", args)


OBJECTIVES: dict[str, TokenObjectives] = {
    "chat": {"time_to_first_token_p95_ms": 300, "time_to_first_token_p99_ms": 600},
    "llama": {
        "time_to_first_token_p95_ms": 400,
        "time_to_first_token_p99_ms": 800,
        "inter_token_p95_ms": 50,
        "inter_token_p99_ms": 80,
        "metrics": "vllm",
    },
}


def groups() -> list[dict[str, Any]]:
    return rule_groups(settings(OBJECTIVES))


def token_rules() -> list[dict[str, Any]]:
    return [rule for group in groups() if "token" in group["name"] for rule in group["rules"]]


# --- the Args' rules --------------------------------------------------------------------------------------------


def refusal(objectives: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    with pytest.raises(ArgsError) as caught:
        settings(objectives)
    return [(problem.path, problem.reason) for problem in caught.value.problems]


def test_an_inter_token_objective_needs_series_that_report_it() -> None:
    assert refusal({"chat": {"time_to_first_token_p95_ms": 300, "inter_token_p95_ms": 40}}) == [
        (
            ("token_objectives", "chat", "inter_token_p95_ms"),
            "needs metrics 'vllm', the vLLM backend's: Triton reports no inter-token latency (its only token "
            "series is the first-response histogram), so this objective could never be measured; remove it, "
            "or serve the model with the vLLM backend and its metrics",
        )
    ]


def test_a_p99_objective_below_its_p95_is_refused() -> None:
    assert refusal(
        {
            "llama": {
                "time_to_first_token_p95_ms": 400,
                "time_to_first_token_p99_ms": 300,
                "inter_token_p95_ms": 50,
                "inter_token_p99_ms": 49,
                "metrics": "vllm",
            }
        }
    ) == [
        (
            ("token_objectives", "llama", "time_to_first_token_p99_ms"),
            "300 is below the p95 objective (400 ms): a p99 is never below the p95; give at least 400",
        ),
        (
            ("token_objectives", "llama", "inter_token_p99_ms"),
            "49 is below the p95 objective (50 ms): a p99 is never below the p95; give at least 50",
        ),
    ]


def test_an_unknown_source_and_a_missing_objective_are_named() -> None:
    assert refusal({"chat": {"metrics": "tgi"}}) == [
        (("token_objectives", "chat", "time_to_first_token_p95_ms"), "missing (required)"),
        (("token_objectives", "chat", "metrics"), "'tgi' is not one of triton, vllm, tensorrtllm"),
    ]


def test_without_objectives_no_token_rule_is_made() -> None:
    assert [g["name"] for g in rule_groups(settings({}))] == [g["name"] for g in groups() if "token" not in g["name"]]


# --- what is recorded, and from which series -------------------------------------------------------------------


def test_each_source_is_read_from_its_own_histogram() -> None:
    recorded = {(rule["record"], rule["expr"]) for rule in token_rules() if "record" in rule}
    triton = 'sum by (namespace, deployment, model, le) (rate(nv_inference_first_response_histogram_ms_bucket{namespace="ml", model=~"chat"}[1m]))'
    first = 'sum by (namespace, deployment, model, le) (rate(vllm:time_to_first_token_seconds_bucket{namespace="ml", model=~"llama"}[1m]))'
    between = 'sum by (namespace, deployment, model, le) (rate(vllm:time_per_output_token_seconds_bucket{namespace="ml", model=~"llama"}[1m]))'
    assert recorded == {
        (TTFT_P95, f"histogram_quantile(0.95, {triton}) / 1000"),
        (TTFT_P99, f"histogram_quantile(0.99, {triton}) / 1000"),
        (TTFT_P95, f"histogram_quantile(0.95, {first})"),
        (TTFT_P99, f"histogram_quantile(0.99, {first})"),
        (ITL_P95, f"histogram_quantile(0.95, {between})"),
        (ITL_P99, f"histogram_quantile(0.99, {between})"),
    }


def test_the_rules_read_only_the_token_series_their_sources_export() -> None:
    named = {name for rule in token_rules() for name in metric_names(rule["expr"])}
    # Beside them, Triton's request counter (core src/metric_model_reporter.cc): a model serving without its series.
    assert named == TOKEN_SERIES | {TTFT_P95, TTFT_P99, ITL_P95, ITL_P99, "nv_inference_request_success"}


def test_each_objective_alerts_on_its_own_model() -> None:
    alerts = {(r["alert"], r["expr"]) for r in token_rules() if "alert" in r}
    assert alerts == {
        ("TritonTimeToFirstTokenAboveSLO", f'{TTFT_P95}{{namespace="ml", model="chat"}} > 0.3'),
        ("TritonTimeToFirstTokenP99AboveSLO", f'{TTFT_P99}{{namespace="ml", model="chat"}} > 0.6'),
        ("TritonTimeToFirstTokenAboveSLO", f'{TTFT_P95}{{namespace="ml", model="llama"}} > 0.4'),
        ("TritonTimeToFirstTokenP99AboveSLO", f'{TTFT_P99}{{namespace="ml", model="llama"}} > 0.8'),
        ("TritonInterTokenLatencyAboveSLO", f'{ITL_P95}{{namespace="ml", model="llama"}} > 0.05'),
        ("TritonInterTokenLatencyP99AboveSLO", f'{ITL_P99}{{namespace="ml", model="llama"}} > 0.08'),
        ("TritonTokenSeriesMissing", MISSING),
    }


BY = "namespace, deployment, model"
MISSING = (
    f'(sum by ({BY}) (rate(nv_inference_request_success{{namespace="ml", model=~"chat"}}[1m])) > 0 unless on ({BY}) '
    f'sum by ({BY}) (nv_inference_first_response_histogram_ms_bucket{{namespace="ml", model=~"chat"}})) or '
    f'(sum by ({BY}) (rate(nv_inference_request_success{{namespace="ml", model=~"llama"}}[1m])) > 0 unless on ({BY}) '
    f'sum by ({BY}) (vllm:time_to_first_token_seconds_bucket{{namespace="ml", model=~"llama"}}))'
)
"""A model with objectives serving requests without the series its first token is read from."""


def test_the_dashboard_has_a_token_row_where_a_served_model_has_objectives() -> None:
    titles = [title for title, _, _ in panel_queries(settings(OBJECTIVES), DEPLOYMENT)]
    assert titles[-2:] == ["Time to first token p95 / p99", "Inter-token latency p95 / p99"]
    only_triton = [title for title, _, _ in panel_queries(settings({"chat": OBJECTIVES["chat"]}), DEPLOYMENT)]
    assert only_triton[-1] == "Time to first token p95 / p99"
    assert "Inter-token latency p95 / p99" not in only_triton
    assert not any("token" in title for title, _, _ in panel_queries(settings({}), DEPLOYMENT))


def test_the_runbook_has_a_section_for_every_token_alert() -> None:
    headings = {line[3:].strip() for line in (PROJECT_ROOT / "docs" / "runbooks.md").read_text().splitlines()}
    assert headings >= TOKEN_ALERTS


# --- promtool runs the rules on the sources' series --------------------------------------------------------------


def histogram(metric: str, model: str, buckets: dict[str, str]) -> list[dict[str, str]]:
    labels = f'namespace="ml", deployment="triton-chat", pod="triton-chat-a", model="{model}", version="1"'
    return [{"series": f'{metric}{{{labels}, le="{le}"}}', "values": values} for le, values in buckets.items()]


def fired(alert: str, model: str, what: str, objective_ms: int) -> dict[str, Any]:
    return {
        "exp_labels": {
            "alertname": alert,
            "severity": "critical",
            "platform": "triton-platform",
            "namespace": "ml",
            "deployment": "triton-chat",
            "model": model,
        },
        "exp_annotations": {
            "summary": f"{what} of {model} is above its objective",
            "description": f"{what} of {model} in triton-chat is above its {objective_ms} ms objective.",
            "runbook_url": "https://github.com/triton-platform/triton-platform/blob/main/docs/runbooks.md#"
            + alert.lower(),
        },
    }


def recorded(record: str, model: str, value: float) -> dict[str, Any]:
    """The value promtool must find recorded for `model` at ten minutes."""
    series = f'{record}{{namespace="ml", deployment="triton-chat", model="{model}"}}'
    return {"expr": series, "eval_time": "10m", "exp_samples": [{"labels": series, "value": value}]}


def promtool_cases() -> list[dict[str, Any]]:
    # Every first response between 100 and 500 ms: p95 is interpolated at 100 + 0.95 * 400 = 480 ms, p99 at 496 ms,
    # above chat's 300 ms p95 objective and below its 600 ms p99 one.
    chat = histogram(
        "nv_inference_first_response_histogram_ms_bucket",
        "chat",
        {"100": "0x20", "500": "0+60x20", "2000": "0+60x20", "5000": "0+60x20", "+Inf": "0+60x20"},
    )
    # llama's first tokens between 0.1 and 0.25 s (p95 0.2425 s, under 0.4) and its next tokens between 0.05 and
    # 0.075 s (p95 0.07375 s, above 0.05; p99 0.07475 s, under 0.08).
    llama = histogram(
        "vllm:time_to_first_token_seconds_bucket",
        "llama",
        {"0.1": "0x20", "0.25": "0+60x20", "+Inf": "0+60x20"},
    ) + histogram(
        "vllm:time_per_output_token_seconds_bucket",
        "llama",
        {"0.05": "0x20", "0.075": "0+600x20", "+Inf": "0+600x20"},
    )
    return [
        {
            "input_series": chat + llama,
            "promql_expr_test": [
                recorded(TTFT_P95, "chat", 0.48),
                recorded(TTFT_P99, "chat", 0.496),
                recorded(TTFT_P95, "llama", 0.2425),
                recorded(ITL_P95, "llama", 0.07375),
                recorded(ITL_P99, "llama", 0.07475),
            ],
            "alert_rule_test": [
                {
                    "alertname": "TritonTimeToFirstTokenAboveSLO",
                    "eval_time": "10m",
                    "exp_alerts": [fired("TritonTimeToFirstTokenAboveSLO", "chat", "p95 time to first token", 300)],
                },
                {"alertname": "TritonTimeToFirstTokenP99AboveSLO", "eval_time": "10m", "exp_alerts": []},
                {
                    "alertname": "TritonInterTokenLatencyAboveSLO",
                    "eval_time": "10m",
                    "exp_alerts": [fired("TritonInterTokenLatencyAboveSLO", "llama", "p95 inter-token latency", 50)],
                },
                {"alertname": "TritonInterTokenLatencyP99AboveSLO", "eval_time": "10m", "exp_alerts": []},
            ],
        }
    ]


def run_promtool(tmp_path: Path, cases: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    return promtool_test(tmp_path, groups(), [{"interval": "1m", **case} for case in cases])


@pytest.mark.real_tools
def test_promtool_records_the_percentiles_and_fires_above_each_objective(tmp_path: Path) -> None:
    run = run_promtool(tmp_path, promtool_cases())
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "SUCCESS" in run.stdout
    checked = subprocess.run(
        [tool("promtool"), "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.real_tools
def test_promtool_catches_a_token_alert_that_does_not_fire(tmp_path: Path) -> None:
    # chat's first responses all under 100 ms: its p95 alert must not fire, so promtool fails the expectation.
    [case] = promtool_cases()
    for series in case["input_series"]:
        if "first_response" in series["series"]:
            series["values"] = "0+60x20"
    run = run_promtool(tmp_path, [case])
    assert run.returncode != 0
    assert "TritonTimeToFirstTokenAboveSLO" in run.stdout + run.stderr


# --- KEDA's token triggers (token_queries) on the same series ----------------------------------------------------


def trigger_settings() -> MonitoringArgs:
    engine: TokenObjectives = {"time_to_first_token_p95_ms": 1000, "metrics": "tensorrtllm"}
    args: MonitoringArgs = {
        "namespace": "ml",
        "latency_slo_ms": 250,
        "deployments": {
            "chat": DEPLOYMENT,
            "engine": {**DEPLOYMENT, "object_name": "triton-engine", "models": ["engine"]},
            "plain": {**DEPLOYMENT, "object_name": "triton-plain", "models": ["classifier"]},
        },
        "token_objectives": {**OBJECTIVES, "engine": engine},
    }
    return monitoring_settings("mon", args)


def kv_blocks(pod: str, used: int, most: int) -> list[dict[str, str]]:
    labels = f'namespace="ml", deployment="triton-engine", pod="{pod}", model="engine", version="1"'
    metric = "nv_trt_llm_kv_cache_block_metrics"
    return [
        {"series": f'{metric}{{{labels}, kv_cache_block_type="{kind}"}}', "values": f"{value}x20"}
        for kind, value in (("used", used), ("max", most), ("free", most - used))
    ]


def test_each_deployment_gets_the_token_triggers_its_models_backends_report() -> None:
    queries = token_queries(trigger_settings())
    assert {key: sorted(triggers) for key, triggers in queries.items()} == {
        "chat": ["time-to-first-token"],
        "engine": ["kv-cache", "time-to-first-token"],
        "plain": [],
    }


@pytest.mark.real_tools
def test_promtool_reads_the_token_triggers_on_the_sources_series(tmp_path: Path) -> None:
    queries = token_queries(trigger_settings())
    [case] = promtool_cases()

    def value(expr: str, expected: float) -> dict[str, Any]:
        return {"expr": expr, "eval_time": "10m", "exp_samples": [{"labels": "{}", "value": expected}]}

    case = {
        "input_series": case["input_series"]
        + kv_blocks("triton-engine-a", 50, 100)
        + kv_blocks("triton-engine-b", 25, 100),
        "promql_expr_test": [
            # chat's p95 (0.48 s) over its 0.3 s objective; llama's is 0.2425 / 0.4 = 0.60625: the worst wins.
            value(queries["chat"]["time-to-first-token"], 1.6),
            # engine has no first responses: no pressure rather than NaN; its cache is 0.5 + 0.25 over the pods.
            value(queries["engine"]["time-to-first-token"], 0),
            value(queries["engine"]["kv-cache"], 0.75),
        ],
    }
    run = run_promtool(tmp_path, [case])
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]


@pytest.mark.real_tools
def test_promtool_catches_a_trigger_reading_the_wrong_value(tmp_path: Path) -> None:
    queries = token_queries(trigger_settings())
    [case] = promtool_cases()
    expected = {"labels": "{}", "value": 0.48}  # the p95 itself, not over the objective: promtool must refuse it
    case = {
        "input_series": case["input_series"],
        "promql_expr_test": [
            {"expr": queries["chat"]["time-to-first-token"], "eval_time": "10m", "exp_samples": [expected]}
        ],
    }
    run = run_promtool(tmp_path, [case])
    assert run.returncode != 0
    assert "time_to_first_token" in run.stdout + run.stderr


def served(model: str) -> list[dict[str, str]]:
    labels = f'namespace="ml", deployment="triton-chat", pod="triton-chat-a", model="{model}", version="1"'
    return [{"series": f"nv_inference_request_success{{{labels}}}", "values": "0+60x20"}]


@pytest.mark.real_tools
def test_promtool_fires_for_a_model_serving_without_its_token_series(tmp_path: Path) -> None:
    [case] = promtool_cases()
    llama = [s for s in case["input_series"] if 'model="llama"' in s["series"]]
    expected = {
        "exp_labels": {
            "alertname": "TritonTokenSeriesMissing",
            "severity": "warning",
            "platform": "triton-platform",
            "namespace": "ml",
            "deployment": "triton-chat",
            "model": "chat",
        },
        "exp_annotations": {
            "summary": "chat streams without its time-to-first-token series",
            "description": "chat in triton-chat serves requests but exports no time-to-first-token histogram: its "
            "token alerts and its time-to-first-token trigger read nothing.",
            "runbook_url": "https://github.com/triton-platform/triton-platform/blob/main/docs/runbooks.md#"
            "tritontokenseriesmissing",
        },
    }
    # chat serves without a first-response histogram (Triton before 24.11, or no histogram_latencies); llama
    # serves with its own: only chat's alert fires.
    missing = {
        "input_series": llama + served("chat") + served("llama"),
        "alert_rule_test": [{"alertname": "TritonTokenSeriesMissing", "eval_time": "10m", "exp_alerts": [expected]}],
    }
    run = run_promtool(tmp_path, [missing])
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
