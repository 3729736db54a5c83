"""`pulumi-resource-random`: RandomPassword and RandomString for the pulumi-random SDK.

The pulumi-random provider's Go module (github.com/pulumi/pulumi-random/provider/v4)
is not served by the Go module proxy this project builds from, and its upstream
terraform-provider-random keeps its code in `internal/`, which no other module may
import. So the toolchain installs this provider in its place. It serves the two
resource types the platform uses, with the pulumi-random SDK's tokens, inputs and
outputs and terraform-provider-random's rules:

- every input forces a new value (there is no in-place update);
- character classes default on; each `min*` is guaranteed; `overrideSpecial`
  replaces the special set;
- `result` (and the password's `bcryptHash`) are secret outputs;
- values come from the operating system's CSPRNG (`secrets`).

Any other `random:` type fails with a message naming it.
"""

from __future__ import annotations

import argparse
import json
import secrets
import string
import sys
from dataclasses import dataclass
from typing import Any

import bcrypt
import grpc
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import plugin_pb2, provider_pb2, provider_pb2_grpc

from toolchain.plugin_server import serve

PASSWORD = "random:index/randomPassword:RandomPassword"
STRING = "random:index/randomString:RandomString"
# terraform-provider-random's default special characters.
DEFAULT_SPECIAL = "!@#$%&*()-_=+[]{}<>:?"
# Pulumi's wire markers: a secret value, and a value not known until apply.
SECRET_SIG = "4dabf18193072939515e22adb298388d"
SECRET_MARKER = "1b47061264138c4ac30d75fd1eb44270"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
DEFAULTS: dict[str, Any] = {
    "lower": True,
    "upper": True,
    "numeric": True,
    "special": True,
    "minLower": 0,
    "minUpper": 0,
    "minNumeric": 0,
    "minSpecial": 0,
}
MINIMUMS = {"minLower": "lower", "minUpper": "upper", "minNumeric": "numeric", "minSpecial": "special"}


@dataclass(frozen=True)
class Failure:
    field: str
    reason: str


def resource_type(urn: str) -> str:
    return urn.split("::")[-2].rsplit("$", maxsplit=1)[-1]


