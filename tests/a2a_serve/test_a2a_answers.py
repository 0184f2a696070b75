"""The `input-required` data part and the answers to it (`supervisor_graph.a2a.answers`):
camelCase keys as A2A 1.0 JSON has them (the test kit's DM-SERIAL-001), and the
snake_case `interrupt_id` answers sent before still read for one release."""

from __future__ import annotations

import re
from typing import Any

import pytest
from ag_ui.core import Interrupt

from supervisor_graph.a2a.answers import plan_answers, waiting_data
from supervisor_graph.agui.interrupts import SUPERVISOR_GRAPH, Pause

CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")


def _approval(call: str, dialect: Any = SUPERVISOR_GRAPH) -> Interrupt:
    value = {
        "kind": "approval",
        "tool_call_id": call,
        "tool_name": "pay",
        "args": {"amount": 5, "payee_name": "ACME"},
        "run_id": "r1",
        "agent_path": ["boss"],
        "allowed_decisions": ["approve", "reject"],
        "input_schema": {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]},
    }
    return Pause.of_value(call, value).interrupt(dialect, attributed=False)


def _suspend(call: str) -> Interrupt:
    value = {"kind": "suspend", "tool_call_id": call, "tool_name": "ask_account", "args": {}, "run_id": "r1",
             "payload": {"message": "Which account?"}, "resume_schema": {"type": "object"}}  # fmt: skip
    return Pause.of_value(call, value).interrupt(SUPERVISOR_GRAPH, attributed=False)


def test_the_waiting_items_have_camel_case_keys() -> None:
    pay, ask = _approval("c1"), _suspend("c2")
    data = waiting_data([pay, ask])
    approval, suspend = data["interrupts"]
    assert set(approval) == {"interruptId", "kind", "toolName", "args", "message", "responseSchema",
                             "allowedDecisions", "inputSchema"}  # fmt: skip
    assert set(suspend) == {"interruptId", "kind", "toolName", "args", "message", "responseSchema"}
    assert all(CAMEL.match(key) for item in data["interrupts"] for key in item), data
    assert (approval["interruptId"], approval["toolName"], approval["kind"]) == (pay.id, "pay", "approval")
    assert approval["allowedDecisions"] == ["approve", "reject"]
    assert approval["inputSchema"]["required"] == ["amount"]
    # the tool's own names are its own: its arguments keep theirs
    assert approval["args"] == {"amount": 5, "payee_name": "ACME"}
    assert (suspend["toolName"], suspend["message"]) == ("ask_account", "Which account?")


def test_the_mastra_dialect_metadata_names_the_tool_too() -> None:
    from supervisor_graph.agui.interrupts import MASTRA

    [item] = waiting_data([_approval("c1", MASTRA)])["interrupts"]
    assert item["toolName"] == "pay" and item["args"]["amount"] == 5


@pytest.mark.parametrize("key", ["interruptId", "interrupt_id"])
def test_an_answer_names_its_approval_by_either_key(key: str) -> None:
    first, second = _approval("c1"), _approval("c2")
    entries = plan_answers([first, second], [], [{"approved": False, "message": "no", key: second.id}])
    assert entries is not None
    assert [(e.interrupt_id, e.status, e.payload) for e in entries] == [
        (second.id, "resolved", {"approved": False, "message": "no"})
    ]  # the id key is not part of the decision the bridge checks


@pytest.mark.parametrize("key", ["interruptId", "interrupt_id"])
def test_an_answer_naming_another_approval_answers_nothing(key: str) -> None:
    assert plan_answers([_approval("c1")], [], [{"approved": True, key: "somebody-else"}]) is None


def test_an_answer_without_an_id_goes_to_every_waiting_approval() -> None:
    first, second = _approval("c1"), _approval("c2")
    entries = plan_answers([first, second], [], [{"approved": True}])
    assert entries is not None and [e.interrupt_id for e in entries] == [first.id, second.id]
