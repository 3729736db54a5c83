"""`stackctl validate` runs the components' own checks (program/component_checks.py), named in stack keys."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from platform_config.kubernetes import RENDER_OVERRIDE_ENV
from platform_config.loader import load_stack, load_stack_file
from platform_config.paths import PROJECT_ROOT
from platform_config.schema import PlatformConfig
from program.component_checks import (
    Component,
    Field,
    Key,
    Step,
    arg_steps,
    component_issues,
    deployable,
    gpu_pool_key,
    issues_of,
    monitoring_key,
    scaling_key,
    serving_key,
)
from program.platform import cluster_version, gpu_pool_args
from stackctl.main import main
from tests.cluster.test_cluster_preflight import api_server
from tests.conftest import STACKS
from triton_platform.args.arg_problems import ArgProblem, ArgsError
from triton_platform.gpu_pool.gpu_node_pool_args import GpuNodePoolArgs, pool_of
from triton_platform.monitoring.monitoring_args import MonitoringArgs
from triton_platform.serving.triton_serving_args import TritonServingArgs


@pytest.fixture(scope="module")
def dev() -> PlatformConfig:
    return load_stack("dev").config


def _dev_config() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((PROJECT_ROOT / "stacks/Pulumi.dev.yaml").read_text())
    return document


def _validate(tmp_path: Path, document: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> tuple[Path, list[str]]:
    """`stackctl validate` of `document` written as a stack file: its exit code must be 1; its error lines."""
    bad = tmp_path / "Pulumi.dev.yaml"
    bad.write_text(yaml.safe_dump(document))
    # Findings: exit 1, each at the file, line and column of its key.
    assert main(["validate", "--config", str(bad)]) == 1
    return bad, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("stack", STACKS)
def test_the_committed_stacks_pass_the_components_checks(stack: str) -> None:
    assert component_issues(load_stack(stack)) == []


def test_a_deployment_named_like_the_loaders_objects_fails_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _dev_config()
    serving = document["config"]["triton-platform:serving"]
    serving["deployments"] = {"model-loader": serving["deployments"]["general"]}
    bad, err = _validate(tmp_path, document, capsys)
    assert err == [
        f"{bad}: 1 config error",
        f"{bad}:60:7: triton-platform:serving.deployments.model-loader: 'model-loader' would name this deployment's "
        "objects triton-model-loader, the name of the NetworkPolicy this component adds for its model loader; name "
        "the deployment otherwise",
    ]


def test_a_p99_objective_below_the_p95_one_fails_validate_at_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _dev_config()
    serving = document["config"]["triton-platform:serving"]
    serving["p99LatencySloMs"] = serving["p95LatencySloMs"] - 1
    bad, err = _validate(tmp_path, document, capsys)
    [line] = [e for e in err if "p99LatencySloMs" in e]
    assert line.endswith(
        f"triton-platform:serving.p99LatencySloMs: {serving['p95LatencySloMs'] - 1} is below the p95 objective "
        f"({serving['p95LatencySloMs']} ms): a p99 is never below the p95; give at least {serving['p95LatencySloMs']}"
    )
    assert err[0] == f"{bad}: 1 config error"


def test_install_only_settings_with_an_existing_install_fail_validate_at_their_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _dev_config()
    config = document["config"]
    assert config["triton-platform:monitoring"]["mode"] == "existing"
    config["triton-platform:monitoring"].update(
        replicas=2, retention="30d", storage={"prometheusSize": "20Gi"}, priorityClassName="monitoring"
    )
    config["triton-platform:scaling"]["keda"] = {"replicas": 2, "priorityClassName": "scaling"}
    _, err = _validate(tmp_path, document, capsys)
    monitoring = (
        "applies only to mode 'install': in mode 'existing' this component installs no Prometheus or Alertmanager, "
        "so the setting would do nothing; remove it or set mode 'install'"
    )
    keda = (
        "applies only to keda.mode 'install': in mode 'existing' this component installs no KEDA, so the setting "
        "would do nothing; remove it or set keda.mode 'install'"
    )
    found = sorted(line.split(": ", 1)[1] for line in err[1:])
    assert found == sorted(
        [
            *(f"triton-platform:monitoring.{key}: {monitoring}" for key in ("replicas", "retention", "storage")),
            f"triton-platform:monitoring.priorityClassName: {monitoring}",
            f"triton-platform:scaling.keda.replicas: {keda}",
            f"triton-platform:scaling.keda.priorityClassName: {keda}",
        ]
    )


def test_two_deployments_with_one_ingress_host_fail_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _dev_config()
    serving = document["config"]["triton-platform:serving"]
    # At one replica each: no wake from zero (dev's `general` idles at zero).
    general = {key: value for key, value in serving["deployments"]["general"].items() if key != "wake"}
    # `api`'s gRPC host is `api-grpc.<baseDomain>`, the HTTP host of deployment `api-grpc`.
    serving["deployments"] = {
        "api": {**general, "replicas": {"min": 1, "max": 1}},
        "api-grpc": {**general, "replicas": {"min": 1, "max": 1}},
    }
    serving["ingress"] = {"enabled": True, "baseDomain": "ml.example.com", "tlsSecretName": "triton-tls"}
    bad, err = _validate(tmp_path, document, capsys)
    assert err == [
        f"{bad}: 1 config error",
        f"{bad}:70:7: triton-platform:serving.deployments.api-grpc: its ingress host 'api-grpc.ml.example.com' is also "
        "deployment 'api''s; name the deployment otherwise",
    ]


def test_a_selector_label_against_a_label_the_component_sets_fails_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _dev_config()
    document["config"]["triton-platform:monitoring"]["selectorLabels"] = {
        "app.kubernetes.io/part-of": "kube-prometheus-stack"
    }
    bad, err = _validate(tmp_path, document, capsys)
    assert err == [
        f"{bad}: 1 config error",
        f'{bad}:38:7: triton-platform:monitoring.selectorLabels["app.kubernetes.io/part-of"]: Monitoring '
        'args.labels["app.kubernetes.io/part-of"] (a label the platform puts on every object, which this selector label '
        "gives another value): 'triton-platform' differs from 'kube-prometheus-stack', which the component sets on "
        "the objects the operator selects (args.selector_labels); leave it out or give that value",
    ]


def test_a_taint_given_twice_is_named_at_its_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = _dev_config()
    document["config"]["triton-platform:gpuPool"] |= {
        "taints": [{"key": "nvidia.com/gpu", "value": "a"}, {"key": "nvidia.com/gpu", "value": "b"}],
    }
    bad, err = _validate(tmp_path, document, capsys)
    assert err == [
        f"{bad}: 1 config error",
        f"{bad}:16:7: triton-platform:gpuPool.taints[1]: key 'nvidia.com/gpu' with effect 'NoSchedule' is taints[0]'s "
        "too; a node takes each key and effect once",
    ]


def test_a_static_node_listed_twice_is_refused_by_the_schema_in_the_components_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _dev_config()
    document["config"]["triton-platform:gpuPool"] |= {"staticNodes": ["gpu-1", "gpu-2", "gpu-1", "gpu-2"]}
    bad, err = _validate(tmp_path, document, capsys)
    assert err == [
        f"{bad}: 1 config error",
        f"{bad}:13:5: triton-platform:gpuPool.staticNodes: 'gpu-1' is listed twice; 'gpu-2' is listed twice; list each once",
    ]


# The path mapping, case by case.


def _path(key_of: Any, config: PlatformConfig, *steps: Step) -> str:
    return str(key_of(config, steps).path())


def test_record_keys_become_camel_case_and_the_users_keys_stay(dev: PlatformConfig) -> None:
    deployment = (Field("deployments"), Key("general_v2"))
    assert _path(serving_key, dev, *deployment, Field("replicas"), Field("min")) == (
        "triton-platform:serving.deployments.general_v2.replicas.min"
    )
    assert _path(serving_key, dev, *deployment, Field("gpus_per_pod")) == (
        "triton-platform:serving.deployments.general_v2.gpusPerPod"
    )
    assert _path(serving_key, dev, *deployment, Field("models"), 2) == (
        "triton-platform:serving.deployments.general_v2.models[2]"
    )
    assert _path(
        serving_key, dev, Field("model_defaults"), Field("dynamic_batching"), Field("max_queue_delay_microseconds")
    ) == ("triton-platform:serving.modelDefaults.dynamicBatching.maxQueueDelayMicroseconds")
    assert _path(serving_key, dev, Field("inference_clients"), 0, Field("pod_labels"), Key("team_name")) == (
        "triton-platform:serving.inferenceClients[0].podLabels.team_name"
    )
    assert _path(gpu_pool_key, dev, Field("node_labels"), Key("example.com/pool")) == (
        'triton-platform:gpuPool.nodeLabels["example.com/pool"]'
    )
    assert _path(gpu_pool_key, dev, Field("device_plugin"), Field("time_slicing_replicas")) == (
        "triton-platform:gpuPool.devicePlugin.timeSlicingReplicas"
    )
    assert _path(monitoring_key, dev, Field("receivers"), Key("on_call"), Field("slack"), Field("webhook_url")) == (
        "triton-platform:monitoring.receivers.on_call.slack.webhookUrl"
    )
    assert _path(scaling_key, dev, Field("fallback"), Field("failure_threshold")) == (
        "triton-platform:scaling.fallback.failureThreshold"
    )


def test_models_settings_are_the_models_key(dev: PlatformConfig) -> None:
    assert _path(serving_key, dev, Field("models"), Key("my_model"), Field("max_batch_size")) == (
        "triton-platform:models.my_model.maxBatchSize"
    )


def test_args_set_under_another_name_are_named_at_their_stack_key(dev: PlatformConfig) -> None:
    assert (
        _path(monitoring_key, dev, Field("prometheus_namespace")) == "triton-platform:monitoring.prometheus.namespace"
    )
    assert _path(monitoring_key, dev, Field("prometheus_pod_labels"), Key("app")) == (
        "triton-platform:monitoring.prometheus.podLabels.app"
    )
    assert _path(monitoring_key, dev, Field("latency_slo_ms")) == "triton-platform:serving.p95LatencySloMs"
    assert _path(monitoring_key, dev, Field("deployments"), Key("general"), Field("max_replicas")) == (
        "triton-platform:serving.deployments.general.replicas.max"
    )
    # dev scales on the busy ratio.
    assert _path(monitoring_key, dev, Field("deployments"), Key("general"), Field("signal"), Field("target")) == (
        "triton-platform:scaling.busyRatioTarget"
    )
    assert _path(scaling_key, dev, Field("targets"), Key("general"), Field("min_replicas")) == (
        "triton-platform:serving.deployments.general.replicas.min"
    )
    assert _path(serving_key, dev, Field("namespace")) == "triton-platform:kubernetes.namespace"
    assert _path(serving_key, dev, Field("metrics_namespace")) == "triton-platform:monitoring.prometheus.namespace"
    assert _path(serving_key, dev, Field("autoscaled")) == "triton-platform:scaling.enabled"
    assert _path(serving_key, dev, Field("image_digests"), Key("nvcr.io/nvidia/tritonserver:24.10-py3")) == (
        'triton-platform:imageDigests["nvcr.io/nvidia/tritonserver:24.10-py3"]'
    )
    assert _path(serving_key, dev, Field("pool"), Field("gpu_resource")) == "triton-platform:gpuPool.resourceName"
    assert _path(gpu_pool_key, dev, Field("workload_namespace")) == "triton-platform:kubernetes.namespace"
    assert _path(gpu_pool_key, dev, Field("metrics_selector_labels"), Key("release")) == (
        "triton-platform:monitoring.selectorLabels.release"
    )
    assert _path(gpu_pool_key, dev, Field("gpu_operator_namespace")) == "triton-platform:cluster.gpuOperator.namespace"
    assert _path(monitoring_key, dev, Field("token_objectives"), Key("chat"), Field("inter_token_p95_ms")) == (
        "triton-platform:serving.tokenObjectives.chat.interTokenP95Ms"
    )
    derived = monitoring_key(dev, (Field("token_objectives"), Key("chat"), Field("metrics")))
    assert (derived.path(), derived.note) == (
        "triton-platform:serving.tokenObjectives.chat",
        "the series the model's backend gives",
    )


def test_an_arg_the_program_derives_names_its_section_and_keeps_the_args_path(dev: PlatformConfig) -> None:
    key = monitoring_key(dev, (Field("labels"), Key("app.kubernetes.io/managed-by")))
    assert (key.path(), key.note) == (
        "triton-platform:monitoring",
        "the platform's labels, which the program sets from triton-platform:environment",
    )
    assert serving_key(dev, (Field("protect_model_claim"),)).path() == "triton-platform:serving"
    component = Component(
        "GpuNodePool", "dev-gpu-pool", GpuNodePoolArgs, {"labels": {"a": "b"}}, "triton-platform:gpuPool", gpu_pool_key
    )
    error = ArgsError("GpuNodePool dev-gpu-pool", [ArgProblem(("labels", "a"), "is wrong")])
    [issue] = issues_of(dev, component, error)
    assert (issue.path, issue.message) == (
        "triton-platform:gpuPool",
        "GpuNodePool args.labels.a (the platform's labels, which the program sets from triton-platform:environment): "
        "is wrong",
    )


def test_a_problem_located_outside_the_args_is_named_at_the_section(dev: PlatformConfig) -> None:
    component = Component("TritonServing", "dev-serving", TritonServingArgs, {}, "triton-platform:serving", serving_key)
    error = ArgsError("TritonServing dev-serving", [ArgProblem((), "above 1 MiB", "/models/big/1/model.onnx")])
    assert [(i.path, i.message) for i in issues_of(dev, component, error)] == [
        ("triton-platform:serving", "TritonServing: /models/big/1/model.onnx: above 1 MiB")
    ]


def test_args_paths_are_read_against_the_args_type() -> None:
    """A problem's path is data: the Args type tells a field from a user's key, whatever the key holds."""
    assert arg_steps(MonitoringArgs, ("labels", "app.kubernetes.io/part-of")) == (
        Field("labels"),
        Key("app.kubernetes.io/part-of"),
    )
    assert arg_steps(MonitoringArgs, ("receivers", "on call", "slack", "channel")) == (
        Field("receivers"),
        Key("on call"),
        Field("slack"),
        Field("channel"),
    )
    assert arg_steps(GpuNodePoolArgs, ("taints", 1, "key")) == (Field("taints"), 1, Field("key"))
    # A key named like a field is a key where the Args hold a map.
    assert arg_steps(MonitoringArgs, ("deployments", "labels")) == (Field("deployments"), Key("labels"))


def _stack_with(tmp_path: Path, stack: str, section: str, *path: str, value: Any) -> Path:
    """`stack`'s file with `section`.`path` set to `value`, written beside the committed stacks' project file."""
    document: dict[str, Any] = yaml.safe_load((PROJECT_ROOT / f"stacks/Pulumi.{stack}.yaml").read_text())
    node = document["config"][f"triton-platform:{section}"]
    for step in path[:-1]:
        node = node.setdefault(step, {})
    node[path[-1]] = value
    written = tmp_path / f"Pulumi.{stack}.yaml"
    written.write_text(yaml.safe_dump(document))
    return written


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            ("scaling", ("keda", "namespace"), "monitoring"),
            "triton-platform:scaling: KedaScaling would create v1/Namespace monitoring, which Monitoring "
            "(triton-platform:monitoring) creates already; give one of them another name or namespace",
            id="keda-in-prometheus-namespace",
        ),
        pytest.param(
            ("monitoring", ("prometheus", "namespace"), "triton-production"),
            "triton-platform:monitoring: Monitoring would create v1/Namespace triton-production, which the platform "
            "(triton-platform:kubernetes.namespace) creates already; give one of them another name or namespace",
            id="prometheus-in-serving-namespace",
        ),
    ],
)
def test_an_object_two_components_would_create_fails_validate_at_a_stack_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, tuple[str, ...], str], expected: str
) -> None:
    """Found before, only in synth or `pulumi up`: one ArgsError for the whole component, with no stack key."""
    section, path, value = change
    stack = _stack_with(tmp_path, "production", section, *path, value=value)
    assert main(["validate", "--config", str(stack)]) == 1
    errors = [line.split(": ", 1)[1] for line in capsys.readouterr().err.splitlines()[1:]]
    assert expected in errors, errors
    # synth (and the program, `pulumi up`) stop on it as validate does, before any object is built.
    assert main(["synth", "--config", str(stack), "--no-charts", "--out", str(tmp_path / "out")]) == 2
    assert f"{stack}: {expected}" in capsys.readouterr().err.splitlines()
    assert not (tmp_path / "out").exists()


def test_a_cluster_autoscaler_of_another_minor_fails_validate_in_render_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Where the stack states its cluster's version (render mode), the pool's autoscaler must be of its minor."""
    document: dict[str, Any] = yaml.safe_load((PROJECT_ROOT / "stacks/Pulumi.staging.yaml").read_text())
    config = document["config"]
    config["triton-platform:kubernetes"] = {"mode": "render", "namespace": "triton-staging", "kubeVersion": "v1.33.2"}
    config["triton-platform:gpuPool"]["clusterAutoscaler"]["image"] = (
        "registry.k8s.io/autoscaling/cluster-autoscaler:v1.31.0"
    )
    stack = tmp_path / "Pulumi.staging.yaml"
    stack.write_text(yaml.safe_dump(document))
    assert main(["validate", "--config", str(stack)]) == 1
    errors = [line.split(": ", 1)[1] for line in capsys.readouterr().err.splitlines()[1:]]
    assert errors == [
        "triton-platform:gpuPool.clusterAutoscaler.image: 'registry.k8s.io/autoscaling/cluster-autoscaler:v1.31.0' is "
        "cluster-autoscaler 1.31, but the cluster runs Kubernetes 1.33 (v1.33.2); a cluster-autoscaler release "
        "supports only its own minor: use a v1.33 release (the default, "
        "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.6)"
    ]
    del config["triton-platform:gpuPool"]["clusterAutoscaler"]["image"]
    stack.write_text(yaml.safe_dump(document))
    assert main(["validate", "--config", str(stack)]) == 0, capsys.readouterr().err


