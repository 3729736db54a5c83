"""What Monitoring makes of its Args: checked, defaults applied, and read.

`monitoring_settings` checks a MonitoringArgs dict against its declaration
(triton_platform/monitoring/monitoring_args.py: every key's shape, default, bounds and format) and the rules that
span keys (a deployment's signal, receivers and routes, alert thresholds, the p99 objective, the component's own
labels, the settings of mode `install`), raising every problem at once, each naming its Arg
(triton_platform/args/arg_problems.py). It returns the Args with every default applied, which the builders read;
TritonServing's outputs among them are checked by stand-ins until they are known (`joined_settings`), and
`object_name`, `scraped_service`, `served_models` and `signal_divisors` read them plainly after.
"""

from collections.abc import Mapping
from typing import Any, TypeVar, cast

import pulumi

from triton_platform.args.arg_problems import ArgPath, ArgProblems
from triton_platform.args.arg_schema import named_by, resolve_record
from triton_platform.args.excerpts import excerpt
from triton_platform.args.formats import MODEL, Format
from triton_platform.http_add_on import pods_service_name
from triton_platform.kube.helm_chart import chart_source_problem
from triton_platform.monitoring.monitoring_args import (
    COMPONENT,
    DASHBOARD_LABEL,
    INSTALL_ONLY,
    INTEGRATIONS,
    NULL_RECEIVER,
    POD_SECURITY_LABELS,
    RECEIVER_NAME,
    SEVERITY,
    WATCHED_KEY,
    AlertReceiver,
    AlertThresholds,
    MonitoredDeployment,
    MonitoringArgs,
    ReceiverCredential,
    TokenObjectives,
)
from triton_platform.scaling_signal import PER_MODEL_SIGNALS, QUEUE_DEPTH_SIGNAL
from triton_platform.token_signal import SOURCES, TOKEN_METRICS, TOP_BUCKET_MS

T = TypeVar("T")


def monitoring_settings(name: str, args: MonitoringArgs) -> MonitoringArgs:
    """`args` checked against their declaration and the rules across keys, every default applied: what the
    builders read. An ArgsError names every problem found. TritonServing's outputs among them are checked by
    stand-ins until they are known (`joined_settings` checks them then)."""
    problems = ArgProblems(COMPONENT, name, named_by(MonitoringArgs))
    checked = cast(MonitoringArgs, resolve_record(problems, (), _with_stand_ins(args), MonitoringArgs))
    # The rules across keys read only entries whose keys are right (a wrong one is named already).
    deployments = _rightly_named(checked.get("deployments", {}), WATCHED_KEY)
    for key, deployment in deployments.items():
        _signal(problems, ("deployments", key), deployment)
    _one_object_per_name(problems, deployments)
    routing_rules(problems, (), checked)
    alert_rules(problems, ("alerts",), checked.get("alerts", {}))
    _tail_objective(problems, checked)
    for model, objectives in _rightly_named(checked.get("token_objectives", {}), MODEL).items():
        token_objective_rules(problems, ("token_objectives", model), objectives)
    _labels_of_the_components_own(problems, checked)
    mode = checked.get("mode", "existing")
    if mode != "install" and isinstance(args, dict):
        for key in INSTALL_ONLY:
            # A value refused already is named once, by its own check.
            if key in args and problems.clean((key,)):
                problems.add(
                    (key,),
                    f"applies only to mode 'install': in mode {mode!r} this component installs no Prometheus or "
                    "Alertmanager, so the setting would do nothing; remove it or set mode 'install'",
                )
    chart = checked.get("chart")
    # A chart that is no mapping at all is named as such already.
    if checked.get("mode") == "install" and chart and problems.clean(("chart", "repository"), ("chart", "path")):
        problem = chart_source_problem(chart)
        if problem is not None:
            problems.add(("chart",), problem)
    if checked.get("mode") == "install" and chart and problems.clean(("chart", "values")):
        _renderer_token(problems, chart.get("values") or {})
    problems.check()
    return checked


