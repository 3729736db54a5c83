"""A stream profile's file: each rule with a failing case whose message is asserted, a valid file read back, and any
JSON refused only with a message naming the file (Hypothesis)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from platform_config.stream_profile import STREAM_KEYS, read_stream_profile, stream_fields

VALID: dict[str, Any] = {
    "kind": "stream",
    "model": "tokens",
    "prefill_seconds": 0.05,
    "step_seconds": {"1": 0.04, "8": 0.11, "2": 0.05},
    "max_sequences": 8,
    "output_tokens": 16,
}


def test_a_valid_profile_is_read_with_its_concurrencies_in_order(tmp_path: Path) -> None:
    path = tmp_path / "tokens.stream.json"
    path.write_text(json.dumps({**VALID, "triton_version": "2.51.0"}), encoding="utf-8")
    read = read_stream_profile(path)
    assert (read.model, read.prefill_seconds, read.max_sequences, read.output_tokens) == ("tokens", 0.05, 8, 16)
    assert (read.concurrencies, read.step_seconds) == ((1, 2, 8), (0.04, 0.05, 0.11))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": None}, f"kind is missing; {STREAM_KEYS}"),
        ({"kind": "latency"}, f"kind is '\"latency\"'; {STREAM_KEYS}"),
        ({"model": ""}, "model is '\"\"'; expected the model's name, as Triton's"),
        ({"prefill_seconds": "50ms"}, "prefill_seconds is '\"50ms\"'; expected a finite number of seconds"),
        ({"prefill_seconds": True}, "prefill_seconds is 'true'; expected a finite number of seconds"),
        (
            {"prefill_seconds": 600},
            "prefill_seconds = 600 s is outside 1e-06 to 60 s; expected a request's prefill (is it in ms or us?)",
        ),
        (
            {"step_seconds": None},
            "step_seconds is missing; expected an object of sequences in flight to seconds, at least one, e.g. "
            '{"1": 0.04, "8": 0.11}',
        ),
        ({"step_seconds": {}}, "step_seconds is empty; expected an object of sequences in flight to seconds"),
        ({"step_seconds": [0.04]}, "step_seconds is a JSON list; expected an object of sequences in flight"),
        (
            {"step_seconds": {"0": 0.04}},
            "step_seconds key '0' is not a number of sequences; expected integers >= 1",
        ),
        (
            {"step_seconds": {"1": 0.04, "01": 0.04}},
            "step_seconds gives 1 sequences twice; expected each count once",
        ),
        (
            {"step_seconds": {"1": 0.0}},
            "step_seconds['1'] is '0.0'; expected a finite number of seconds > 0",
        ),
        (
            {"step_seconds": {"1": 90}},
            "step_seconds['1'] = 90 s is outside 1e-06 to 60 s; expected one decode step's seconds (is it in ms or "
            "us?)",
        ),
        (
            {"step_seconds": {"1": 0.04, "4": 0.03}},
            "step_seconds['4'] = 0.03 is below step_seconds['1'] = 0.04; expected seconds that do not fall as "
            "sequences are added",
        ),
        ({"max_sequences": 0}, "max_sequences is '0'; expected a whole number, 1 to 1000000"),
        ({"max_sequences": 8.0}, "max_sequences is '8.0'; expected a whole number, 1 to 1000000"),
        (
            {"max_sequences": 4},
            "step_seconds['8'] measures more sequences than max_sequences = 4; expected concurrencies the engine "
            "runs at once",
        ),
        (
            {"output_tokens": 1},
            "output_tokens is '1'; expected the tokens each measured request streamed, 2 to 1000000",
        ),
    ],
)
def test_each_rule_names_the_file_the_key_the_value_and_what_is_allowed(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    path = tmp_path / "p.json"
    profile = {key: value for key, value in {**VALID, **change}.items() if value is not None}
    path.write_text(json.dumps(profile), encoding="utf-8")
    with pytest.raises(ValueError, match=f"^{re.escape(f'{path}: {message}')}"):
        read_stream_profile(path)


def test_a_file_that_is_no_json_object_or_too_large_is_named(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match=r"the top level is a JSON list; expected a JSON object with kind"):
        read_stream_profile(path)
    path.write_text("{\n  nope", encoding="utf-8")
    with pytest.raises(ValueError, match=r"p\.json:2: not JSON \("):
        read_stream_profile(path)
    path.write_text(" " * (1024 * 1024 + 1), encoding="utf-8")
    with pytest.raises(ValueError, match=r"a stream profile is a regular file of at most 1 MiB"):
        read_stream_profile(path)
    with pytest.raises(ValueError, match=r"gone\.json: cannot read a stream profile \(No such file"):
        read_stream_profile(tmp_path / "gone.json")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


@given(
    changes=st.dictionaries(
        st.sampled_from([*VALID, "step_seconds"]),
        JSON | st.dictionaries(st.text("0123456789", max_size=3), JSON | st.floats(0, 1), max_size=4),
        max_size=3,
    )
)
def test_any_json_is_read_or_refused_naming_the_file(changes: dict[str, Any]) -> None:
    try:
        read = stream_fields({**VALID, **changes}, "p.json")
    except ValueError as err:
        refused = str(err)
    else:
        refused = ""
    if refused:
        assert refused.startswith("p.json: ")
        return
    assert read.concurrencies == tuple(sorted(read.concurrencies))
    assert all(a <= b for a, b in zip(read.step_seconds, read.step_seconds[1:], strict=False))
    assert read.concurrencies[-1] <= read.max_sequences
