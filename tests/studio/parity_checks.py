"""What tests/embedding/test_parity.py checks on a compiled graph, checked over HTTP with
`langgraph_sdk` on a server that serves tests/studio/parity_graphs.py: `langgraph dev`
(tests/studio/test_langgraph_dev.py) and Aegra (tests/aegra/test_aegra.py) call the same
checker per capability, with a client of their server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk.errors import NotFoundError

from supervisor_graph.nodes.turn.tools import ABORTED_TOOL_TEXT

ROOT = Path(__file__).resolve().parents[2]

# graph id on the server -> the compiled graph in parity_graphs.py
GRAPHS = {
    f"parity_{name}": str(ROOT / "tests/studio/parity_graphs.py") + f":{name}"
    for name in (
        "hooks",
        "references",
        "scorer",
        "suspended",
        "client",
        "context",
        "dynamic",
        "versions",
        "slow",
        "background_slow",
        "background_approval",
        "background_control",
        "compaction",
        "structured",
        "decisions",
        "middleware",
        "time_travel",
    )
}


def _human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def _thread(client: Any) -> str:
    return str((await client.threads.create())["thread_id"])


async def _run(client: Any, thread_id: str, graph: str, **kwargs: Any) -> dict[str, Any]:
    """One run of `parity_<graph>` to its end; the values it ended with. Streamed, not
    `runs.wait`: Aegra answers `runs.wait` on a two-second poll."""
    out: dict[str, Any] = {}
    async for part in client.runs.stream(thread_id, f"parity_{graph}", stream_mode="values", **kwargs):
        assert part.event != "error", part.data
        if part.event == "values":
            out = part.data
    return out


async def _messages(client: Any, thread_id: str) -> list[dict[str, Any]]:
    values = (await client.threads.get_state(thread_id))["values"] or {}
    return list(values.get("messages") or [])


def _tool_results(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m["content"]) for m in messages if m["type"] == "tool"]


async def check_hooks(client: Any) -> None:
    """on_delegation_start rewrites the prompt, on_delegation_complete the result."""
    out = await _run(client, await _thread(client), "hooks", input=_human("go"))
    assert out["messages"][-1]["content"] == "DID IT (CAREFULLY)"


async def check_references(client: Any) -> None:
    """The first result gets a ref id; a delegation naming it gets its text before the prompt."""
    tid = await _thread(client)
    await _run(client, tid, "references", input=_human("go"))
    first, second = _tool_results(await _messages(client, tid))
    assert first.startswith("worked on <<first>>") and "[ref: worker-agent-1]" in first
    assert "worked on <<first>>" in second.removeprefix("worked on <<")  # the referenced text came first
    assert second.split(">>")[-2].endswith("second")  # then the prompt


async def check_scorer(client: Any) -> None:
    """A failing scorer sends its feedback back to the supervisor until the answer passes."""
    tid = await _thread(client)
    out = await _run(client, tid, "scorer", input=_human("go"))
    assert out["messages"][-1]["content"] == "see http://example.org"
    contents = [str(m["content"]) for m in await _messages(client, tid)]
    assert contents[1] == "no link yet" and "not complete yet" in contents[2] and len(contents) == 4


async def check_suspend(client: Any) -> None:
    """suspend() in a subagent's tool: the interrupt is in the thread state; a command
    resuming it by id gives the tool its data."""
    tid = await _thread(client)
    await _run(client, tid, "suspended", input=_human("go"))
    state = await client.threads.get_state(tid)
    [item] = state["interrupts"]
    assert item["value"]["kind"] == "suspend" and item["value"]["payload"] == {"question": "Which?"}
    out = await _run(client, tid, "suspended", command={"resume": {item["id"]: "savings"}})
    assert out["messages"][-1]["content"] == "using savings"
    [delegation] = [m for m in out["messages"] if m["type"] == "tool"]
    assert delegation["artifact"]["usage"]["total_tokens"] == 30  # the call before the pause counts too
    assert not (await client.threads.get_state(tid))["interrupts"]


async def check_decisions(client: Any) -> None:
    """SPEC §29: each pending approval (depth one and two) says its allowed decisions and
    input schema; a `Command` with edited args of the wrong type is asked again, nothing
    run; then one `Command` edits one and rejects the other with a reason the model sees."""
    tid = await _thread(client)
    await _run(client, tid, "decisions", input=_human("go"))
    items = {i["value"]["agent_path"][-1]: i for i in (await client.threads.get_state(tid))["interrupts"]}
    assert sorted(items) == ["deep-agent", "near-agent"]
    near, deep = items["near-agent"], items["deep-agent"]
    assert near["value"]["allowed_decisions"] == ["approve", "edit", "reject"]
    assert deep["value"]["input_schema"]["properties"]["amount"]["type"] == "integer"
    await _run(client, tid, "decisions", command={"resume": {near["id"]: {"approved": True, "args": {"amount": "x"}}}})
    again = (await client.threads.get_state(tid))["interrupts"]
    asked = [i for i in again if i["value"]["agent_path"][-1] == "near-agent"]
    assert len(again) == 2 and "amount: Input should be a valid integer" in asked[0]["value"]["error"]
    answers = {
        asked[0]["id"]: {"approved": True, "args": {"amount": 120}},
        next(i["id"] for i in again if i["value"]["agent_path"][-1] == "deep-agent"): {
            "approved": False, "message": "Ask finance first.",
        },
    }
    out = await _run(client, tid, "decisions", command={"resume": answers})
    final = str(out["messages"][-1]["content"])
    assert "paid 120" in final and "paid 1200" not in final
    assert "declined this tool call; it did not run. Their reason: Ask finance first." in final
    assert not (await client.threads.get_state(tid))["interrupts"]


async def check_client_tool(client: Any) -> None:
    """A client tool ends the run with its call pending (no interrupt); the caller's result
    as the next input continues it."""
    tid = await _thread(client)
    out = await _run(client, tid, "client", input=_human("go"))
    assert out["finish_reason"] == "tool-calls"
    [call] = out["messages"][-1]["tool_calls"]
    assert call["name"] == "confirm_in_ui"
    state = await client.threads.get_state(tid)
    assert not state["interrupts"] and state["next"] == []
    result = {"type": "tool", "content": "yes", "tool_call_id": call["id"], "name": "confirm_in_ui"}
    done = await _run(client, tid, "client", input={"messages": [result]})
    assert done["messages"][-1]["content"] == "ui said yes"


async def check_request_context(client: Any) -> None:
    """`context={"request_context": ...}` on runs.wait and on runs.create reaches a
    subagent's tool."""
    out = await client.runs.wait(
        await _thread(client), "parity_context", input=_human("go"), context={"request_context": {"user": "ada"}}
    )
    assert out["messages"][-1]["content"] == "it is ada"
    tid = await _thread(client)
    run = await client.runs.create(
        tid, "parity_context", input=_human("go"), context={"request_context": {"user": "grace"}}
    )
    async for part in client.runs.join_stream(tid, run["run_id"]):  # `runs.join` polls, like `runs.wait`
        assert part.event != "error", part.data
    assert (await _messages(client, tid))[-1]["content"] == "it is grace"


