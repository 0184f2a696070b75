"""`suspend()` inside tools, client tools at both levels, and a pause surviving a
process restart (SPEC §9)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, create_tool, suspend
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


class Ask(BaseModel):
    question: str


class Answer(BaseModel):
    account: str


def asking_tool(schema: type[BaseModel] | None, seen: list):
    def execute(args: Ask):
        data = suspend({"question": args.question})
        seen.append(data)
        return f"using {data.account if isinstance(data, Answer) else data}"

    return create_tool(id="ask_user", description="Ask the user.", input_schema=Ask, execute=execute, resume_schema=schema)


def agent_with(tool, store) -> Agent:
    model = ScriptedChatModel(
        policy=lambda m: f"done: {m[-1].content}" if isinstance(m[-1], ToolMessage) else tool_call("ask_user", {"question": "Which account?"})
    )
    return Agent(id="solo", model=model, tools=[tool], memory=store.memory)


async def test_suspend_with_resume_schema(store) -> None:
    seen: list = []
    agent = agent_with(asking_tool(Answer, seen), store)
    call = store.call()
    stream = await agent.stream("go", **call)
    chunks = [c async for c in stream.full_stream]
    paused = await stream.result()
    [item] = paused.suspended
    assert item.kind == "suspend" and item.payload == {"question": "Which account?"}
    assert [c.type for c in chunks if c.type.startswith("tool-call")] == ["tool-call", "tool-call-suspended"]
    with pytest.raises(ValueError, match="does not match its resume schema"):
        await agent.resume_generate({"acct": 1}, run_id=paused.run_id, memory=call["memory"])
    resumed = await agent.resume_stream({"account": "ACME-1"}, run_id=paused.run_id, memory=call["memory"])
    _ = [c async for c in resumed.full_stream]
    assert (await resumed.result()).text == "done: using ACME-1"
    assert seen == [Answer(account="ACME-1")]


async def test_suspend_without_schema_passes_data_through(store) -> None:
    seen: list = []
    agent = agent_with(asking_tool(None, seen), store)
    call = store.call()
    paused = await agent.generate("go", **call)
    done = await agent.resume_generate("savings", memory=call["memory"])
    assert done.text == "done: using savings" and seen == ["savings"]
    assert paused.suspended[0].tool_name == "ask_user"


async def test_client_tool_at_the_top_level_waits_for_the_caller(store) -> None:
    confirm = create_tool(id="confirm_in_ui", description="Ask the UI.", input_schema=Ask)  # no execute
    model = ScriptedChatModel(
        policy=lambda m: f"user said {m[-1].content}" if isinstance(m[-1], ToolMessage) else tool_call("confirm_in_ui", {"question": "ok?"}, id="ui-1")
    )
    agent = Agent(id="solo", model=model, tools=[confirm], memory=store.memory)
    call = store.call()
    result = await agent.generate("go", **call)
    assert result.finish_reason == "tool-calls"
    assert isinstance(result.messages[-1], AIMessage) and result.messages[-1].tool_calls[0]["id"] == "ui-1"
    [item] = result.suspended  # SPEC §5: a client_tool pending item
    assert (item.kind, item.tool_call_id, item.tool_name, item.args, item.agent_path, item.run_id) == (
        "client_tool", "ui-1", "confirm_in_ui", {"question": "ok?"}, ("solo",), result.run_id
    )
    assert not item.is_interrupt and item.interrupt_id is None
    answered = await agent.generate([ToolMessage(content="yes", tool_call_id="ui-1")], memory=call["memory"])
    assert answered.text == "user said yes"


async def test_client_tool_in_a_subagent_is_reported_not_run(store, caplog) -> None:
    confirm = create_tool(id="confirm_in_ui", description="Ask the UI.", input_schema=Ask)
    sub = Agent(
        id="helper-agent",
        description="Helps.",
        model=ScriptedChatModel(responses=[AIMessage(content="Need the user.", tool_calls=[tool_call("confirm_in_ui", {"question": "ok?"})])]),
        tools=[confirm],
    )
    boss_model = ScriptedChatModel(responses=[delegate("helper", "do it"), "handled"])
    boss = Agent(id="boss", model=boss_model, agents={"helper": sub}, memory=store.memory)
    result = await boss.generate("go", **store.call())
    assert result.text == "handled"
    [record] = result.delegations
    assert record.finish_reason == "tool-calls"
    assert [(c["tool_name"], c["args"]) for c in record.sub_agent_pending_tool_calls] == [("confirm_in_ui", {"question": "ok?"})]
    [seen] = [m for m in boss_model.calls[1] if isinstance(m, ToolMessage)]
    assert "Need the user." in seen.content and "never ran: confirm_in_ui" in seen.content
    assert "client tools it cannot run" in caplog.text


AGENT_FILE = """
import json, pathlib, sys
from langchain_core.messages import ToolMessage
from pydantic import BaseModel
from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

LEDGER = pathlib.Path(sys.argv[2])

class Payment(BaseModel):
    amount: int

def execute(args):
    with LEDGER.open("a") as f:
        f.write(f"{args.amount}\\n")
    return f"paid {args.amount}"

pay = create_tool(id="pay", description="Pay.", input_schema=Payment, execute=execute, require_approval=True)
payer = Agent(id="payer-agent", description="Pays.", tools=[pay], model=ScriptedChatModel(
    policy=lambda m: f"paid: {m[-1].content}" if isinstance(m[-1], ToolMessage) else tool_call("pay", {"amount": 7})))
boss = Agent(id="boss", agents={"payer": payer}, memory=Memory(storage="file:" + sys.argv[1]), model=ScriptedChatModel(
    policy=lambda m: f"final {m[-1].content}" if isinstance(m[-1], ToolMessage) else delegate("payer", "pay")))
"""


def test_a_pause_survives_a_process_restart(tmp_path) -> None:
    (tmp_path / "agents_def.py").write_text(AGENT_FILE)
    db, ledger = tmp_path / "pause.db", tmp_path / "ledger.txt"
    first = textwrap.dedent(
        """
        import json, sys
        from agents_def import boss
        result = boss.generate_sync("go", memory={"thread": "restart", "resource": "r"})
        print(json.dumps({"reason": result.finish_reason, "run_id": result.run_id, "call": result.suspended[0].tool_call_id}))
        """
    )
    second = textwrap.dedent(
        """
        import json, sys
        from agents_def import boss
        info = json.loads(sys.argv[3])
        result = boss.approve_tool_call_sync(run_id=info["run_id"], tool_call_id=info["call"], memory={"thread": "restart", "resource": "r"})
        print(json.dumps({"reason": result.finish_reason, "text": result.text, "run_id": result.run_id}))
        """
    )

    def run(code: str, *extra: str) -> dict:
        out = subprocess.run(
            [sys.executable, "-c", code, str(db), str(ledger), *extra], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    paused = run(first)
    assert paused["reason"] == "suspended" and not ledger.exists()
    done = run(second, json.dumps(paused))
    assert done == {"reason": "stop", "text": "final paid: paid 7", "run_id": paused["run_id"]}
    assert ledger.read_text().split() == ["7"]
