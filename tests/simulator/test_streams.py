"""The stream simulator against timelines worked out by hand (simulator/streams.py's loop: a prefill step for the
sequences admitted at a boundary, else a decode step of every sequence in flight).

The profile: prefill 50 ms; a decode step 40 ms with one sequence in flight and 70 ms with four, so step(n) =
40 + 10 (n - 1) ms between them and beyond."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.streams import StreamProfile, load_stream_profile, run_stream, summarize

PROFILE = StreamProfile(prefill_seconds=0.05, concurrencies=(1, 4), step_seconds=(0.04, 0.07), max_sequences=4)


def test_the_step_time_is_interpolated_and_extrapolated_from_the_measured_concurrencies() -> None:
    assert PROFILE.step(1) == pytest.approx(0.04)
    assert PROFILE.step(2) == pytest.approx(0.05)
    assert PROFILE.step(4) == pytest.approx(0.07)
    assert PROFILE.step(8) == pytest.approx(0.11)  # the last slope, 10 ms a sequence, continued


def test_one_request_alone_waits_the_prefill_then_one_step_per_token() -> None:
    run = run_stream(PROFILE, [0.0], [3])
    assert run.token_times[0].tolist() == pytest.approx([0.05, 0.09, 0.13])
    assert run.time_to_first_token().tolist() == pytest.approx([0.05])
    assert run.inter_token_latencies().tolist() == pytest.approx([0.04, 0.04])


def test_an_idle_engine_starts_when_a_request_arrives() -> None:
    run = run_stream(PROFILE, [0.0, 1.0], [1, 1])
    assert run.time_to_first_token().tolist() == pytest.approx([0.05, 0.05])


def test_two_overlapping_requests_share_decode_steps_and_the_first_waits_through_the_seconds_prefill() -> None:
    # A (0 s, 3 tokens): prefill to 0.05, a step of one to 0.09. B arrived at 0.06: admitted at 0.09, prefill to
    # 0.14 (A waits), then a step of two (50 ms) to 0.19 gives A its third token and B its second.
    run = run_stream(PROFILE, [0.0, 0.06], [3, 2])
    assert run.token_times[0].tolist() == pytest.approx([0.05, 0.09, 0.19])
    assert run.token_times[1].tolist() == pytest.approx([0.14, 0.19])
    assert run.time_to_first_token().tolist() == pytest.approx([0.05, 0.08])
    assert run.inter_token_latencies().tolist() == pytest.approx([0.04, 0.10, 0.05])


def test_requests_arriving_together_are_prefilled_together() -> None:
    run = run_stream(PROFILE, [0.0, 0.0], [2, 2])
    assert run.token_times[0].tolist() == pytest.approx([0.05, 0.10])
    assert run.token_times[1].tolist() == pytest.approx([0.05, 0.10])


def test_a_full_batch_makes_the_next_request_wait_for_a_free_slot() -> None:
    one_slot = StreamProfile(0.05, (1,), (0.04,), max_sequences=1)
    # A holds the one slot until its second token at 0.09; B, arrived at 0.01, is prefilled from 0.09 to 0.14.
    run = run_stream(one_slot, [0.0, 0.01], [2, 1])
    assert run.time_to_first_token().tolist() == pytest.approx([0.05, 0.13])


def test_the_summary_states_percentiles_and_tokens_per_second() -> None:
    summary = summarize(run_stream(PROFILE, [0.0, 0.06], [3, 2]))
    # TTFTs 50 and 80 ms: numpy's linear percentile puts p95 at 50 + 0.95 x 30 ms.
    assert summary.ttft_p95 == pytest.approx(0.0785)
    assert summary.ttft_p99 == pytest.approx(0.0797)
    # Gaps 40, 100 and 50 ms.
    assert summary.itl_mean == pytest.approx(0.19 / 3)
    assert summary.itl_p95 == pytest.approx(0.095)
    # Five tokens from the first arrival (0 s) to the last token (0.19 s).
    assert summary.tokens_per_second == pytest.approx(5 / 0.19)


def test_requests_of_one_token_have_no_gap_to_report() -> None:
    summary = summarize(run_stream(PROFILE, [0.0], [1]))
    assert (summary.ttft_p95, summary.itl_mean, summary.itl_p99) == pytest.approx((0.05, 0.0, 0.0))


def test_a_run_without_requests_has_nothing_to_summarize() -> None:
    assert run_stream(PROFILE, [], []).token_times == ()
    with pytest.raises(ValueError, match="no request arrived in the run: it has no token latencies to summarize"):
        summarize(run_stream(PROFILE, [], []))


def test_a_mismatched_or_empty_request_is_refused() -> None:
    with pytest.raises(ValueError, match="2 arrivals but 1 token counts"):
        run_stream(PROFILE, [0.0, 1.0], [3])
    with pytest.raises(ValueError, match="at least one token"):
        run_stream(PROFILE, [0.0], [0])


def test_a_stream_profile_file_is_read_into_the_simulators_profile(tmp_path: Path) -> None:
    path = tmp_path / "tokens.stream.json"
    steps = {"4": 0.07, "1": 0.04}
    fields = {"kind": "stream", "model": "tokens", "prefill_seconds": 0.05, "step_seconds": steps}
    path.write_text(json.dumps({**fields, "max_sequences": 4, "output_tokens": 16}), encoding="utf-8")
    assert load_stream_profile(path) == PROFILE
    path.write_text(json.dumps({**fields, "max_sequences": 2, "output_tokens": 16}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"step_seconds\['4'\] measures more sequences than max_sequences = 2"):
        load_stream_profile(path)