async def check_dynamic(client: Any) -> None:
    """`agents=callable`: each run on the thread gets the set its request context chooses."""
    tid = await _thread(client)
    enterprise = {"request_context": {"tier": "enterprise"}}
    free = {"request_context": {"tier": "free"}}
    out = await _run(client, tid, "dynamic", input=_human("legal"), context=enterprise)
    assert out["messages"][-1]["content"] == "boss: legal done"
    out = await _run(client, tid, "dynamic", input=_human("support"), context=free)
    assert out["messages"][-1]["content"] == "boss: support done"
    out = await _run(client, tid, "dynamic", input=_human("legal"), context=free)  # not in this run's set
    assert "there is no tool named 'agent-legal'" in out["messages"][-2]["content"]
    out = await _run(client, tid, "dynamic", input=_human("sales"), context=enterprise)
    assert out["messages"][-1]["content"] == "boss: sales done"


async def check_usage(client: Any) -> None:
    """Every model call's usage is on its AI message, in the run's output and in the
    thread's state; a delegation's result carries its subagent's total.

    (`langgraph dev` reads a thread's checkpoints back as plain dicts and replays the
    `messages` writes through the channel's reducer, which once filed `usage_metadata`
    under `additional_kwargs`: nodes/state.py rebuilds such dicts as messages.)"""
    tid = await _thread(client)
    out = await _run(client, tid, "context", input=_human("go"), context={"request_context": {"user": "ada"}})
    for messages in (out["messages"], await _messages(client, tid)):
        ai = [m for m in messages if m["type"] == "ai"]
        assert len(ai) == 2 and all(
            m["usage_metadata"] == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15} for m in ai
        ), ai
    for messages in (out["messages"], await _messages(client, tid)):
        [delegation] = [m for m in messages if m["type"] == "tool"]
        usage = delegation["artifact"]["usage"]  # the worker's two calls: a tool call, then its answer
        assert (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]) == (20, 10, 30)


