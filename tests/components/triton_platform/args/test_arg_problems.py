"""The shared checks of component Args: every problem named by component, name and Arg path, raised together, as data
(an Args path and a reason) and as the SDK's InputPropertiesError."""

from __future__ import annotations

import pickle
from typing import cast

import pytest
from pulumi.errors import InputPropertiesError

from triton_platform.args.arg_problems import ArgProblem, ArgProblems, ArgsError, path_text
from triton_platform.gpu_pool.gpu_node_pool_args import GpuNodePoolArgs, pool_of


def test_every_problem_is_raised_together_naming_component_name_and_path() -> None:
    problems = ArgProblems("GpuNodePool", "gpu")
    assert problems.integer(("min_nodes",), 2.0, minimum=0) == 2
    problems.integer(("max_nodes",), 1.5)
    problems.integer(("gpus_per_node",), 0, minimum=1)
    problems.integer(("replicas",), 9, maximum=8)
    problems.integer(("count",), True)
    with pytest.raises(ArgsError) as raised:
        problems.check()
    assert str(raised.value).splitlines() == [
        "GpuNodePool gpu: args.max_nodes: 1.5 is not a whole number",
        "GpuNodePool gpu: args.gpus_per_node: 0 is below the minimum 1",
        "GpuNodePool gpu: args.replicas: 9 is above the maximum 8",
        "GpuNodePool gpu: args.count: True is not a whole number",
    ]


def test_args_without_problems_pass() -> None:
    problems = ArgProblems("Monitoring", "mon")
    assert problems.integer(("latency_slo_ms",), 200, minimum=1) == 200
    problems.check()


def test_a_number_out_of_bounds_names_every_bound_and_a_file_problem_names_its_file() -> None:
    problems = ArgProblems("KedaScaling", "k")
    assert problems.number(("ratio",), 0.5, above=0, at_most=1) == 0.5
    assert problems.number(("threshold",), 3, above=0) == 3.0
    problems.number(("ratio",), 1.5, above=0, at_most=1)
    problems.number(("activation",), -1, at_least=0)
    problems.number(("threshold",), "ten", above=0)
    problems.number(("threshold",), False, above=0)
    problems.add_at("/repo/m/config.pbtxt", "max_batch_size is 0")
    with pytest.raises(ArgsError) as raised:
        problems.check()
    assert str(raised.value).splitlines() == [
        "KedaScaling k: args.ratio: 1.5 is not above 0 and at most 1",
        "KedaScaling k: args.activation: -1 is not at least 0",
        "KedaScaling k: args.threshold: 'ten' is not a number",
        "KedaScaling k: args.threshold: False is not a number",
        "KedaScaling k: /repo/m/config.pbtxt: max_batch_size is 0",
    ]


def test_problems_are_data_and_the_sdks_input_properties_error() -> None:
    """The paths are tuples, never parsed back from text; odd keys are quoted only when written."""
    problems = ArgProblems("Monitoring", "mon")
    problems.add(("labels", "app.kubernetes.io/part-of"), "differs")
    problems.add(("receivers", "on call", "slack", "channel"), "missing")
    problems.add(("taints", 1), "twice")
    problems.add((), "the Args as a whole")
    problems.add_at("/repo/m/config.pbtxt", "max_batch_size is 0")
    assert not problems.clean(("labels",))
    assert not problems.clean(("taints", 1))
    # A sibling sharing a prefix of the name is another Arg (`labels` is not `label`), and a file is no Arg.
    assert problems.clean(("label",), ("taints", 0))
    with pytest.raises(InputPropertiesError) as raised:
        problems.check()
    error = raised.value
    assert isinstance(error, ArgsError)
    assert error.problems == [
        ArgProblem(("labels", "app.kubernetes.io/part-of"), "differs"),
        ArgProblem(("receivers", "on call", "slack", "channel"), "missing"),
        ArgProblem(("taints", 1), "twice"),
        ArgProblem((), "the Args as a whole"),
        ArgProblem((), "max_batch_size is 0", "/repo/m/config.pbtxt"),
    ]
    # With no Args type to name them by, the errors name the Args paths.
    assert error.errors == [
        {"property_path": 'labels["app.kubernetes.io/part-of"]', "reason": "differs"},
        {"property_path": 'receivers["on call"].slack.channel', "reason": "missing"},
        {"property_path": "taints[1]", "reason": "twice"},
        {"property_path": "", "reason": "the Args as a whole"},
    ]
    copied = pickle.loads(pickle.dumps(error))  # a process pool or pytest-xdist carries it whole
    assert (type(copied), copied.problems, str(copied)) == (ArgsError, error.problems, str(error))
    assert str(error).splitlines() == [
        'Monitoring mon: args.labels["app.kubernetes.io/part-of"]: differs',
        'Monitoring mon: args.receivers["on call"].slack.channel: missing',
        "Monitoring mon: args.taints[1]: twice",
        "Monitoring mon: args: the Args as a whole",
        "Monitoring mon: /repo/m/config.pbtxt: max_batch_size is 0",
    ]


def test_a_long_key_is_cut_in_the_text_and_kept_whole_in_the_data() -> None:
    key = "k" * 300
    assert path_text(("labels", key)).endswith('…"]')
    assert len(path_text(("labels", key))) < 100
    problems = ArgProblems("Monitoring", "mon")
    problems.add(("labels", key), "too long")
    with pytest.raises(ArgsError) as raised:
        problems.check()
    assert raised.value.problems[0].path == ("labels", key)


def test_a_components_errors_name_its_inputs_as_the_engine_does() -> None:
    """The SDK's property paths: the component's inputs camelCase (the package schema's names), a user's keys whole."""
    with pytest.raises(ArgsError) as raised:
        pool_of("gpu", cast(GpuNodePoolArgs, {"gpus_per_node": 0, "labels": {"a.b/c_d": "x y"}, "taints": [{}]}))
    assert [e["property_path"] for e in raised.value.errors or []] == [
        "workloadNamespace",
        "maxNodes",
        "gpusPerNode",
        "taints[0].key",
        'labels["a.b/c_d"]',
    ]
    assert str(raised.value).splitlines()[2] == "GpuNodePool gpu: args.gpus_per_node: 0 is below the minimum 1"


def test_a_number_that_is_not_finite_is_no_whole_number() -> None:
    problems = ArgProblems("GpuNodePool", "gpu")
    for value in (float("inf"), float("nan"), -float("inf")):
        assert problems.integer(("max_nodes",), value) == 0
    assert [p.reason for p in problems.problems] == [
        "inf is not a whole number",
        "nan is not a whole number",
        "-inf is not a whole number",
    ]
