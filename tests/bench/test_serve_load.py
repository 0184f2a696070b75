"""`bench.serve_load` in small: `supervisor-graph serve --workers 2` on sqlite under 10
AG-UI clients for 6 s, one worker SIGKILLed halfway; afterwards every thread takes a new
message and every stored history has each call answered exactly once (SPEC §19)."""

from __future__ import annotations

from bench.serve_load import run_load


def test_a_killed_worker_leaves_every_thread_valid_and_answering() -> None:
    result = run_load("sqlite", clients=10, seconds=6, kill=True)
    assert result.killed_worker is not None and result.runs > 20, result.summary()
    assert not result.run_errors, result.summary()
    assert result.threads > 0 and not result.threads_out_of_step, result.threads_out_of_step
    assert result.final_runs_ok == result.final_runs >= result.threads, result.summary()
