"""The one walker every component checks its Args with (triton_platform/args/arg_schema.py), on Args of its own:
each class of mistake named at its path, defaults applied through nested records, whole floats made ints."""

# No `from __future__ import annotations`: a TypedDict reads NotRequired only from evaluated annotations.
from typing import Any, NotRequired, TypedDict

import pulumi
import pytest

from tests.support.mocks import pulumi_test
from triton_platform.args.arg_problems import ArgProblems, ArgsError
from triton_platform.args.arg_schema import Setting, declare, resolve_record
from triton_platform.args.formats import NAMESPACE


class Limits(TypedDict):
    """A nested settings object."""

    cpu: NotRequired[int]
    ratio: NotRequired[float]


class Probe(TypedDict):
    """Args of a component of the test's own."""

    namespace: str
    peer: NotRequired[pulumi.Input[str]]
    replicas: NotRequired[int]
    enabled: NotRequired[bool]
    mode: NotRequired[str]
    tags: NotRequired[list[str]]
    labels: NotRequired[dict[str, str]]
    limits: NotRequired[Limits]


declare(Limits, cpu=Setting(default=2, minimum=1, maximum=64), ratio=Setting(default=0.5, above=0, maximum=1))
declare(
    Probe,
    namespace=Setting(format=NAMESPACE),
    peer=Setting(format=NAMESPACE),
    replicas=Setting(default=1, minimum=0, maximum=2**31 - 1),
    enabled=Setting(default=False),
    mode=Setting(default="a", choices=("a", "b")),
    tags=Setting(default=[], min_length=1, unique=True),
    labels=Setting(default={}),
    limits=Setting(default={}),
)


def problems_of(args: Any) -> list[str]:
    problems = ArgProblems("Probe", "p")
    resolve_record(problems, (), args, Probe)
    with pytest.raises(ArgsError) as raised:
        problems.check()
    return [line.removeprefix("Probe p: ") for line in str(raised.value).splitlines()]


def test_defaults_fill_nested_records_and_whole_floats_are_ints() -> None:
    problems = ArgProblems("Probe", "p")
    resolved = resolve_record(problems, (), {"namespace": "ml", "replicas": 3.0, "limits": {"ratio": 1}}, Probe)
    problems.check()
    assert resolved == {
        "namespace": "ml",
        "replicas": 3,
        "enabled": False,
        "mode": "a",
        "tags": [],
        "labels": {},
        "limits": {"cpu": 2, "ratio": 1.0},
    }
    assert type(resolved["replicas"]) is int


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(None, ["args: missing: give Probe, a mapping of its keys"], id="no-args"),
        pytest.param(["ml"], ["args: ['ml'] is not a mapping of Probe's keys"], id="a-list-for-the-args"),
        pytest.param({}, ["args.namespace: missing (required)"], id="required"),
        pytest.param(
            {"namespace": "ml", "limits": {"cpus": 4}},
            ["args.limits.cpus: unknown key; known keys: cpu, ratio (did you mean 'cpu'?)"],
            id="misspelt-nested-key",
        ),
        pytest.param(
            {"namespace": "ml", "limits": "small"},
            ["args.limits: 'small' is not a mapping of Limits's keys"],
            id="string-for-a-settings-object",
        ),
        pytest.param(
            {"namespace": "ml", "tags": "gpu"},
            ["args.tags: 'gpu' is a string, not a list; a list of one is ['gpu']"],
            id="string-for-a-list",
        ),
        pytest.param(
            {"namespace": "ml", "enabled": "false"},
            ["args.enabled: 'false' is a string; write the boolean true or false, unquoted"],
            id="string-false",
        ),
        pytest.param(
            {"namespace": "ml", "replicas": 2**31, "limits": {"ratio": float("inf")}},
            [
                "args.replicas: 2147483648 is above the maximum 2147483647",
                "args.limits.ratio: inf is not a finite number",
            ],
            id="bounds",
        ),
        pytest.param(
            {"namespace": "ML Team", "mode": "c", "tags": ["x", "x", ""]},
            [
                "args.namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with a "
                "letter or digit); got 'ML Team'",
                "args.mode: 'c' is not one of a, b",
                "args.tags[2]: is empty; give a value",
                "args.tags: 'x' is listed twice; list each once",
            ],
            id="formats-choices-and-lists",
        ),
        pytest.param(
            {"namespace": "ml", "labels": {"a b\n": 1}},
            ['args.labels["a b\\n"]: 1 is not a string'],
            id="an-odd-key-named-exactly-on-one-line",
        ),
    ],
)
def test_each_mistake_is_named_at_its_path(args: Any, expected: list[str]) -> None:
    assert problems_of(args) == expected


@pulumi_test
def test_an_output_is_taken_for_an_input_and_refused_for_a_plain_arg() -> None:
    namespace = pulumi.Output.from_input("ml")
    assert problems_of({"namespace": namespace, "peer": pulumi.Output.from_input("monitoring")}) == [
        "args.namespace: is an Output, but this Arg must be a plain value known when the program runs (the "
        "component builds names, queries or files from it); pass the value itself"
    ]


def _peer(value: str) -> Any:
    """The program: Probe's Args with `peer` another resource's Output resolving to `value`; the checked peer."""

    def program() -> pulumi.Output[str]:
        problems = ArgProblems("Probe", "p")
        resolved = resolve_record(problems, (), {"namespace": "ml", "peer": pulumi.Output.from_input(value)}, Probe)
        problems.check()  # nothing to say yet: the peer is not known
        peer: pulumi.Output[str] = resolved["peer"]
        return peer.apply(
            lambda known: pytest.fail(f"a bad peer resolved: {known!r}") if known != "monitoring" else known
        )

    return pulumi_test(program)()


def test_an_output_is_checked_as_it_resolves() -> None:
    """A name the API server would refuse, known only when another resource is created: the update stops on it,
    naming the Arg, as the program stops on a plain value."""
    _peer("monitoring")
    with pytest.raises(ArgsError) as raised:
        _peer("Not_A_Namespace")
    assert str(raised.value) == (
        "Probe p: args.peer: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with a letter "
        "or digit); got 'Not_A_Namespace'"
    )


def test_declaring_a_key_the_type_lacks_is_a_bug() -> None:
    with pytest.raises(TypeError, match="Probe has no key size"):
        declare(Probe, size=Setting())