def _deploying_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """The `staging` context of a kubeconfig of its own names the API server at `url`; no render override."""
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: '{url}'}}}}]\n"
        "contexts: [{name: staging, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
    )
    monkeypatch.setenv("KUBECONFIG", str(config))
    for variable in (RENDER_OVERRIDE_ENV, "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(variable, raising=False)


def test_at_preview_the_api_servers_minor_is_the_autoscalers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deploying, the program reads the cluster's version from its API server: the default image follows its
    minor, and a hand-set image of another minor stops the run at the stack key."""
    document: dict[str, Any] = yaml.safe_load((PROJECT_ROOT / "stacks/Pulumi.staging.yaml").read_text())
    with api_server(tmp_path, b'{"gitVersion": "v1.33.2-gke.1200000"}') as (_, url):
        _deploying_to(tmp_path, monkeypatch, url)
        staging = load_stack("staging")
        version = cluster_version(staging)
        assert version == "v1.33.2"
        assert deployable(staging, version) is staging
        pool = pool_of("staging-gpu-pool", gpu_pool_args(staging.config, version))
        assert pool["cluster_autoscaler"]["image"] == "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.6"
        document["config"]["triton-platform:gpuPool"]["clusterAutoscaler"]["image"] = (
            "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.5"
        )
        pinned = tmp_path / "Pulumi.staging.yaml"
        pinned.write_text(yaml.safe_dump(document))
        with pytest.raises(pulumi.RunError) as stopped:
            deployable(load_stack_file(pinned), version)
    assert (
        "triton-platform:gpuPool.clusterAutoscaler.image: 'registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.5' "
        "is cluster-autoscaler 1.34, but the cluster runs Kubernetes 1.33 (v1.33.2)"
    ) in str(stopped.value)


def test_an_api_server_that_hides_its_version_leaves_the_autoscaler_unchecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with api_server(tmp_path, b"{}", status=401) as (_, url):
        _deploying_to(tmp_path, monkeypatch, url)
        assert cluster_version(load_stack("staging")) is None


def _message_texts(folder: Path, calls: set[str]) -> dict[str, str]:
    """The literal text (20 characters or more, with a space) of every message passed to a call named in `calls`
    in the modules under `folder`, each with the module that writes it."""
    found: dict[str, str] = {}
    for module in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name not in calls:
                continue
            for argument in [*node.args[1:], *(k.value for k in node.keywords)]:
                for part in ast.walk(argument):
                    if isinstance(part, ast.Constant) and isinstance(part.value, str):
                        text = part.value.strip()
                        if len(text) >= 20 and " " in text:
                            found.setdefault(text, str(module.relative_to(folder)))
    return found


def test_no_stack_check_repeats_a_component_rules_words() -> None:
    """A rule about a component's Args lives in the component and runs from both doors (`component_rule`, or a
    function of the component's the stack calls): a stack-side check writing a component problem's words again is
    a second copy of that rule, which drifts."""
    components = _message_texts(PROJECT_ROOT / "components" / "triton_platform", {"add", "add_at"})
    stack = _message_texts(PROJECT_ROOT / "platform_config", {"ConfigIssue"})
    assert len(components) > 80  # the scan reads the rules' messages
    assert len(stack) > 80
    repeated = {text: (stack[text], components[text]) for text in set(stack) & set(components)}
    assert repeated == {}


def test_the_repeat_check_sees_a_copied_message(tmp_path: Path) -> None:
    (tmp_path / "rule.py").write_text('problems.add(("x",), f"{v!r} is above max_replicas, which it must not be")\n')
    (tmp_path / "check.py").write_text('ConfigIssue("k", f"{w!r} is above max_replicas, which it must not be")\n')
    assert (
        set(_message_texts(tmp_path, {"add"}))
        == set(_message_texts(tmp_path, {"ConfigIssue"}))
        == {"is above max_replicas, which it must not be"}
    )
