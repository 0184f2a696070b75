"""The guards' step (nodes/guards/step.py): the `tool_args` and `tool_result` boundaries
act through `GuardedTurn.awrap_tool_call`, around the handler that runs the tool."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from supervisor_graph import Agent, create_tool
from supervisor_graph.compiler.build import build_spec
from supervisor_graph.guardrails import GuardContext, allow, block, escalate, guardrail, redact
from supervisor_graph.nodes.guards.core import Guards
from supervisor_graph.nodes.guards.step import GuardedTurn
from supervisor_graph.nodes.options import RunHandle
from supervisor_graph.nodes.steps.protocol import ToolRequest
from supervisor_graph.testing import ScriptedChatModel


class Query(BaseModel):
    q: str


def spec_with(*guards: Any) -> Any:
    tool = create_tool(id="lookup", description="Look up.", input_schema=Query, execute=lambda args: "unused")
    return build_spec(Agent(id="boss", model=ScriptedChatModel(), tools=[tool], guardrails=list(guards)))


def request_for(spec: Any, q: str, emitted: list[tuple[str, Any]]) -> ToolRequest:
    call = {"name": "lookup", "args": {"q": q}, "id": "c1"}
    emit = lambda kind, payload=None: emitted.append((kind, payload))  # noqa: E731
    return ToolRequest(call, spec.tools["lookup"], None, {}, RunHandle("r1", ("boss",)), spec=spec, emit=emit)


def no_secrets(ctx: GuardContext) -> Any:
    return block("a secret") if "secret" in ctx.text else allow()


async def test_tool_args_block_answers_without_running_the_tool() -> None:
    spec = spec_with(guardrail(no_secrets, at="tool_args", name="no-secrets"))
    step = spec.steps.find(Guards)
    assert isinstance(step, GuardedTurn) and step in spec.steps.wrap_tool_call
    ran: list[Any] = []

    async def handler(request: ToolRequest) -> str:
        ran.append(request.tool_call)
        return "found"

    emitted: list[tuple[str, Any]] = []
    blocked = await step.awrap_tool_call(request_for(spec, "the secret", emitted), handler)
    assert ran == [] and blocked.status == "error" and "'no-secrets' blocked this at tool_args" in blocked.content
    assert blocked.artifact["tripwire"]["boundary"] == "tool_args"
    assert [kind for kind, _ in emitted] == ["guard", "tripwire"]
    assert await step.awrap_tool_call(request_for(spec, "weather", emitted), handler) == "found" and len(ran) == 1


async def test_tool_args_redaction_runs_the_guarded_call_and_a_result_escalation_is_held() -> None:
    def scrub(ctx: GuardContext) -> Any:
        return redact(ctx.text.replace("secret", "[X]")) if "secret" in ctx.text else allow()

    review = guardrail(lambda ctx: escalate("look"), at="tool_result", name="review")
    spec = spec_with(guardrail(scrub, at="tool_args"), review)
    ran: list[Any] = []

    async def handler(request: ToolRequest) -> str:
        ran.append(request.tool_call["args"])
        return "found it"

    request = request_for(spec, "my secret", [])
    result = await spec.steps.call_tool(request, handler)
    assert ran == [{"q": "my [X]"}] and request.ran()["args"] == {"q": "my [X]"}
    # the tool ran: a pause here would run it again on resume, so the tools node asks in a fresh task
    assert result.content == "found it" and request.notes["held"] == ("review", "look")


async def test_the_guards_act_inside_the_approval_and_read_an_edited_calls_note(monkeypatch: Any) -> None:
    """The steps' order around a tool call, as before they were steps: the decision first
    (the `tool_args` guard checks the arguments a person approved), the run, the note on
    an edited call's result, then the `tool_result` guard, which reads the note too."""
    from supervisor_graph.nodes.steps import decisions

    checked: list[tuple[str, str]] = []

    def watch(ctx: GuardContext) -> Any:
        checked.append((ctx.boundary, ctx.text))
        return allow()

    tool = create_tool(id="lookup", description="Look up.", input_schema=Query, execute=lambda args: "x", require_approval=True)
    spec = build_spec(Agent(id="boss", model=ScriptedChatModel(), tools=[tool], guardrails=[guardrail(watch, at=["tool_args", "tool_result"])]))
    assert [s.name for s in spec.steps.wrap_tool_call] == ["approvals", "guards", "edit_note"]
    monkeypatch.setattr(decisions, "interrupt", lambda value: {"approved": True, "args": {"q": "edited"}})

    async def handler(request: ToolRequest) -> str:
        return f"ran {request.tool_call['args']['q']}"

    result = await spec.steps.call_tool(request_for(spec, "proposed", []), handler)
    note = '[The user edited the arguments before this call ran: {"q": "edited"}]'
    assert checked == [("tool_args", '{"q": "edited"}'), ("tool_result", f"{note}\nran edited")]
    assert result.content == f"{note}\nran edited"