def _renderer_token(problems: ArgProblems, values: Mapping[str, Any]) -> None:
    """Grafana 13's image renderer, where chart values turn it on, reads its token from a Secret the user names.

    Without `existingSecret` the grafana chart (12.x, kube-prometheus-stack 84 and later) writes the token from
    `randAlphaNum 40` unless a `lookup` finds the Secret (templates/_helpers.tpl, `grafana.imageRenderer.token`),
    and `lookup` finds nothing when the chart is templated rather than installed (helm_chart.py): every preview
    would replace the Secret. A `token` among the values would sit in the stack's state in plain text."""
    grafana = values.get("grafana")
    renderer = grafana.get("imageRenderer") if isinstance(grafana, Mapping) else None
    # Truthy as Helm's `if` reads it (a non-empty string turns the renderer on too).
    if not isinstance(renderer, Mapping) or not renderer.get("enabled") or renderer.get("existingSecret"):
        return
    problems.add(
        ("chart", "values", "grafana", "imageRenderer"),
        "enabled without existingSecret: the grafana chart would write a new random token on every preview (it is "
        "templated, so its lookup of the last one finds nothing), and a `token` value would be stored in plain "
        "text; create a Secret with the key `token` and name it in existingSecret",
    )


def object_name(deployment: MonitoredDeployment) -> str:
    """A checked deployment's object name: plain once checked (`monitoring_settings` refuses no Output there, but
    the builders only ever read Args whose Outputs are known, `joined_settings`)."""
    return cast(str, deployment["object_name"])


def scraped_service(deployment: MonitoredDeployment) -> str:
    """The Service the ServiceMonitor scrapes a deployment's pods through (its `service` label): its own, or the
    pods' `<name>-pods` where it wakes on request (its own Service then points at the interceptor)."""
    name = object_name(deployment)
    return name if deployment.get("wake_budget_seconds") is None else pods_service_name(name)


def served_models(deployment: MonitoredDeployment) -> list[str]:
    """A checked deployment's models, plain (as `object_name`)."""
    return cast(list[str], deployment["models"])


def signal_divisors(deployment: MonitoredDeployment) -> dict[str, float]:
    """What a checked deployment's signal divides each model's series by, plain (as `object_name`): its instances
    per pod for a busy ratio, its capacity per pod for a demand; none for a queue depth."""
    signal = deployment["signal"]
    key = PER_MODEL_SIGNALS.get(signal["kind"])
    return cast(dict[str, float], signal.get(key, {})) if key else {}


def _with_stand_ins(args: MonitoringArgs) -> MonitoringArgs:
    """`args` with each Output among the deployments' `object_name`, `models` and `signal.instances_per_pod`
    (TritonServing's outputs) replaced by a plain stand-in of the right form, so every other key is checked when
    the program runs."""
    deployments = args.get("deployments") if isinstance(args, Mapping) else None
    if not isinstance(deployments, Mapping):
        return args
    return {**args, "deployments": {key: _stand_ins(index, d) for index, (key, d) in enumerate(deployments.items())}}


def _stand_ins(index: int, deployment: MonitoredDeployment) -> MonitoredDeployment:
    if not isinstance(deployment, Mapping):
        return deployment  # refused by shape
    out = dict(deployment)
    if isinstance(out.get("object_name"), pulumi.Output):
        out["object_name"] = f"stand-in-{index}"
    signal = out.get("signal")
    if isinstance(out.get("models"), pulumi.Output):
        # A plain capacity per model names the models the demand reads: they stand in, checked again once known.
        capacities = signal.get("capacity_per_pod") if isinstance(signal, Mapping) else None
        plain = isinstance(capacities, Mapping) and capacities and all(isinstance(m, str) for m in capacities)
        out["models"] = list(cast(Mapping[str, float], capacities)) if plain else ["stand-in"]
    if isinstance(signal, Mapping) and isinstance(signal.get("instances_per_pod"), pulumi.Output):
        models = out.get("models")
        names = [m for m in models if isinstance(m, str)] if isinstance(models, list) else []
        out["signal"] = {**signal, "instances_per_pod": dict.fromkeys(names or ["stand-in"], 1)}
    return cast(MonitoredDeployment, out)


def joins_outputs(args: MonitoringArgs) -> bool:
    """Whether some deployment's `object_name`, `models` or `signal.instances_per_pod` is an Output (checked
    Args: a mapping of deployments)."""
    return _with_stand_ins(args) != args


def joined_settings(name: str, args: MonitoringArgs, checked: MonitoringArgs) -> "pulumi.Output[MonitoringArgs]":
    """The settings the builders read once TritonServing's outputs among `args` are known: `checked` (the Args
    checked with stand-ins) itself when there are none, else the Args checked again with the real values."""
    if not joins_outputs(args):
        return pulumi.Output.from_input(checked)
    deployments = pulumi.Output.from_input(args["deployments"])
    return deployments.apply(lambda known: monitoring_settings(name, {**args, "deployments": known}))


def _rightly_named(entries: Mapping[str, T], keys: Format) -> dict[str, T]:
    """The entries of `entries` whose keys are of the format `keys`."""
    return {key: entry for key, entry in entries.items() if keys.problem(key) is None}


