"""`python -m bench soak` in small (issue 46): `supervisor-graph serve --workers 2` on
sqlite under mixed AG-UI load for 2 minutes (conversations, client cancels followed by
runs on the same thread, approvals resumed, double texting in the four on_busy modes).
Every worker's RSS may not grow more than 20 MB between its sample at one minute and the
last one, and every run that ended `RUN_FINISHED` success has its message stored exactly
once and answered. Real processes, real HTTP, real RSS: no figure is forced."""

from __future__ import annotations

import pytest

from bench.cli import main as bench_main
from bench.soak import SoakResult, report, run_soak


def test_two_minutes_of_mixed_load_keep_the_workers_flat_and_every_message() -> None:
    result = run_soak("sqlite", minutes=2, workers=2, clients=3, sample_s=30)
    summary = result.summary()
    done = set(result.actions)
    assert {"conversation", "client cancel", "approval"} <= done and any(a.startswith("double text") for a in done), summary
    assert result.outcomes["finished success"] >= 50 and result.outcomes["cancelled by client"] > 0, summary
    assert not result.threads_losing, result.threads_losing
    assert not result.threads_out_of_step, result.threads_out_of_step
    growth = result.growth()
    assert len(growth) == 2, result.samples  # both workers sampled from the first minute to the end
    assert all(g <= 20.0 for g in growth.values()), report(result)
    assert result.never_retrieved == 0, result.server_notes
    assert not result.failed


def _result(rss_per_sample: list[tuple[float, float]]) -> SoakResult:
    result = SoakResult("sqlite", workers=2, clients=1, minutes=2)
    for t, (a, b) in zip((0, 30, 60, 90, 120), rss_per_sample, strict=False):
        result.samples.append({"t": t, "rss": {1: a, 2: b}, "fds": {1: 20, 2: 20}, "db": 2})
    result.sent = {"t": ["hello"]}
    return result


def test_growth_counts_from_the_first_minute_and_fails_above_the_limit() -> None:
    flat = _result([(100, 100), (150, 150), (160, 161), (170, 165), (175, 170)])
    assert flat.growth() == {1: 15, 2: 9} and not flat.leaking and not flat.failed
    leaking = _result([(100, 100), (150, 150), (160, 161), (170, 190), (175, 190.5)])
    assert leaking.leaking == {2: 29.5} and leaking.failed
    assert "FAILED" in report(leaking) and "| 120 | 175 | 190 | 40 | 2 |" in report(leaking)
    lost = _result([(100, 100), (150, 150), (160, 161)])
    lost.threads_losing = {"t": ["'hello' stored 0 times"]}
    assert lost.failed


def test_the_soak_is_a_subcommand_of_python_m_bench() -> None:
    with pytest.raises(SystemExit):
        bench_main(["soak", "--workers", "0"])
    with pytest.raises(SystemExit):
        bench_main(["soak", "--actions", "dance"])