async def check_budget(client: Any) -> None:
    """`context={"budget": ...}` (SPEC §25): the worker stops before its second model call
    and answers which limit, then the supervisor stops (finish reason "budget"); the
    thread's next run, without a budget, goes on."""
    tid = await _thread(client)
    user = {"request_context": {"user": "ada"}}
    out = await _run(client, tid, "context", input=_human("go"), context={**user, "budget": {"tokens": 30}})
    assert out["finish_reason"] == "budget" and _tool_results(out["messages"]) == ["[Budget exceeded] tokens"], out
    out = await _run(client, tid, "context", input=_human("again"), context=user)
    assert out["finish_reason"] == "stop" and out["messages"][-1]["content"] == "it is ada"


async def check_compaction(client: Any) -> None:
    """`Agent(compaction=...)` (SPEC §25): twelve turns on one thread whose model refuses an
    input over its window; older turns are summarised, the summary is in the thread's
    state and every original message in its messages."""
    tid = await _thread(client)
    for turn in range(12):
        out = await _run(client, tid, "compaction", input=_human(f"question {turn} " + "y" * 300))
        assert out["messages"][-1]["content"].startswith("answer"), out
    values = (await client.threads.get_state(tid))["values"]
    assert values["compaction"]["summary"] == "summary of the earlier turns", values.get("compaction")
    assert len(values["messages"]) == 24


async def check_structured_output(client: Any) -> None:
    """Output schemas (SPEC §28): a subagent answers its delegation with its object, the
    supervisor's answer is `structured_response` in the output state, and a run's
    context may give another schema (a JSON schema) that wins."""
    tid = await _thread(client)
    out = await _run(client, tid, "structured", input=_human("go"))
    worker, recorded = _tool_results(out["messages"])  # the delegation's, then the final answer call's
    assert recorded == "Answer recorded."
    assert json.loads(worker) == {"facts": ["f1", "f2"]}, worker
    assert out["structured_response"] == {"title": "summary", "facts": [worker]}, out.get("structured_response")
    count = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}
    out = await _run(client, tid, "structured", input=_human("count them"), context={"output_schema": count})
    assert out["structured_response"] == {"count": 2} and out["finish_reason"] == "stop", out


async def check_versions(client: Any, put: Callable[[tuple[str, ...], str, dict[str, Any]], Awaitable[None]]) -> None:
    """A version stored in the server's store, selected by the run's context, replaces the
    subagent's code definition; without a selection the code runs. `put(namespace, key,
    value)` writes to the store the graph reads."""
    version = {
        "version_id": "v2",
        "agent_id": "research-agent",
        "status": "published",
        "created_at": datetime.now(UTC).isoformat(),
        "definition": {"instructions": "RESEARCH V2"},
    }
    await put(("supervisor_graph", "versions"), json.dumps(["research-agent", "v2"]), version)
    selected = {"versions": {"agents": {"research-agent": {"status": "published"}}}}
    out = await _run(client, await _thread(client), "versions", input=_human("go"), context=selected)
    assert out["messages"][-1]["content"] == "said: RESEARCH V2"
    out = await _run(client, await _thread(client), "versions", input=_human("go"))
    assert out["messages"][-1]["content"] == "said: RESEARCH CODE"


async def check_cancel(client: Any) -> None:
    """A run cancelled mid-delegation (runs.cancel) leaves two calls without results; the
    next run on the thread closes them with the [Aborted] text before its input, so the
    supervisor's model never sees an unanswered call."""
    tid = await _thread(client)
    run = await client.runs.create(tid, "parity_slow", input=_human("go"))
    deadline = asyncio.get_running_loop().time() + 20
    while not any(m["type"] == "ai" and m.get("tool_calls") for m in await _messages(client, tid)):
        assert asyncio.get_running_loop().time() < deadline, "the delegations never started"
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)  # the subagents nap in their tool (3 s)
    await client.runs.cancel(tid, run["run_id"], wait=True)
    assert (await client.runs.get(tid, run["run_id"]))["status"] == "interrupted"
    out = await _run(client, tid, "slow", input=_human("next"))
    assert out["messages"][-1]["content"] == "fresh answer"
    kinds = [(m["type"], m["content"]) for m in out["messages"]]
    assert kinds[0] == ("human", "go") and kinds[1][0] == "ai"
    assert kinds[2:4] == [("tool", ABORTED_TOOL_TEXT)] * 2
    assert kinds[4] == ("human", "next") and len(kinds) == 6


