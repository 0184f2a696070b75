"""`bench.serve_load` in small: `supervisor-graph serve --workers 2` on sqlite under 10
AG-UI clients in 2 client processes for 6 s, one worker SIGKILLed halfway; afterwards
every thread takes a new message and every stored history has each call answered exactly
once and every finished run's message once (SPEC §18, §19)."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from bench.load_clients import last_event
from bench.serve_load import LoadResult, lost, main, problems, run_load, sweep, table


def test_a_killed_worker_leaves_every_thread_valid_and_answering() -> None:
    result = run_load("sqlite", clients=10, seconds=6, kill=True, client_procs=2)
    assert result.killed_worker is not None and result.runs > 20, result.summary()
    assert not result.run_errors, result.summary()
    assert result.threads > 0 and not result.threads_out_of_step, result.threads_out_of_step
    assert not result.threads_losing, result.threads_losing
    assert result.final_runs_ok == result.final_runs >= result.threads, result.summary()
    assert len(result.client_cpu) == 2 and result.runs_per_second > 0 and len(result.latencies) == result.runs
    summary = result.summary()
    assert summary["p50_ms"] <= summary["p99_ms"] and summary["client_procs"] == 2


def test_the_history_check_finds_a_lost_or_doubled_message_and_an_unanswered_call() -> None:
    call = AIMessage(content="", tool_calls=[{"name": "lookup", "args": {}, "id": "c1"}])
    whole = [HumanMessage("turn 0"), call, ToolMessage("r", tool_call_id="c1"), AIMessage("done"), HumanMessage("turn 1"), AIMessage("done")]
    assert problems(whole) == [] and lost(whole, ["turn 0", "turn 1"]) == []
    assert lost(whole, ["turn 0", "turn 2"]) == ["'turn 2' stored 0 times"]
    assert lost([*whole, HumanMessage("turn 1")], ["turn 1"]) == ["'turn 1' stored 2 times"]
    assert lost(whole[:5], ["turn 1"]) == ["'turn 1' has no answer after it"]
    assert problems(whole[:2]) == ["call c1 answered 0 times"]


def test_the_sweep_goes_up_to_the_cores_and_the_table_flags_a_busy_client() -> None:
    assert sweep(1) == [1] and sweep(2) == [1, 2] and sweep(16) == [1, 2, 4, 8, 16] and sweep(12) == [1, 2, 4, 8, 12]
    result = LoadResult("sqlite", clients=10, seconds=1, workers=4, client_procs=2, runs=50, window_s=1.0, client_cpu=[30, 95])
    result.latencies = [0.1] * 50
    (row,) = table([result])[2:]
    assert row.startswith("| sqlite | 4 | 50.0 |") and "CLIENT-BOUND" in row


def test_workers_below_one_are_refused() -> None:
    with pytest.raises(SystemExit):
        main(["--workers", "0"])


def test_the_clients_read_the_terminal_event_only() -> None:
    stream = b'data: {"type": "RUN_STARTED"}\n\ndata: {"type": "RUN_FINISHED"}\n\n'
    assert last_event(stream) == {"type": "RUN_FINISHED"}
    assert last_event(b'data: {"type": "RUN_ERROR", "code": "THREAD_BUSY"}\r\n\r\n')["code"] == "THREAD_BUSY"
    assert last_event(b"") == {} and last_event(b"data: {cut") == {}