TARGET_ABOVE_ONE = {
    "busy-ratio": "a busy ratio never exceeds 1, so the target would never be met",
    "demand": "each pod would have to carry more than it serves at full batches, so the target is met only once "
    "requests are already being rejected",
}
"""Why a per-model signal's target is at most 1."""


def _signal(problems: ArgProblems, path: ArgPath, deployment: MonitoredDeployment) -> None:
    """A busy ratio's or a demand's target and what it divides each model by, which its kind requires and bounds."""
    models, signal = deployment.get("models", []), deployment.get("signal", {})
    kind = signal.get("kind")
    # No kind, or a signal that is no mapping (it stands in empty): named as such already.
    if kind is None or not problems.clean((*path, "signal", "kind")):
        return
    models_clean, path = problems.clean((*path, "models")), (*path, "signal")
    for other_kind, key in PER_MODEL_SIGNALS.items():
        if kind != other_kind and signal.get(key) is not None:
            problems.add((*path, key), f"only kind {other_kind} reads it; this signal is {kind!r}")
    if kind == QUEUE_DEPTH_SIGNAL:
        return
    key = PER_MODEL_SIGNALS[kind]
    target = signal.get("target", 0)
    if problems.clean((*path, "target")) and target > 1:
        problems.add((*path, "target"), f"{target:g} is above 1; {TARGET_ABOVE_ONE[kind]}")
    divisors = signal.get(key)
    if not divisors:
        what = "what its ratio divides by" if kind == "busy-ratio" else "what each model's requests are divided by"
        problems.add((*path, key), f"missing (required for kind {kind}: {what})")
        return
    if models_clean:
        for model in _rightly_named(cast(dict[str, float], divisors), MODEL):
            if model not in cast(list[str], models):
                problems.add(
                    (*path, key, model),
                    f"is not one of the deployment's models ({', '.join(cast(list[str], models)) or 'none'})",
                )


def _one_object_per_name(problems: ArgProblems, deployments: Mapping[str, MonitoredDeployment]) -> None:
    """Two deployments of one object name would be one Deployment watched twice, and two dashboards of one name."""
    seen: dict[str, str] = {}
    for key, deployment in deployments.items():
        if "object_name" not in deployment or not problems.clean(("deployments", key, "object_name")):
            continue
        name = object_name(deployment)
        if name in seen:
            problems.add(
                ("deployments", key, "object_name"),
                f"{name!r} is deployments.{seen[name]}.object_name too; watch each Deployment once",
            )
        seen.setdefault(name, key)


def routing_rules(problems: ArgProblems, path: ArgPath, args: MonitoringArgs) -> None:
    """Each receiver by its rules, and each route to one of them."""
    receivers = args.get("receivers", {})
    for key, receiver in _rightly_named(receivers, RECEIVER_NAME).items():
        receiver_rules(problems, (*path, "receivers", key), key, receiver)
    if problems.clean((*path, "receivers")):
        known = ", ".join(sorted(receivers)) or "none"
        for severity, receiver_name in _rightly_named(args.get("routes", {}), SEVERITY).items():
            where = (*path, "routes", severity)
            if problems.clean(where) and receiver_name not in receivers:
                problems.add(where, f"{receiver_name!r} names no receiver of receivers ({known})")


def receiver_rules(problems: ArgProblems, path: ArgPath, name: str, receiver: AlertReceiver) -> None:
    """A receiver's name apart from the null receiver's, at least one integration, one form of each credential."""
    if name == NULL_RECEIVER:
        problems.add(path, f"the name {NULL_RECEIVER!r} is taken: it receives what no route claims")
    if not any(integration in receiver for integration in INTEGRATIONS) and problems.clean(path):
        problems.add(path, f"names no integration; give one or more of {', '.join(INTEGRATIONS)}")
    credentials: list[tuple[ArgPath, ReceiverCredential | None]] = [
        (("slack", "webhook_url"), receiver.get("slack", {}).get("webhook_url")),
        (("pagerduty", "routing_key"), receiver.get("pagerduty", {}).get("routing_key")),
        (("webhook", "url"), receiver.get("webhook", {}).get("url")),
    ]
    for steps, credential in credentials:
        where = (*path, *steps)
        if credential is None or not problems.clean(where):
            continue
        given = [part for part in ("value", "secret") if part in credential]
        if len(given) != 1:
            problems.add(
                where,
                f"sets {'both' if given else 'neither'} value {'and' if given else 'nor'} secret; give exactly one",
            )


_BELOW_ONE = {
    "failure_ratio": "a failure ratio of 1 would never fire",
    "gpu_utilization_low": "a utilization mark of 1 would fire nearly always",
}


