"""The background control plane (SPEC §12): a task's record exists before the launching
tool answers, so check / list / cancel / update in the same step or the next one always
find it, and a cancel that arrives before the task really started still cancels it;
cancel and update from another process sharing the memory are acted on within 2
seconds; the completion hook runs once per try (a timed-out one included), its feedback
reaches the parent thread and its `bail()` ends the run that answers the outcome."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.nodes.state import FEEDBACK_MARK
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call
from tests.supervisor_graph.bg_control_worker import THREAD, build

WORKER = Path(__file__).with_name("bg_control_worker.py")
ROOT = Path(__file__).resolve().parents[2]


class Note(BaseModel):
    text: str


def started_ids(messages: list[Any]) -> list[str]:
    return [
        str(m.content).split("Task ID: ")[1].split(".")[0]
        for m in messages
        if isinstance(m, ToolMessage) and str(m.content).startswith("Background task started")
    ]


def racing_team(effects: list[str], memory: Memory) -> Agent:
    """A boss with a zero-latency model: step 1 launches task A; step 2 launches task B and,
    in parallel, checks and cancels A; step 3 checks, lists and cancels B. The research
    subagent publishes (the side effect) after a short model call."""
    publish = create_tool(
        id="publish", description="Publish.", input_schema=Note,
        execute=lambda note: effects.append(note.text) or "published",
    )
    research = Agent(
        id="research-agent",
        description="Researches, then publishes.",
        model=ScriptedChatModel(
            policy=lambda m: "done" if isinstance(m[-1], ToolMessage) else tool_call("publish", {"text": str(m[-1].content)}),
            latency=0.2,
        ),
        tools=[publish],
    )

    def boss(messages: list[Any]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage) and str(last.content).startswith("[Background task"):
            return "noted"
        ids = started_ids(messages)
        names = {m.name for m in messages if isinstance(m, ToolMessage)}
        if not ids:
            return delegate("research", "a")
        if len(ids) == 1:  # the step right after A's launch: launch B, check and cancel A beside it
            return [
                delegate("research", "b"),
                tool_call("check_background_task", {"task_id": ids[0]}),
                tool_call("cancel_background_task", {"task_id": ids[0]}),
            ]
        if "list_background_tasks" not in names:  # the step right after B's launch
            return [
                tool_call("check_background_task", {"task_id": ids[1]}),
                tool_call("list_background_tasks"),
                tool_call("cancel_background_task", {"task_id": ids[1]}),
            ]
        return "both cancelled"

    return Agent(
        id="boss", model=ScriptedChatModel(policy=boss), agents={"research": research}, memory=memory,
        background_tasks={"tools": {"research": {}}},
    )


async def test_control_calls_right_after_a_launch_always_find_the_task_and_a_cancel_always_wins(memory: Memory) -> None:
    """Issue 36: the record used to be written inside the spawned task, after the
    launching tool had answered: about one run in three said "there is no background
    task" and the task ran to the end. Repeated so the race would show (on every
    storage: the in-process store answers without yielding, a database does not)."""
    effects: list[str] = []
    boss = racing_team(effects, memory)
    assert boss.memory is not None
    for i in range(20):
        thread = f"race-{i}"
        result = await boss.generate_until_idle("go", memory={"thread": thread})
        a, b = started_ids(result.messages)
        control = [m for m in result.messages if isinstance(m, ToolMessage) and m.name != "agent-research"]
        assert [m.status for m in control] == ["success"] * 5, [m.content for m in control]
        check_a, cancel_a, check_b, listed, cancel_b = (str(m.content) for m in control)
        assert check_a.startswith(f"{a} (agent-research): running") and check_b.startswith(f"{b} (agent-research): running")
        assert a in listed and b in listed
        assert "being cancelled" in cancel_a and "being cancelled" in cancel_b
        tasks = {t.task_id: t.status for t in await boss.memory.list_background_tasks(thread)}
        assert tasks == {a: "cancelled", b: "cancelled"}
        notices = [m for m in await boss.memory.get_messages(thread) if m.additional_kwargs.get("background_task")]
        assert sorted(n.additional_kwargs["background_task"]["status"] for n in notices) == ["cancelled", "cancelled"]
    await asyncio.sleep(0.4)  # longer than a try's model call: a task that had gone on would have published
    assert effects == []


async def test_a_cancel_before_the_task_started_still_cancels_it() -> None:
    """The launching tool answers before the task's first step; a cancel stored then is
    read when the task starts, and it never runs its subagent."""
    from supervisor_graph.background.host import RunBackground

    sub_model = ScriptedChatModel(policy=lambda m: "facts")
    research = Agent(id="research-agent", description="Researches.", model=sub_model)
    cancelled: list[str] = []
    original = RunBackground.launch

    async def launch_then_cancel(self: RunBackground, launch: Any) -> None:
        await original(self, launch)
        cancelled.append(await self.cancel_task(launch.task_id))  # before the task's first step

    def boss(messages: list[Any]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage) and str(last.content).startswith("[Background task"):
            return "noted: " + str(last.content).splitlines()[0]
        return "started" if isinstance(last, ToolMessage) else delegate("research", "dig")

    parent = Agent(
        id="boss", model=ScriptedChatModel(policy=boss), agents={"research": research}, memory=Memory(":memory:"),
        background_tasks={"tools": {"research": {}}},
    )
    RunBackground.launch = launch_then_cancel  # type: ignore[method-assign]
    try:
        result = await parent.generate_until_idle("go", memory={"thread": "early-cancel"})
    finally:
        RunBackground.launch = original  # type: ignore[method-assign]
    [text] = cancelled
    assert "being cancelled" in text and result.text.startswith("noted: [Background task") and result.text.endswith("cancelled]")
    assert sub_model.calls == []  # never ran
    [task] = await parent.memory.list_background_tasks("early-cancel")  # type: ignore[union-attr]
    assert (task.status, task.tries) == ("cancelled", 0)


async def test_the_hook_runs_per_try_with_a_timeout_its_feedback_lands_and_bail_ends_the_loop() -> None:
    """SPEC §12: once per try, the timed-out ones included (success=False, a timeout
    error); feedback saved to the parent thread; bail() ends the run that answers."""
    seen: list[tuple[bool, str]] = []

    def hook(ctx: Any) -> Any:
        seen.append((ctx.success, type(ctx.error).__name__))
        if len(seen) == 2:
            ctx.bail()
        return {"feedback": f"try {len(seen)} took too long"}

    def boss(messages: list[Any]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage) and str(last.content).startswith("[Background task"):
            return tool_call("list_background_tasks")  # answering the outcome makes a call ...
        if isinstance(last, HumanMessage) and last.additional_kwargs.get(FEEDBACK_MARK):
            return tool_call("list_background_tasks")
        if isinstance(last, ToolMessage) and last.name == "list_background_tasks":
            return "one more step"  # ... after which, without bail, the loop would go on
        return "started" if isinstance(last, ToolMessage) else delegate("research", "dig")

    research = Agent(id="research-agent", description="Researches.", model=ScriptedChatModel(policy=lambda m: "x", latency=1.0))
    boss_model = ScriptedChatModel(policy=boss)
    parent = Agent(
        id="boss", model=boss_model, agents={"research": research}, memory=Memory(":memory:"),
        background_tasks={"tools": {"research": {"timeout_ms": 50, "retries": 1}}},
    )
    result = await parent.generate_until_idle("go", memory={"thread": "hooked"}, delegation={"on_delegation_complete": hook})
    assert seen == [(False, "TimeoutError"), (False, "TimeoutError")]
    stored = await parent.memory.get_messages("hooked")  # type: ignore[union-attr]
    feedback = [str(m.content) for m in stored if m.additional_kwargs.get(FEEDBACK_MARK)]
    assert feedback == ["try 1 took too long", "try 2 took too long"]
    # the model answered the notice seeing the feedback, once: its call ran, then the loop ended
    answering = boss_model.calls[-1]
    assert [str(m.content) for m in answering if m.additional_kwargs.get(FEEDBACK_MARK)] == feedback
    assert str(answering[-1].content) == "try 2 took too long"
    assert isinstance(stored[-1], ToolMessage) and stored[-1].name == "list_background_tasks"
    assert not any(isinstance(m, AIMessage) and m.content == "one more step" for m in stored)
    assert result.finish_reason == "stop" and "timed out]" in str(stored[-5].content)

    # without bail the same answer goes on to a further step
    seen.clear()
    calm = Agent(
        id="boss", model=ScriptedChatModel(policy=boss), agents={"research": research}, memory=Memory(":memory:"),
        background_tasks={"tools": {"research": {"timeout_ms": 50}}},
    )
    await calm.generate_until_idle("go", memory={"thread": "calm"}, delegation={"on_delegation_complete": hook})
    stored = await calm.memory.get_messages("calm")  # type: ignore[union-attr]
    assert seen == [(False, "TimeoutError")] and stored[-1].content == "one more step"


# -- two processes on one sqlite file or Postgres database ---------------------------


def start_worker(storage: str, ledger: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), storage, str(ledger)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    line = proc.stdout.readline() if proc.stdout else ""
    assert json.loads(line or "{}").get("text") == "started", proc.stderr.read() if proc.stderr else ""
    return proc


def ledger_lines(ledger: Path) -> list[str]:
    return ledger.read_text().splitlines() if ledger.exists() else []


async def wait_for(check: Any, seconds: float) -> float:
    """Seconds until `check()` (awaited) holds; fails after `seconds`."""
    start = time.monotonic()
    while not await check():
        assert time.monotonic() - start < seconds, "not within the time allowed"
        await asyncio.sleep(0.05)
    return time.monotonic() - start


async def test_cancel_and_update_from_another_process_are_acted_on_within_two_seconds(
    shared_storage: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    worker = start_worker(shared_storage, ledger)
    try:
        async with Memory(shared_storage) as memory:
            agent = build(memory, str(ledger), seconds=2.5)
            [task] = await memory.list_background_tasks(THREAD["thread"])
            assert task.status == "running"

            async def a_call(text: str) -> bool:
                return any(line.startswith(f"call {worker.pid} ") and line.endswith(text) for line in ledger_lines(ledger))

            # update: the worker's task starts its next try with the instructions
            answered = await agent.generate(f"update {task.task_id} only bees", memory=THREAD)
            assert "recorded" in answered.text and "within 2 seconds" in answered.text
            await wait_for(lambda: a_call("Updated instructions: only bees"), 2.0)

            # cancel: the worker stops the task; its side effect never happens
            answered = await agent.generate(f"cancel {task.task_id}", memory=THREAD)
            assert "recorded" in answered.text and "within 2 seconds" in answered.text

            async def cancelled() -> bool:
                return [t.status for t in await memory.list_background_tasks(THREAD["thread"])] == ["cancelled"]

            await wait_for(cancelled, 2.0)
            await asyncio.sleep(3.0)  # past the end of the model call the cancelled try was in
            lines = ledger_lines(ledger)
            assert [line.split()[1] for line in lines] == [str(worker.pid)] * 2  # every try ran in the worker
            assert not any(line.startswith("effect") for line in lines), lines
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)


async def test_a_list_beside_a_launch_names_the_task_being_started() -> None:
    memory = Memory(":memory:")
    research = Agent(id="research-agent", description="Researches.", model=ScriptedChatModel(policy=lambda m: "found"))
    seen: list[str] = []

    def boss(messages: list[Any]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage) and str(last.content).startswith("[Background task"):
            return "noted"
        if isinstance(last, ToolMessage):
            seen.extend(str(m.content) for m in messages if isinstance(m, ToolMessage) and m.name == "list_background_tasks")
            return "waiting"
        return [delegate("research", "dig"), tool_call("list_background_tasks")]

    agent = Agent(
        id="boss",
        model=ScriptedChatModel(policy=boss),
        agents={"research": research},
        memory=memory,
        background_tasks={"tools": {"research": {"enabled": True}}},
    )
    await agent.generate_until_idle("go", memory={"thread": "list-beside"})
    assert seen and "(starting now) agent-research" in seen[0]
