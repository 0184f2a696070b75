"""The guards act on an agent's turn as a step (SPEC §30, §32): `GuardedTurn` wraps the
model call, and usage accounting (`UsageLedger`), right outside it, counts the answers
the guards keep out of the thread."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from supervisor_graph import Agent
from supervisor_graph.compiler.build import build_spec
from supervisor_graph.guardrails import GuardContext, allow, guardrail, retry
from supervisor_graph.nodes.guards.core import Guards, Tripwire, TripwireError
from supervisor_graph.nodes.guards.step import GuardedTurn
from supervisor_graph.nodes.options import RunHandle
from supervisor_graph.nodes.steps.protocol import ModelRequest
from supervisor_graph.nodes.steps.usage import UsageLedger
from supervisor_graph.testing import ScriptedChatModel, delegate

USAGE = {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}


class _Events(list[tuple[str, dict[str, Any]]]):
    active = True

    def __call__(self, kind: str, payload: dict[str, Any]) -> None:
        self.append((kind, payload))


def _request(handle: RunHandle, events: _Events) -> ModelRequest:
    return ModelRequest(None, "", [HumanMessage("hi")], [], {}, {}, handle, events, iteration=3)


async def test_an_agent_with_guards_has_the_ledger_then_the_guards_around_its_model_call() -> None:
    spec = build_spec(Agent(id="a", model=ScriptedChatModel(), guardrails=[guardrail(lambda ctx: allow(), at="output")]))
    kinds = [type(step) for step in spec.steps.all]
    assert kinds[-2:] == [UsageLedger, GuardedTurn]
    assert spec.steps.find(Guards) is spec.steps.all[-1]  # found by the capability class it extends
    assert spec.steps.wrap_model_call[-2:] == spec.steps.all[-2:]


@pytest.mark.parametrize("outcome", ["sent back", "tripped"])
async def test_the_ledger_counts_every_answer_the_steps_inside_it_dropped(outcome: str) -> None:
    handle, events = RunHandle(run_id="r", agent_path=("a", "w")), _Events()
    request = _request(handle, events)

    async def inner(request: ModelRequest) -> Any:
        request.answers.append(AIMessage(content="no", id="m1", usage_metadata=USAGE))  # type: ignore[arg-type]
        if outcome == "tripped":
            raise TripwireError(Tripwire(guard="g", boundary="output", agent_path=("a", "w"), reason="r"))
        return None

    if outcome == "tripped":
        with pytest.raises(TripwireError):
            await UsageLedger().awrap_model_call(request, inner)
    else:
        assert await UsageLedger().awrap_model_call(request, inner) is None
    assert handle.guard_usage["a/w"]["total_tokens"] == 12
    assert [(kind, payload["iteration"], payload["usage"]) for kind, payload in events] == [("step-finish", 3, USAGE)]


async def test_the_ledger_leaves_a_kept_answer_to_the_thread() -> None:
    handle, events = RunHandle(run_id="r", agent_path=("a",)), _Events()
    kept = AIMessage(content="yes", id="m1", usage_metadata=USAGE)  # type: ignore[arg-type]

    async def inner(request: ModelRequest) -> Any:
        request.answers.append(kept)
        return kept

    assert await UsageLedger().awrap_model_call(_request(handle, events), inner) is kept
    assert handle.guard_usage == {} and events == []


async def test_a_guarded_leaf_and_supervisor_send_an_answer_back_through_the_same_step() -> None:
    """One output guard, one code path: the answer it sends back never reaches the
    thread, the model answers its feedback, in the top agent and in a leaf subagent."""

    def polite(ctx: GuardContext) -> Any:
        return retry("Say please.") if "please" not in ctx.text else allow()

    guard = guardrail(polite, at="output")
    worker = Agent(
        id="w", description="Works.", model=ScriptedChatModel(responses=["do it", "please do it"]), guardrails=[guard]
    )
    top = Agent(
        id="top",
        model=ScriptedChatModel(responses=[delegate("w", "go"), "done", "please, done"]),
        agents={"w": worker},
        guardrails=[guard],
    )
    result = await top.generate("start")
    assert result.text == "please, done"
    texts = [str(m.content) for m in result.messages]
    assert "done" not in texts  # the top agent's first answer was sent back, unstored
    delegated = next(m for m in result.messages if m.type == "tool")
    assert "please do it" in str(delegated.content) and "do it" != str(delegated.content)  # so was the leaf's