def alert_rules(problems: ArgProblems, path: ArgPath, thresholds: AlertThresholds) -> None:
    """The ratios a threshold of exactly 1 makes meaningless (their Setting bounds them at most 1)."""
    for key, why in _BELOW_ONE.items():
        value = cast(Mapping[str, float], thresholds).get(key, 0.0)
        where = (*path, key)
        if problems.clean(where) and value >= 1:
            problems.add(where, f"{value:g} is not below 1: {why}")


def _tail_objective(problems: ArgProblems, checked: MonitoringArgs) -> None:
    _p99_at_least_p95(problems, (), cast(Mapping[str, int], checked), "latency_slo_ms", "latency_p99_slo_ms")


def _p99_at_least_p95(problems: ArgProblems, path: ArgPath, values: Mapping[str, int], p95: str, p99: str) -> None:
    """A p99 objective below its p95: no distribution meets it without meeting a tighter p95."""
    low, high = values.get(p95), values.get(p99)
    if low is not None and high is not None and high < low and problems.clean((*path, p95), (*path, p99)):
        problems.add(
            (*path, p99),
            f"{high} is below the p95 objective ({low} ms): a p99 is never below the p95; give at least {low}",
        )


def token_objective_rules(problems: ArgProblems, path: ArgPath, objectives: TokenObjectives) -> None:
    """A p99 objective below its p95 (no distribution meets it without a tighter p95), an objective its histogram's
    buckets cannot see broken, and an inter-token objective where the series the model is measured by report
    none."""
    values = cast(Mapping[str, int], objectives)
    _p99_at_least_p95(problems, path, values, "time_to_first_token_p95_ms", "time_to_first_token_p99_ms")
    _p99_at_least_p95(problems, path, values, "inter_token_p95_ms", "inter_token_p99_ms")
    metrics = objectives.get("metrics", TOKEN_METRICS[0])
    if not problems.clean((*path, "metrics")):
        return
    _within_top_buckets(problems, path, values, metrics)
    if SOURCES[metrics][1] is None:
        for key in ("inter_token_p95_ms", "inter_token_p99_ms"):
            if key in objectives:
                problems.add(
                    (*path, key),
                    "needs metrics 'vllm', the vLLM backend's: Triton reports no inter-token latency (its only token "
                    "series is the first-response histogram), so this objective could never be measured; remove it, "
                    "or serve the model with the vLLM backend and its metrics",
                )


OBJECTIVE_HISTOGRAM = {
    "time_to_first_token_p95_ms": 0,
    "time_to_first_token_p99_ms": 0,
    "inter_token_p95_ms": 1,
    "inter_token_p99_ms": 1,
}
"""Which of a source's histograms (token_signal.SOURCES: first token, then between tokens) each objective reads."""


def _within_top_buckets(problems: ArgProblems, path: ArgPath, values: Mapping[str, int], metrics: str) -> None:
    """An objective at or above the highest bucket of the histogram it is read from: never seen broken."""
    for key, which in OBJECTIVE_HISTOGRAM.items():
        value, top, histogram = values.get(key), TOP_BUCKET_MS[metrics][which], SOURCES[metrics][which]
        if value is None or top is None or histogram is None or value < top or not problems.clean((*path, key)):
            continue
        problems.add(
            (*path, key),
            f"{value} is at or above the highest bucket of {histogram[0]} ({top:g} ms): a percentile above it reads "
            f"as {top:g} ms, so this objective could never be seen broken; give less than {top:g}",
        )


def _labels_of_the_components_own(problems: ArgProblems, checked: MonitoringArgs) -> None:
    """User labels the component would overwrite on some of its objects without a word."""
    labels = checked.get("labels", {})
    own = dict(DASHBOARD_LABEL)
    if problems.clean(("selector_labels",)):
        own.update(checked.get("selector_labels", {}))
    if checked.get("mode") == "install":
        own.update(POD_SECURITY_LABELS)
    for key, value in labels.items():
        if key in own and own[key] != value and problems.clean(("labels", key)):
            problems.add(
                ("labels", key),
                f"{excerpt(value)} differs from {own[key]!r}, which the component sets on {_setter(key, checked)}; "
                "leave it out or give that value",
            )


def _setter(key: str, checked: MonitoringArgs) -> str:
    if key in DASHBOARD_LABEL:
        return "its dashboards (Grafana's sidecar loads them by it)"
    if key in POD_SECURITY_LABELS:
        return "the namespace mode install creates"
    return "the objects the operator selects (args.selector_labels)"
