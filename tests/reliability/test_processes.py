"""SPEC §19 with real processes on one sqlite file or Postgres database: one run per
thread, approved tools at most once, nothing lost, valid transcripts after SIGKILL.
Each test counts side effects (the ledger) and tool results per call id."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("worker.py")


def start(storage: str, ledger: Path, step: str, prompt: str = "", **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), storage, str(ledger), step, prompt],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def finish(proc: subprocess.Popen[str]) -> dict:
    out, err = proc.communicate(timeout=120)
    if proc.returncode == -signal.SIGKILL:
        return {"killed": True}
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def run(storage: str, ledger: Path, step: str, prompt: str = "", **env: str) -> dict:
    return finish(start(storage, ledger, step, prompt, **env))


def together(storage: str, ledger: Path, tmp_path: Path, *steps: tuple[str, str]) -> list[dict]:
    """Start several worker processes that begin their step at the same moment."""
    go = tmp_path / f"go-{time.monotonic_ns()}"
    procs = [start(storage, ledger, step, prompt, SG_GO=str(go)) for step, prompt in steps]
    # every process has imported the library and opened the database (each says so): a
    # late one would otherwise start after the others had finished, on a busy machine
    deadline = time.monotonic() + 60
    while len(list(go.parent.glob(f"{go.name}.ready-*"))) < len(procs):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a process never got ready"
        time.sleep(0.02)
    go.touch()
    return [finish(p) for p in procs]


def ledger_lines(ledger: Path) -> list[str]:
    return [line.split()[0] for line in ledger.read_text().splitlines()] if ledger.exists() else []


def assert_valid_transcript(messages: list[dict]) -> None:
    """Every tool call has exactly one result, right after the turn that made it."""
    for i, message in enumerate(messages):
        if message["type"] == "ai" and message["tool_calls"]:
            following = []
            for later in messages[i + 1 :]:
                if later["type"] != "tool":
                    break
                following.append(later["tool_call_id"])
            assert sorted(following) == sorted(message["tool_calls"]), (message, messages)


def test_two_processes_on_one_thread_one_runs_one_is_refused(shared_storage: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    outcomes = together(shared_storage, ledger, tmp_path, ("generate", "slow one"), ("generate", "slow two"))
    assert sorted("error" in o for o in outcomes) == [False, True], outcomes
    [refused] = [o for o in outcomes if "error" in o]
    assert refused["error"] == "ThreadBusyError"
    [answered] = [o for o in outcomes if "error" not in o]
    stored = run(shared_storage, ledger, "inspect")["messages"]
    # the answer that was returned is the one the thread keeps; nothing interleaved
    assert [m["type"] for m in stored] == ["human", "ai"] and stored[1]["content"] == answered["text"]


def test_two_processes_approving_one_call_run_it_once(shared_storage: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    assert run(shared_storage, ledger, "generate", "pay please")["pending"] == ["call-pay"]
    outcomes = together(shared_storage, ledger, tmp_path, ("approve", ""), ("approve", ""))
    assert ledger_lines(ledger) == ["pay"]
    winners = [o for o in outcomes if "error" not in o]
    losers = [o for o in outcomes if "error" in o]
    assert len(winners) == 1 and winners[0]["text"] == "after: paid", outcomes
    assert losers[0]["error"] in ("NothingPendingError", "ThreadBusyError")
    stored = run(shared_storage, ledger, "inspect")
    assert stored["pending"] == []
    assert_valid_transcript(stored["messages"])


def test_sigkill_inside_an_approved_tool_never_runs_it_again(shared_storage: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    assert run(shared_storage, ledger, "generate", "pay please")["pending"] == ["call-pay"]
    assert run(shared_storage, ledger, "approve", SG_CRASH="pay") == {"killed": True}
    assert ledger_lines(ledger) == ["pay"]  # the side effect happened before the kill
    after = run(shared_storage, ledger, "inspect")
    assert after["pending"] == []  # the approval is not offered again
    again = run(shared_storage, ledger, "approve")
    assert again["error"] == "NothingPendingError"
    nxt = run(shared_storage, ledger, "generate", "what happened?")
    assert nxt["text"].startswith("answer")
    stored = run(shared_storage, ledger, "inspect")["messages"]
    assert_valid_transcript(stored)
    [result] = [m for m in stored if m["tool_call_id"] == "call-pay"]
    assert result["content"].startswith("[Interrupted] outcome unknown")
    assert ledger_lines(ledger) == ["pay"]  # exactly once


def test_sigkill_inside_a_subagent_tool_loses_nothing_and_runs_nothing_twice(shared_storage: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    assert run(shared_storage, ledger, "generate", "delegate it", SG_CRASH="note") == {"killed": True}
    assert ledger_lines(ledger) == ["note"]
    stored = run(shared_storage, ledger, "inspect")["messages"]
    # the step that started the delegation was saved before its side effect
    assert [m["type"] for m in stored] == ["human", "ai"] and stored[1]["tool_calls"] == ["call-delegate"]
    nxt = run(shared_storage, ledger, "generate", "and now?")
    assert nxt["text"].startswith("answer")
    stored = run(shared_storage, ledger, "inspect")["messages"]
    assert_valid_transcript(stored)
    [result] = [m for m in stored if m["tool_call_id"] == "call-delegate"]
    assert result["content"].startswith("[Interrupted]")
    assert ledger_lines(ledger) == ["note"]  # not run again


def test_sigkill_during_a_model_call_leaves_a_thread_that_goes_on(shared_storage: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    assert run(shared_storage, ledger, "generate", "note this", SG_CRASH="model") == {"killed": True}
    assert ledger_lines(ledger) == ["note"]
    stored = run(shared_storage, ledger, "inspect")["messages"]
    assert [m["type"] for m in stored] == ["human", "ai", "tool"]  # the tool's result was kept
    nxt = run(shared_storage, ledger, "generate", "next")
    assert nxt["text"].startswith("answer")
    stored = run(shared_storage, ledger, "inspect")["messages"]
    assert_valid_transcript(stored)
    assert ledger_lines(ledger) == ["note"]


@pytest.mark.parametrize("step", ["generate"])
def test_a_new_message_while_an_approval_waits_is_refused_or_declines_it(shared_storage: str, tmp_path: Path, step: str) -> None:
    ledger = tmp_path / "ledger"
    assert run(shared_storage, ledger, step, "pay please")["pending"] == ["call-pay"]
    refused = run(shared_storage, ledger, step, "something else")
    assert refused["error"] == "PendingApprovalError" and "pay" in refused["message"]
    assert run(shared_storage, ledger, "inspect")["pending"] == ["call-pay"]  # nothing lost
