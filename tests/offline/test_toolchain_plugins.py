"""The random provider the toolchain supplies itself (toolchain/random_provider.py): its rules, without the CLI.

The end-to-end tests (test_pulumi_e2e.py) run it under the real CLI.
"""

from __future__ import annotations

import string

import bcrypt
import pytest
from google.protobuf import json_format, struct_pb2
from pulumi.runtime.proto import provider_pb2

from toolchain import random_provider as rp


def checked(**inputs: object) -> dict[str, object]:
    return rp.with_defaults(dict(inputs))


def reasons(**inputs: object) -> list[str]:
    return [f"{f.field}: {f.reason}" for f in rp.check(checked(**inputs))]


def test_defaults_follow_terraform_random() -> None:
    inputs = checked(length=12)
    assert inputs == {
        "length": 12,
        "lower": True,
        "upper": True,
        "numeric": True,
        "number": True,
        "special": True,
        "minLower": 0,
        "minUpper": 0,
        "minNumeric": 0,
        "minSpecial": 0,
    }
    # The deprecated `number` still switches digits off when `numeric` is not given.
    assert checked(length=4, number=False)["numeric"] is False


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({"length": 0}, "length: length must be an integer of at least 1, got 0"),
        ({}, "length: length must be an integer of at least 1, got None"),
        ({"length": 4, "minUpper": -1}, "minUpper: minUpper must be an integer of at least 0, got -1"),
        ({"length": 4, "minSpecial": 2, "special": False}, "minSpecial: minSpecial is 2 but special is false"),
        ({"length": 3, "minLower": 2, "minNumeric": 2}, "length: length 3 is shorter than the sum of the minimums (4)"),
        (
            {"length": 3, "lower": False, "upper": False, "numeric": False, "special": False},
            "length: at least one of lower, upper, numeric and special must be true",
        ),
    ],
)
def test_bad_inputs_are_named(inputs: dict[str, object], expected: str) -> None:
    assert expected in reasons(**inputs)


def test_good_inputs_pass() -> None:
    assert reasons(length=40, special=False) == []


def test_generated_values_honour_classes_and_minimums() -> None:
    inputs = checked(length=40, special=False, minUpper=5, minNumeric=5)
    for _ in range(50):
        value = rp.generate(inputs)
        assert len(value) == 40
        assert set(value) <= set(string.ascii_letters + string.digits)
        assert sum(c.isupper() for c in value) >= 5
        assert sum(c.isdigit() for c in value) >= 5
    assert len({rp.generate(inputs) for _ in range(20)}) == 20
    only_override = checked(length=30, lower=False, upper=False, numeric=False, overrideSpecial="#")
    assert rp.generate(only_override) == "#" * 30


def test_outputs_are_secret_and_password_has_a_matching_bcrypt_hash() -> None:
    values = rp.outputs(rp.PASSWORD, checked(length=8), "hunter22")
    assert values["result"] == {rp.SECRET_SIG: rp.SECRET_MARKER, "value": "hunter22"}
    digest = values["bcryptHash"]
    assert isinstance(digest, dict)
    assert bcrypt.checkpw(b"hunter22", digest["value"].encode())
    assert "bcryptHash" not in rp.outputs(rp.STRING, checked(length=8), "x" * 8)


class AbortedError(Exception):
    pass


class Context:
    def abort(self, code: object, message: str) -> None:
        raise AbortedError(message)


def struct(values: dict[str, object]) -> struct_pb2.Struct:
    return rp.dict_to_struct(dict(values))


def test_any_input_change_replaces_and_equal_inputs_do_not() -> None:
    provider = rp.RandomProvider("4.21.4")
    urn = f"urn:pulumi:dev::triton-platform::{rp.PASSWORD}::key"
    olds = checked(length=40, special=False)
    same = provider.Diff(provider_pb2.DiffRequest(urn=urn, olds=struct(olds), news=struct(olds)), Context())
    assert same.changes == provider_pb2.DiffResponse.DIFF_NONE
    longer = provider.Diff(
        provider_pb2.DiffRequest(urn=urn, olds=struct(olds), news=struct({**olds, "length": 48})), Context()
    )
    assert longer.changes == provider_pb2.DiffResponse.DIFF_SOME
    assert list(longer.replaces) == ["length"]


def test_create_previews_unknown_and_creates_a_secret() -> None:
    provider = rp.RandomProvider("4.21.4")
    urn = f"urn:pulumi:dev::triton-platform::{rp.PASSWORD}::key"
    inputs = struct(checked(length=16, special=False))
    preview = provider.Create(provider_pb2.CreateRequest(urn=urn, properties=inputs, preview=True), Context())
    assert json_format.MessageToDict(preview.properties)["result"] == rp.UNKNOWN
    created = provider.Create(provider_pb2.CreateRequest(urn=urn, properties=inputs), Context())
    result = json_format.MessageToDict(created.properties)["result"]
    assert result[rp.SECRET_SIG] == rp.SECRET_MARKER
    assert len(result["value"]) == 16


def test_unserved_types_fail_with_their_name() -> None:
    urn = "urn:pulumi:dev::triton-platform::random:index/randomUuid:RandomUuid::id"
    with pytest.raises(AbortedError, match="random:index/randomUuid:RandomUuid is not provided"):
        rp.RandomProvider("4.21.4").Check(provider_pb2.CheckRequest(urn=urn, news=struct({})), Context())