async def check_background_approval(client: Any) -> None:
    """SPEC §12 on a server: a tool approval inside a server-hosted background task pauses
    only the task, on its own thread (the task record's `server_thread`), whose run is
    then `interrupted`; resumed there with a `Command`, the task finishes and the parent
    thread gets its notice, answered once."""
    from tests.studio.background_graph import answered_on_server

    tid = await _thread(client)
    await _run(client, tid, "background_approval", input=_human("go"))
    state = await client.threads.get_state(tid)
    [(_, record)] = state["values"]["background_tasks"].items()
    task_thread = record["server_thread"]
    deadline = asyncio.get_running_loop().time() + 60
    while not (task_state := await client.threads.get_state(task_thread))["interrupts"]:
        assert asyncio.get_running_loop().time() < deadline, task_state
        await asyncio.sleep(0.2)
    [interrupt] = task_state["interrupts"]
    assert interrupt["value"]["tool_name"] == "note"
    await client.runs.wait(task_thread, "parity_background_approval", command={"resume": {interrupt["id"]: {"approved": True}}})
    await answered_on_server(client, tid, "noted bees")


async def _reported(client: Any, thread_id: str) -> str:
    """The supervisor's answer to the thread's one background notice, once it is there."""
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        messages = await _messages(client, thread_id)
        if str(messages[-1]["content"]).startswith("reported:"):
            notices = [m for m in messages if (m.get("additional_kwargs") or {}).get("background_task")]
            assert len(notices) == 1, notices  # reported once
            return str(messages[-1]["content"])
        assert asyncio.get_running_loop().time() < deadline, messages[-1]
        await asyncio.sleep(0.2)


async def check_background_control(client: Any) -> None:
    """SPEC §12 on a server: the control tools are answered by the server host. `check`
    reads the task's state, `update` restarts it on its thread with the new
    instructions, `cancel` stops its run and reports `cancelled` to the parent, once."""
    tid = await _thread(client)
    await _run(client, tid, "background_control", input=_human("go"))
    out = await _run(client, tid, "background_control", input=_human("check"))
    assert out["messages"][-1]["content"].startswith("control: bg_") and ": running, tries 0" in out["messages"][-1]["content"]
    out = await _run(client, tid, "background_control", input=_human("update"))
    assert "goes on with the new instructions" in out["messages"][-1]["content"], out["messages"][-1]
    answer = await _reported(client, tid)
    assert answer.endswith("completed] / facts for: dig /  / Updated instructions: be brief"), answer
    tid = await _thread(client)
    await _run(client, tid, "background_control", input=_human("go"))
    out = await _run(client, tid, "background_control", input=_human("cancel"))
    assert out["messages"][-1]["content"].endswith("is cancelled.")
    answer = await _reported(client, tid)
    assert "cancelled] / Cancelled by the supervisor." in answer, answer
    await asyncio.sleep(1)  # the cancelled run reports nothing more
    await _reported(client, tid)


async def check_middleware(client: Any) -> None:
    """LangChain middleware in the served graph (SPEC §33): PIIMiddleware redacts the
    user's email in the stored thread and in what the worker (which inherits it) was
    asked; ModelCallLimitMiddleware counts the boss's calls in the thread's state and, on
    the thread's next run, ends it with its message once the limit is reached."""
    tid = await _thread(client)
    out = await _run(client, tid, "middleware", input=_human("mail ada@example.com"))
    contents = [str(m["content"]) for m in out["messages"]]
    assert contents[0] == "mail [REDACTED_EMAIL]" and "ada@example.com" not in "".join(contents), contents
    assert out["messages"][-1]["content"] == "worked on: mail [REDACTED_EMAIL]"
    assert out["thread_model_call_count"] == 2
    out = await _run(client, tid, "middleware", input=_human("again"))
    assert "Model call limits exceeded" in str(out["messages"][-1]["content"]), out["messages"][-1]


async def _last(client: Any, thread_id: str, graph: str, **kwargs: Any) -> str:
    return str((await _run(client, thread_id, graph, **kwargs))["messages"][-1]["content"])


