"""The shared checks of component Args: every problem named by component, name and Arg path, raised together."""

from __future__ import annotations

import pytest

from triton_platform.arg_problems import ArgProblems, ArgsError


def test_every_problem_is_raised_together_naming_component_name_and_path() -> None:
    problems = ArgProblems("GpuNodePool", "gpu")
    assert problems.integer("min_nodes", 2.0, minimum=0) == 2
    problems.integer("max_nodes", 1.5)
    problems.integer("gpus_per_node", 0, minimum=1)
    problems.integer("replicas", 9, maximum=8)
    problems.integer("count", True)
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
    assert problems.integer("latency_slo_ms", 200, minimum=1) == 200
    problems.check()


def test_a_number_out_of_bounds_names_every_bound_and_a_file_problem_names_its_file() -> None:
    problems = ArgProblems("KedaScaling", "k")
    assert problems.number("ratio", 0.5, above=0, at_most=1) == 0.5
    assert problems.number("threshold", 3, above=0) == 3.0
    problems.number("ratio", 1.5, above=0, at_most=1)
    problems.number("activation", -1, at_least=0)
    problems.number("threshold", "ten", above=0)
    problems.number("threshold", False, above=0)
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