def to_plain(value: Any) -> Any:
    """A wire value without Pulumi's secret wrapper; whole numbers as int (a Struct holds only floats)."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG) == SECRET_MARKER:
            return to_plain(value.get("value"))
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def secret(value: Any) -> dict[str, Any]:
    return {SECRET_SIG: SECRET_MARKER, "value": value}


def struct_to_dict(struct: struct_pb2.Struct) -> dict[str, Any]:
    return to_plain(json_format.MessageToDict(struct))  # type: ignore[no-any-return]


def dict_to_struct(values: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(values)
    return struct


def with_defaults(inputs: dict[str, Any]) -> dict[str, Any]:
    """The inputs as stored: defaults filled, and `number` (deprecated) kept equal to `numeric`."""
    checked = {**DEFAULTS, **inputs}
    if "number" in inputs and "numeric" not in inputs:
        checked["numeric"] = inputs["number"]
    checked["number"] = checked["numeric"]
    return checked


def check(inputs: dict[str, Any]) -> list[Failure]:
    failures: list[Failure] = []
    length = inputs.get("length")
    if not isinstance(length, int) or length < 1:
        failures.append(Failure("length", f"length must be an integer of at least 1, got {length!r}"))
        return failures
    for key, enabled in MINIMUMS.items():
        if not isinstance(inputs[key], int) or inputs[key] < 0:
            failures.append(Failure(key, f"{key} must be an integer of at least 0, got {inputs[key]!r}"))
        elif inputs[key] > 0 and not inputs[enabled]:
            failures.append(Failure(key, f"{key} is {inputs[key]} but {enabled} is false"))
    minimum = sum(v for k in MINIMUMS if isinstance(v := inputs[k], int))
    if minimum > length:
        failures.append(Failure("length", f"length {length} is shorter than the sum of the minimums ({minimum})"))
    if not any(inputs[flag] for flag in MINIMUMS.values()):
        failures.append(Failure("length", "at least one of lower, upper, numeric and special must be true"))
    return failures


def generate(inputs: dict[str, Any]) -> str:
    special = inputs.get("overrideSpecial") or DEFAULT_SPECIAL
    classes = {
        "lower": string.ascii_lowercase,
        "upper": string.ascii_uppercase,
        "numeric": string.digits,
        "special": special,
    }
    chosen = [secrets.choice(classes[flag]) for key, flag in MINIMUMS.items() for _ in range(inputs[key])]
    pool = "".join(chars for flag, chars in classes.items() if inputs[flag])
    chosen += [secrets.choice(pool) for _ in range(inputs["length"] - len(chosen))]
    # The guaranteed characters must not sit at the front.
    secrets.SystemRandom().shuffle(chosen)
    return "".join(chosen)


def outputs(kind: str, inputs: dict[str, Any], result: str) -> dict[str, Any]:
    values: dict[str, Any] = {**inputs, "result": secret(result)}
    if kind == PASSWORD:
        values["bcryptHash"] = secret(bcrypt.hashpw(result.encode(), bcrypt.gensalt()).decode())
    return values


class RandomProvider(provider_pb2_grpc.ResourceProviderServicer):
    def __init__(self, version: str) -> None:
        self.version = version

    def _kind(self, urn: str, context: Any) -> str:
        kind = resource_type(urn)
        if kind not in (PASSWORD, STRING):
            context.abort(
                grpc.StatusCode.UNIMPLEMENTED,
                f"{kind} is not provided by this toolchain's random provider (it serves {PASSWORD} and {STRING})",
            )
        return kind

    def GetPluginInfo(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC method names
        return plugin_pb2.PluginInfo(version=self.version)

    def GetSchema(self, request: Any, context: Any) -> Any:  # noqa: N802
        return provider_pb2.GetSchemaResponse(schema=json.dumps({"name": "random", "version": self.version}))

    def CheckConfig(self, request: Any, context: Any) -> Any:  # noqa: N802
        return provider_pb2.CheckResponse(inputs=request.news)

    def DiffConfig(self, request: Any, context: Any) -> Any:  # noqa: N802
        return provider_pb2.DiffResponse(changes=provider_pb2.DiffResponse.DIFF_NONE)

    def Configure(self, request: Any, context: Any) -> Any:  # noqa: N802
        return provider_pb2.ConfigureResponse(acceptSecrets=True, supportsPreview=True, acceptResources=True)

    def Check(self, request: Any, context: Any) -> Any:  # noqa: N802
        self._kind(request.urn, context)
        inputs = with_defaults(struct_to_dict(request.news))
        failures = [provider_pb2.CheckFailure(property=f.field, reason=f.reason) for f in check(inputs)]
        return provider_pb2.CheckResponse(inputs=dict_to_struct(inputs), failures=failures)

    def Diff(self, request: Any, context: Any) -> Any:  # noqa: N802
        self._kind(request.urn, context)
        old_inputs = request.old_inputs if request.HasField("old_inputs") else request.olds
        olds, news = struct_to_dict(old_inputs), struct_to_dict(request.news)
        changed = sorted(
            k for k in set(olds) | set(news) if k not in ("result", "bcryptHash") and olds.get(k) != news.get(k)
        )
        if not changed:
            return provider_pb2.DiffResponse(changes=provider_pb2.DiffResponse.DIFF_NONE)
        # A random value cannot be edited: any input change draws a new one.
        return provider_pb2.DiffResponse(
            changes=provider_pb2.DiffResponse.DIFF_SOME, replaces=changed, diffs=changed, deleteBeforeReplace=False
        )

    def Create(self, request: Any, context: Any) -> Any:  # noqa: N802
        kind = self._kind(request.urn, context)
        inputs = struct_to_dict(request.properties)
        if request.preview:
            unknown = {"result": UNKNOWN, **({"bcryptHash": UNKNOWN} if kind == PASSWORD else {})}
            return provider_pb2.CreateResponse(id="", properties=dict_to_struct({**inputs, **unknown}))
        values = outputs(kind, inputs, generate(inputs))
        return provider_pb2.CreateResponse(id="none", properties=dict_to_struct(values))

    def Read(self, request: Any, context: Any) -> Any:  # noqa: N802
        # The value lives only in state: reading returns what the engine holds.
        return provider_pb2.ReadResponse(id=request.id, properties=request.properties, inputs=request.inputs)

    def Update(self, request: Any, context: Any) -> Any:  # noqa: N802
        context.abort(grpc.StatusCode.FAILED_PRECONDITION, "random values are replaced, never updated in place")

    def Delete(self, request: Any, context: Any) -> Any:  # noqa: N802
        return empty_pb2.Empty()

    def Cancel(self, request: Any, context: Any) -> Any:  # noqa: N802
        return empty_pb2.Empty()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="pulumi-resource-random")
    parser.add_argument("--version", required=True, help="the pulumi-random version this provider reports")
    parser.add_argument("engine", nargs="?", help="the engine's address (the CLI passes it last)")
    args, _ = parser.parse_known_args(argv)
    provider = RandomProvider(args.version)
    serve(lambda server: provider_pb2_grpc.add_ResourceProviderServicer_to_server(provider, server), workers=4)


if __name__ == "__main__":
    main(sys.argv[1:])
