"""Decisions on approvals over AG-UI, on real HTTP (SPEC §29): the interrupt says what the
person may decide; `RunAgentInput.resume` entries edit, reject with a reason or approve,
several at once, each checked before anything resumes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from langchain_core.messages import ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.agui import AGUIAgent, add_agui_endpoint
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call
from tests.agui.conftest import ThreadServer
from tests.agui.test_endpoint import body, post

LEDGER: list[tuple[int, str]] = []


class Transfer(BaseModel):
    amount: int
    to: str = "acme"


def payer(id: str, amount: int, **approval: Any) -> Agent:
    def execute(args: Transfer) -> str:
        LEDGER.append((args.amount, args.to))
        return f"paid {args.amount} to {args.to}"

    tool = create_tool(
        id="pay", description="Pay an amount.", input_schema=Transfer, execute=execute, require_approval=approval or True
    )
    model = ScriptedChatModel(
        policy=lambda m: f"{id}: {m[-1].content}" if isinstance(m[-1], ToolMessage) else tool_call("pay", {"amount": amount})
    )
    return Agent(id=id, description="Pays.", model=model, tools=[tool])


def supervisor(id: str, agents: dict[str, Any], calls: Any, memory: Memory | None = None) -> Agent:
    def policy(messages: list[Any]) -> Any:
        if not any(isinstance(m, ToolMessage) for m in messages):
            return calls
        return f"{id} final: " + " | ".join(str(m.content) for m in messages if isinstance(m, ToolMessage))

    return Agent(id=id, description="Delegates.", model=ScriptedChatModel(policy=policy), agents=agents, memory=memory)


DEEP = payer("deep-payer", 1200)
MIDDLE = supervisor("middle", {"payer": DEEP}, delegate("payer", "pay"))
NEAR = payer("near-payer", 300)
STRICT = payer("strict-payer", 7, allowed_decisions=["approve", "reject"], description="Check the amount.")
TOP = supervisor(
    "top", {"middle": MIDDLE, "near": NEAR, "strict": STRICT}, [delegate("middle", "handle it"), delegate("near", "pay")], Memory()
)
ALONE = supervisor("alone", {"strict": STRICT}, delegate("strict", "pay"), Memory())
SOLO = payer("solo", 90).model_copy(update={"memory": Memory()})


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    app = FastAPI()
    add_agui_endpoint(app, AGUIAgent(TOP, resource_id="u"), "/top")
    add_agui_endpoint(app, AGUIAgent(ALONE, resource_id="u", subagent_visibility="attributed"), "/alone")
    add_agui_endpoint(app, AGUIAgent(SOLO, resource_id="u"), "/solo")
    with ThreadServer(app) as running:
        yield running.url


def by_path(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {i["metadata"]["supervisor_graph"]["agent_path"][-1]: i for i in events[-1]["outcome"]["interrupts"]}


def entry(item: dict[str, Any], payload: Any, status: str = "resolved") -> dict[str, Any]:
    return {"interrupt_id": item["id"], "status": status, "payload": payload}


async def test_edit_and_reject_at_depth_one_and_two_in_one_resume(url: str) -> None:
    LEDGER.clear()
    events, _, _ = await post(f"{url}/top", body("t-dec-1", "go"))
    assert events[-1]["outcome"]["type"] == "interrupt"
    items = by_path(events)
    near, deep = items["near-payer"], items["deep-payer"]
    meta = near["metadata"]["supervisor_graph"]
    assert meta["allowed_decisions"] == ["approve", "edit", "reject"]
    assert meta["input_schema"]["properties"]["amount"]["type"] == "integer"
    assert near["responseSchema"]["properties"]["args"] == meta["input_schema"]
    assert "message" in near["responseSchema"]["properties"]
    # edited args of the wrong type: refused with the field's error, nothing resumed
    bad = [entry(near, {"approved": True, "args": {"amount": "three hundred"}}), entry(deep, {"approved": False})]
    refused, _, _ = await post(f"{url}/top", body("t-dec-1", resume=bad))
    assert [e["type"] for e in refused] == ["RUN_STARTED", "RUN_ERROR"]
    assert refused[-1]["code"] == "INVALID_TOOL_APPROVAL" and "amount: Input should be a valid integer" in refused[-1]["message"]
    assert LEDGER == [] and len(DEEP.model.calls) == 1  # type: ignore[union-attr]
    # one resume, each approval with its own decision
    good = [
        entry(near, {"approved": True, "args": {"amount": 30, "to": "bob"}}),
        entry(deep, {"approved": False, "message": "Ask finance first."}),
    ]
    done, _, _ = await post(f"{url}/top", body("t-dec-1", resume=good))
    assert done[-1]["outcome"] == {"type": "success"}
    assert LEDGER == [(30, "bob")]  # the edit ran once; the rejected call never ran
    seen = [m.content for m in DEEP.model.calls[-1] if isinstance(m, ToolMessage)]  # type: ignore[union-attr]
    assert seen == ["The user declined this tool call; it did not run. Their reason: Ask finance first."]
    assert [e for e in done if e["type"] == "TOOL_CALL_ARGS"] == []  # subagents' calls stay hidden
    again, _, _ = await post(f"{url}/top", body("t-dec-1", resume=good[:1]))
    assert again[-1]["code"] == "INTERRUPT_NOT_PENDING" and LEDGER == [(30, "bob")]


async def test_a_decision_the_tool_does_not_allow_is_refused_and_stays_pending(url: str) -> None:
    LEDGER.clear()
    events, _, _ = await post(f"{url}/alone", body("t-dec-2", "go"))
    [item] = events[-1]["outcome"]["interrupts"]
    assert item["message"] == "Check the amount." and item["subagentRunId"]
    assert item["metadata"]["supervisor_graph"]["allowed_decisions"] == ["approve", "reject"]
    assert set(item["responseSchema"]["properties"]) == {"approved", "message"}
    refused, _, _ = await post(f"{url}/alone", body("t-dec-2", resume=[entry(item, {"approved": True, "args": {"amount": 1}})]))
    assert refused[-1]["code"] == "INVALID_TOOL_APPROVAL" and "'edit' is not allowed" in refused[-1]["message"]
    for payload in ({"approved": True, "arg": {}}, {"approved": False, "message": 5}, {"approved": False, "args": {}}):
        refused, _, _ = await post(f"{url}/alone", body("t-dec-2", resume=[entry(item, payload)]))
        assert refused[-1]["code"] == "INVALID_TOOL_APPROVAL", payload
    assert LEDGER == []
    done, _, _ = await post(f"{url}/alone", body("t-dec-2", resume=[entry(item, {"message": "not now"}, "cancelled")]))
    assert done[-1]["outcome"] == {"type": "success"} and LEDGER == []
    results = [e["content"] for e in done if e["type"] == "TOOL_CALL_RESULT"]
    assert any(r.endswith("Their reason: not now") for r in results)


async def test_an_edited_top_level_call_is_shown_with_the_args_it_ran_with(url: str) -> None:
    LEDGER.clear()
    events, _, _ = await post(f"{url}/solo", body("t-dec-3", "go"))
    [item] = events[-1]["outcome"]["interrupts"]
    assert item["metadata"]["supervisor_graph"]["args"] == {"amount": 90}
    done, _, _ = await post(f"{url}/solo", body("t-dec-3", resume=[entry(item, {"approved": True, "args": {"amount": 9}})]))
    assert [e["delta"] for e in done if e["type"] == "TOOL_CALL_ARGS"] == ['{"amount": 9}']
    [result] = [e["content"] for e in done if e["type"] == "TOOL_CALL_RESULT"]
    assert result.endswith("paid 9 to acme") and LEDGER == [(9, "acme")]
    assert done[-1]["outcome"] == {"type": "success"}
