"""Run lifecycle (AGUI.md "Run lifecycle"): RUN_STARTED with the protocol version, exactly
one terminal event, finish reasons, usage per provider+model, errors, cancellation,
frontend tools."""

from __future__ import annotations

import asyncio
from typing import Any

from ag_ui.core import AssistantMessage, FunctionCall, Tool, ToolCall, ToolMessage, UserMessage
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import AIMessage

from supervisor_graph import AbortController, Agent, Memory
from supervisor_graph.testing import ScriptedChatModel
from tests.agui.conftest import (
    AGUIAgent,
    after_tool,
    boss,
    collect,
    delegate,
    make_input,
    of_type,
    payer,
    researcher,
    solo,
    tool_call,
    types,
    wire,
)

TERMINAL = ("RUN_FINISHED", "RUN_ERROR")


def assert_one_terminal(events) -> None:
    kinds = types(events)
    assert kinds[0] == "RUN_STARTED" and wire(events)[0]["protocolVersion"] == "1.0"
    assert sum(k in TERMINAL for k in kinds) == 1 and kinds[-1] in TERMINAL, kinds


async def test_a_plain_answer_streams_one_text_message() -> None:
    bridge = AGUIAgent(solo("Hello there, friend."), resource_id="u1")
    events = await collect(bridge, make_input())
    assert_one_terminal(events)
    assert types(events) == [
        "RUN_STARTED",
        "STEP_STARTED",  # each model call is a step, its usage in the finish (the playground's timeline)
        "TEXT_MESSAGE_START",
        *["TEXT_MESSAGE_CONTENT"] * 3,
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "RUN_FINISHED",
    ]
    step = of_type(events, "STEP_FINISHED")[0]
    assert step["stepName"] == of_type(events, "STEP_STARTED")[0]["stepName"] == "solo step 1"
    assert step["metadata"]["supervisor_graph"]["usage"]["input_tokens"] == 10
    start = of_type(events, "TEXT_MESSAGE_START")[0]
    assert start["role"] == "assistant"
    assert "".join(e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT")) == "Hello there, friend."
    finished = wire(events)[-1]
    assert finished["outcome"] == {"type": "success"}
    assert finished["metadata"]["supervisor_graph"]["finish_reason"] == "stop"
    assert finished["usage"] == [{"model": "scripted", "inputTokens": 10, "outputTokens": 5, "totalTokens": 15}]
    assert "pendingToolCallIds" not in finished["outcome"]


async def test_text_after_a_tool_call_gets_a_new_message_id() -> None:
    def policy(messages):
        if len(messages) == 1:
            return AIMessage(content="Let me delegate.", tool_calls=[delegate("research_agent", "facts")])
        return "Here are the facts."

    agent = Agent(id="boss", model=ScriptedChatModel(policy=policy), agents={"research_agent": researcher()}, memory=Memory())
    events = await collect(AGUIAgent(agent, resource_id="u1"), make_input())
    starts = of_type(events, "TEXT_MESSAGE_START")
    assert len(starts) == 2 and starts[0]["messageId"] != starts[1]["messageId"]
    kinds = types(events)
    assert kinds.index("TEXT_MESSAGE_END") < kinds.index("TOOL_CALL_START")
    call = of_type(events, "TOOL_CALL_START")[0]
    assert call["parentMessageId"] == starts[0]["messageId"]


async def test_finish_reasons_reach_the_metadata() -> None:
    long = ScriptedChatModel(responses=["cut short"], finish_reason="length")
    events = await collect(AGUIAgent(solo(long), resource_id="u1"), make_input())
    assert wire(events)[-1]["metadata"]["supervisor_graph"]["finish_reason"] == "length"

    looping = ScriptedChatModel(policy=lambda m: delegate("research_agent", "again"))
    agent = Agent(id="boss", model=looping, agents={"research_agent": researcher()}, memory=Memory(), default_options={"max_steps": 2})
    events = await collect(AGUIAgent(agent, resource_id="u1"), make_input())
    finished = wire(events)[-1]
    assert finished["outcome"] == {"type": "success"}
    assert finished["metadata"]["supervisor_graph"]["finish_reason"] == "max_steps"


async def test_usage_is_per_model_and_includes_subagents(ledger) -> None:
    agent = boss({"research_agent": researcher("research-model")}, delegate("research_agent", "facts"))
    events = await collect(AGUIAgent(agent, resource_id="u1"), make_input())
    usage = {u["model"]: u for u in wire(events)[-1]["usage"]}
    assert usage["boss-model"]["totalTokens"] == 30  # two supervisor calls
    assert usage["research-model"]["totalTokens"] == 15


async def test_usage_is_counted_once_across_a_pause_and_resume(ledger) -> None:
    bridge = AGUIAgent(boss({"payer": payer(ledger)}, delegate("payer", "pay")), resource_id="u1")
    paused = await collect(bridge, make_input("t-usage"))
    first = {u["model"]: u["totalTokens"] for u in wire(paused)[-1]["usage"]}
    assert first == {"boss-model": 15, "payer-model": 15}  # the calls made before pausing
    [pending] = wire(paused)[-1]["outcome"]["interrupts"]
    resumed = await collect(bridge, make_input("t-usage", resume=[{"interrupt_id": pending["id"], "status": "resolved", "payload": True}]))
    second = {u["model"]: u["totalTokens"] for u in wire(resumed)[-1]["usage"]}
    assert second == {"payer-model": 15, "boss-model": 15}  # only the resumed run's own calls
    assert ledger == [5]


async def test_usage_by_agent_splits_the_runs_usage_per_agent_path(ledger) -> None:
    bridge = AGUIAgent(boss({"payer": payer(ledger), "research": researcher()}, [delegate("payer", "pay"), delegate("research", "facts")]), resource_id="u1")
    paused = wire(await collect(bridge, make_input("t-by-agent")))[-1]
    assert paused["metadata"]["supervisor_graph"]["usage_by_agent"] == {
        "boss": [{"model": "boss-model", "inputTokens": 10, "outputTokens": 5, "totalTokens": 15}],
        "boss/payer-agent": [{"model": "payer-model", "inputTokens": 10, "outputTokens": 5, "totalTokens": 15}],
        "boss/research-agent": [{"model": "research-model", "inputTokens": 10, "outputTokens": 5, "totalTokens": 15}],
    }
    [pending] = paused["outcome"]["interrupts"]
    resumed = wire(await collect(bridge, make_input("t-by-agent", resume=[{"interrupt_id": pending["id"], "status": "resolved", "payload": True}])))[-1]
    by_agent = resumed["metadata"]["supervisor_graph"]["usage_by_agent"]
    # like `usage`, the resumed run counts only its own calls, and the two agree
    assert {path: [u["totalTokens"] for u in entries] for path, entries in by_agent.items()} == {"boss/payer-agent": [15], "boss": [15]}
    assert sum(u["totalTokens"] for entries in by_agent.values() for u in entries) == sum(u["totalTokens"] for u in resumed["usage"])


async def test_a_failing_model_ends_with_run_error_without_details() -> None:
    secret = RuntimeError("provider said: invalid key sk-live-SECRET at https://api.example")
    bridge = AGUIAgent(solo(ScriptedChatModel(responses=[secret])), resource_id="u1")
    events = await collect(bridge, make_input())
    assert_one_terminal(events)
    error = wire(events)[-1]
    assert error["type"] == "RUN_ERROR" and error["code"] == "AGENT_ERROR"
    assert "SECRET" not in error["message"] and "Traceback" not in error["message"] and "example" not in error["message"]


async def test_abort_run_ends_the_run_cancelled() -> None:
    began = asyncio.Event()

    class Began(AsyncCallbackHandler):
        async def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
            began.set()

    slow = ScriptedChatModel(responses=["never seen"], latency=30, callbacks=[Began()])
    bridge = AGUIAgent(solo(slow), resource_id="u1")
    events = []

    async def consume() -> None:
        async for event in bridge.run(make_input("t-abort")):
            events.append(event)

    task = asyncio.ensure_future(consume())
    # the run is in its model call: not a guessed 0.3 s, which a busy machine outruns
    await asyncio.wait_for(began.wait(), 60)
    bridge.abort_run()
    await asyncio.wait_for(task, 20)  # not the model's 30 s
    assert_one_terminal(events)
    finished = wire(events)[-1]
    assert finished["outcome"] == {"type": "cancelled"}
    assert "usage" not in finished and "metadata" not in finished
    # the thread stays usable
    slow.latency = 0
    slow.responses.append("second answer")
    again = await collect(bridge, make_input("t-abort", "again"))
    assert wire(again)[-1]["outcome"] == {"type": "success"}


async def test_the_agents_own_abort_signal_cancels_too() -> None:
    controller = AbortController()
    agent = Agent(
        id="solo",
        model=ScriptedChatModel(responses=["x"], latency=5),
        memory=Memory(),
        default_options={"abort_signal": controller.signal},
    )
    bridge = AGUIAgent(agent, resource_id="u1")
    asyncio.get_running_loop().call_later(0.2, controller.abort)
    events = await asyncio.wait_for(collect(bridge, make_input()), 5)
    assert wire(events)[-1]["outcome"] == {"type": "cancelled"}


async def test_frontend_tools_end_the_run_with_pending_ids_in_call_order() -> None:
    calls = [tool_call("show_card", {"title": "a"}, id="ui-1"), tool_call("lookup", {}, id="srv-1"), tool_call("show_card", {"title": "b"}, id="ui-2")]

    def lookup() -> str:
        """Look something up."""
        return "looked up"

    model = ScriptedChatModel(policy=after_tool("user answered", calls))
    agent = Agent(id="solo", model=model, tools=[lookup], memory=Memory())
    bridge = AGUIAgent(agent, resource_id="u1")
    card = Tool(name="show_card", description="Show a card in the UI.", parameters={"type": "object", "properties": {"title": {"type": "string"}}})
    events = await collect(bridge, make_input("t-ui", tools=[card]))
    finished = wire(events)[-1]
    assert finished["outcome"] == {"type": "success", "pendingToolCallIds": ["ui-1", "ui-2"]}
    assert finished["metadata"]["supervisor_graph"]["finish_reason"] == "tool-calls"
    results = of_type(events, "TOOL_CALL_RESULT")
    assert [r["toolCallId"] for r in results] == ["srv-1"]  # the run answered its own call
    assert "show_card" in str(model.call_tools[0])  # the model was offered the frontend tool

    # the client answers both calls; the thread goes on
    history = [
        UserMessage(id="u-x", content="go"),
        AssistantMessage(
            id="ai-x",
            tool_calls=[ToolCall(id="ui-1", function=FunctionCall(name="show_card", arguments='{"title": "a"}'))],
        ),
        ToolMessage(id="tm-1", tool_call_id="ui-1", content="shown a"),
        ToolMessage(id="tm-2", tool_call_id="ui-2", content="shown b"),
    ]
    answered = await collect(bridge, make_input("t-ui", messages=history, tools=[card]))
    assert wire(answered)[-1]["outcome"] == {"type": "success"}
    text = "".join(e["delta"] for e in of_type(answered, "TEXT_MESSAGE_CONTENT"))
    assert text.startswith("user answered: shown")


async def test_a_frontend_tool_may_not_shadow_a_server_tool() -> None:
    def lookup() -> str:
        """Look something up."""
        return "x"

    bridge = AGUIAgent(Agent(id="solo", model=ScriptedChatModel(responses=["x"]), tools=[lookup], memory=Memory()), resource_id="u1")
    events = await collect(bridge, make_input(tools=[Tool(name="lookup", description="dup", parameters={"type": "object"})]))
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"] and wire(events)[-1]["code"] == "INVALID_TOOLS"


async def test_only_new_messages_are_added_to_the_thread() -> None:
    model = ScriptedChatModel(policy=lambda m: f"seen {sum(1 for x in m if x.type == 'human')} user messages")
    bridge = AGUIAgent(solo(model), resource_id="u1")
    first = await collect(bridge, make_input("t-hist", messages=[UserMessage(id="m1", content="one")]))
    reply_id = of_type(first, "TEXT_MESSAGE_START")[0]["messageId"]
    text = "".join(e["delta"] for e in of_type(first, "TEXT_MESSAGE_CONTENT"))
    history = [
        UserMessage(id="m1", content="one"),
        AssistantMessage(id=reply_id, content=text),
        UserMessage(id="m2", content="two"),
    ]
    second = await collect(bridge, make_input("t-hist", messages=history))
    assert "".join(e["delta"] for e in of_type(second, "TEXT_MESSAGE_CONTENT")) == "seen 2 user messages"
    stored = await bridge.memory.get_messages("t-hist")
    assert [m.type for m in stored] == ["human", "ai", "human", "ai"]