def _edited(message: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """`message` (as the server gave it, its id kept) with `changes`: an edit, not a new message."""
    return {**message, **changes}


async def check_time_travel(client: Any, *, copies: bool = True) -> None:
    """SPEC §34 through `langgraph_sdk`: a run from an earlier checkpoint forks, the subagent
    (one thread per parent thread) as it was there, and the old branch goes on as if the
    fork had not happened; an edited delegation call (`update_state` as the supervisor)
    runs with its edited prompt, an edited subagent result is what the supervisor reads;
    a copied thread keeps the subagent's memory and leaves its source as it was
    (`copies=False`: the server has no `threads.copy`, which is checked to answer 404)."""
    tid = await _thread(client)
    assert await _last(client, tid, "time_travel", input=_human("A")) == "done: sub saw topic A"
    assert await _last(client, tid, "time_travel", input=_human("B")) == "done: sub saw topic A | topic B"
    history = await client.threads.get_history(tid, limit=50)  # newest first
    assert [s["metadata"]["step"] for s in history] == sorted((s["metadata"]["step"] for s in history), reverse=True)
    head = history[0]["checkpoint"]["checkpoint_id"]
    after_a = next(s for s in history if not s["next"] and s["values"]["messages"][-1]["content"] == "done: sub saw topic A")

    # a fork from after A, by `runs.wait` as Studio's "fork" does: the subagent never heard of B
    fork = await client.runs.wait(
        tid, "parity_time_travel", input=_human("C"), checkpoint_id=after_a["checkpoint"]["checkpoint_id"]
    )
    assert fork["messages"][-1]["content"] == "done: sub saw topic A | topic C", fork["messages"][-1]
    # the subagent's own checkpoint in that branch, read in its namespace of the thread
    result = fork["messages"][-2]
    namespace = result["artifact"]["sub_agent_thread_id"].partition("::")[2]
    sub = await client.threads.get_state(
        tid, checkpoint={"checkpoint_ns": namespace, "checkpoint_id": result["artifact"]["sub_agent_checkpoint_id"]}
    )
    assert [m["content"] for m in sub["values"]["messages"] if m["type"] == "human"] == ["topic A", "topic C"]
    # the abandoned branch, continued: nothing of C
    assert await _last(client, tid, "time_travel", input=_human("D"), checkpoint_id=head) == (
        "done: sub saw topic A | topic B | topic D"
    )

    # Studio's "edit and rerun" of the delegation call: the subagent gets the edited prompt
    history = await client.threads.get_history(tid, limit=50)
    before = next(s for s in history if s["next"] == ["research"])  # the newest: D's delegation
    call = before["values"]["messages"][-1]
    assert call["tool_calls"][0]["args"]["prompt"] == "topic D"
    tool_call = {**call["tool_calls"][0], "args": {**call["tool_calls"][0]["args"], "prompt": "topic EDITED"}}
    edit = await client.threads.update_state(
        tid, {"messages": [_edited(call, tool_calls=[tool_call])]}, as_node="supervisor",
        checkpoint_id=before["checkpoint"]["checkpoint_id"],
    )
    state = await client.threads.get_state(tid, subgraphs=True)
    assert state["next"] == ["research"] and [t["name"] for t in state["tasks"]] == ["research"], state
    # the subagent's state as LangGraph reads it: its namespace's newest checkpoint, of any branch
    assert state["tasks"][0]["state"]["values"]["messages"], state["tasks"]
    out = await _run(client, tid, "time_travel", input=None, checkpoint_id=edit["checkpoint"]["checkpoint_id"])
    assert out["messages"][-1]["content"] == "done: sub saw topic A | topic B | topic EDITED", out["messages"][-1]
    assert [m["content"] for m in out["messages"] if m["type"] == "human"] == ["A", "B", "D"]  # one call, edited

    # an edited subagent result: the supervisor reads the edit
    history = await client.threads.get_history(tid, limit=50)
    after_sub = next(s for s in history if s["next"] == ["supervisor"] and s["values"]["messages"][-1]["type"] == "tool")
    result = after_sub["values"]["messages"][-1]
    assert result["content"] == "sub saw topic A | topic B | topic EDITED"
    edit = await client.threads.update_state(
        tid, {"messages": [_edited(result, content="RESULT EDITED")]}, checkpoint_id=after_sub["checkpoint"]["checkpoint_id"]
    )
    # the checkpoint named: Aegra refuses a run with neither input, command nor checkpoint
    assert await _last(client, tid, "time_travel", input=None, checkpoint_id=edit["checkpoint"]["checkpoint_id"]) == (
        "done: RESULT EDITED"
    )

    # a copy of the thread: its next turn remembers what the source's subagent was told
    if not copies:
        with pytest.raises(NotFoundError):  # Aegra 0.11 serves no POST /threads/{id}/copy
            await client.threads.copy(tid)
        return
    source = await client.threads.get_state(tid)
    sub_history = await client.threads.get_history(tid, checkpoint={"checkpoint_ns": namespace}, limit=50)
    copy = await client.threads.copy(tid)
    assert await _last(client, copy["thread_id"], "time_travel", input=_human("E")) == (
        "done: sub saw topic A | topic B | topic EDITED | topic E"
    )
    assert (await client.threads.get_state(tid))["checkpoint"] == source["checkpoint"]
    assert await client.threads.get_history(tid, checkpoint={"checkpoint_ns": namespace}, limit=50) == sub_history
