"""The step protocol (SPEC §32, nodes/steps/protocol.py): steps wrap the one model call
of a turn, in the supervisor and in a leaf subagent's loop alike, first step
outermost; they wrap each tool call; an agent without optional capabilities has no
steps. The steps are put into a real compiled agent through the compiler's
`steps_of`, as a capability of the library is."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage

from supervisor_graph import Agent
from supervisor_graph.compiler import build
from supervisor_graph.compiler.build import build_spec
from supervisor_graph.nodes.background.control import CONTROL_TOOLS
from supervisor_graph.nodes.steps.compaction import Compaction
from supervisor_graph.nodes.steps.protocol import (
    NO_STEPS,
    ModelHandler,
    ModelRequest,
    Step,
    Steps,
    ToolHandler,
    ToolRequest,
)
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


class Tag(Step):
    """Adds a line to the system prompt and records the order it ran in."""

    def __init__(self, label: str, seen: list[str]) -> None:
        self.label, self.seen = label, seen

    async def abefore_model(self, request: ModelRequest) -> None:
        self.seen.append(f"before {self.label}")

    async def awrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
        self.seen.append(f"enter {self.label}")
        out = await handler(request.override(system=f"{request.system}\n{self.label}"))
        self.seen.append(f"leave {self.label}")
        return out

    async def aafter_model(self, request: ModelRequest, response: Any) -> None:
        self.seen.append(f"after {self.label}: {response.content}")


class OneToolLimit(Step):
    """At most `limit` runs of `tool` per run; past that the model is told so and the
    tool does not run (the example in docs/architecture.md)."""

    def __init__(self, tool: str, limit: int) -> None:
        self.tool, self.limit = tool, limit
        self.runs: dict[str, int] = {}

    async def awrap_tool_call(self, request: ToolRequest, handler: ToolHandler) -> Any:
        if request.tool_call["name"] != self.tool:
            return await handler(request)
        used = self.runs.get(request.handle.run_id, 0)
        if used >= self.limit:
            return ToolMessage(
                content=f"{self.tool} may run {self.limit} times a run", tool_call_id=request.tool_call["id"], status="error"
            )
        self.runs[request.handle.run_id] = used + 1
        return await handler(request)


@pytest.fixture
def with_steps(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Compile agents with the given steps besides their own."""

    def use(*steps: Step) -> None:
        monkeypatch.setattr(build, "steps_of", lambda *names, **declared: Steps.of(steps))

    return use


def system_of(call: Sequence[BaseMessage]) -> str:
    assert isinstance(call[0], SystemMessage)
    return str(call[0].content)


async def test_an_agent_without_optional_capabilities_has_no_steps() -> None:
    assert build_spec(Agent(id="a", model=ScriptedChatModel())).steps is NO_STEPS
    spec = build_spec(Agent(id="a", model=ScriptedChatModel(), compaction={"max_tokens": 1000}))
    assert [type(s) for s in spec.steps.all] == [Compaction] and spec.steps.wrap_model_call == spec.steps.all
    assert spec.steps.before_model == spec.steps.wrap_tool_call == () and "compaction" in spec.steps.state_keys


async def test_working_memory_and_background_tasks_are_steps_that_bring_and_answer_their_tools() -> None:
    worker = Agent(id="w", description="Works.", model=ScriptedChatModel())
    agent = Agent(
        id="a", model=ScriptedChatModel(), working_memory=True, agents={"w": worker},
        background_tasks={"tools": {"w": {}}},
    )  # fmt: skip
    spec = build_spec(agent)
    names = [tool["function"]["name"] for tool in spec.steps.tools]
    assert names[0] == "update_working_memory" and set(names[1:]) == CONTROL_TOOLS
    # working memory shows its value around each model call; both answer their tools' calls in the turn
    assert [s.name for s in spec.steps.wrap_model_call] == ["working_memory"]
    assert {s.name for s in spec.steps.answer_calls} == {"working_memory", "background_control"}
    assert spec.steps.answered == CONTROL_TOOLS | {"update_working_memory"}


async def test_steps_wrap_the_supervisors_model_call_first_outermost(with_steps: Any) -> None:
    seen: list[str] = []
    with_steps(Tag("one", seen), Tag("two", seen))
    model = ScriptedChatModel(responses=["hi"])
    result = await Agent(id="a", instructions="Be brief.", model=model).generate("hello")
    assert result.text == "hi"
    assert system_of(model.calls[0]) == "Be brief.\none\ntwo"
    assert seen == ["before one", "before two", "enter one", "enter two", "leave two", "leave one", "after one: hi", "after two: hi"]


async def test_steps_wrap_a_leaf_subagents_model_calls_in_its_loop(with_steps: Any) -> None:
    seen: list[str] = []
    with_steps(Tag("x", seen))

    def lookup(q: str) -> str:
        """Looks something up."""
        return "found"

    worker_model = ScriptedChatModel(responses=[tool_call("lookup", {"q": "a"}), "facts"])
    worker = Agent(id="worker", description="Works.", model=worker_model, tools=[lookup])
    boss = Agent(id="boss", model=ScriptedChatModel(responses=[delegate("worker", "go"), "done"]), agents={"worker": worker})
    result = await boss.generate("hi")
    assert result.text == "done"
    # each of the worker's two model calls, inside the delegation node, went through the step
    assert [system_of(call) for call in worker_model.calls] == ["\nx", "\nx"]
    assert seen.count("enter x") == 4  # the boss's two calls and the worker's two


async def test_a_tool_step_answers_instead_of_the_tool_past_its_limit(with_steps: Any) -> None:
    runs: list[str] = []

    def search(q: str) -> str:
        """Searches."""
        runs.append(q)
        return f"results for {q}"

    with_steps(OneToolLimit("search", 2))
    calls = [tool_call("search", {"q": q}) for q in "abc"]
    model = ScriptedChatModel(responses=[*calls, "done"])
    result = await Agent(id="a", model=model, tools=[search]).generate("go")
    assert result.text == "done" and runs == ["a", "b"]
    answers = [str(m.content) for m in result.messages if isinstance(m, ToolMessage)]
    assert answers == ["results for a", "results for b", "search may run 2 times a run"]


async def test_the_spec_knows_no_capability_each_step_holds_its_settings() -> None:
    """What an agent declares of a capability is held by that capability's step and read
    with its accessor; the spec module imports none of them (SPEC §32)."""
    import ast
    from pathlib import Path

    from supervisor_graph.nodes import spec as spec_module
    from supervisor_graph.nodes.background.control import background_of
    from supervisor_graph.nodes.guards.core import guarded_at, guardrail, guards_of
    from supervisor_graph.nodes.steps.budget import budget_of
    from supervisor_graph.nodes.steps.compaction import compactor_of
    from supervisor_graph.nodes.steps.structured_output import declared_schema
    from supervisor_graph.nodes.steps.working_memory import working_memory_of

    bare = build_spec(Agent(id="a", model=ScriptedChatModel()))
    assert (background_of(bare), budget_of(bare), compactor_of(bare), declared_schema(bare), working_memory_of(bare)) == (
        None, None, None, None, None,
    )  # fmt: skip
    assert guards_of(bare) == () and guarded_at(bare) == frozenset()

    guard = guardrail(lambda ctx: None, at="output")
    worker = Agent(id="w", description="Works.", model=ScriptedChatModel())
    agent = Agent(
        id="a", model=ScriptedChatModel(), working_memory=True, agents={"w": worker},
        background_tasks={"tools": {"w": {}}}, budget={"tokens": 100}, output_schema={"type": "object", "properties": {}},
        compaction={"max_tokens": 1000}, guardrails=[guard],
    )  # fmt: skip
    spec = build_spec(agent)
    assert background_of(spec) is not None and background_of(spec).for_key("w") is not None  # type: ignore[union-attr]
    assert budget_of(spec) is not None and budget_of(spec).tokens == 100  # type: ignore[union-attr]
    assert compactor_of(spec) is not None and declared_schema(spec) is not None and working_memory_of(spec) is not None
    assert guards_of(spec) == (guard,) and guarded_at(spec) == frozenset({"output"})

    tree = ast.parse(Path(spec_module.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    ours = {m for m in imported if m.startswith("supervisor_graph.nodes.")}
    assert ours <= {"supervisor_graph.nodes.options", "supervisor_graph.nodes.scope.context",
                    "supervisor_graph.nodes.scope.versions", "supervisor_graph.nodes.steps.protocol"}, ours  # fmt: skip


async def test_a_run_with_a_budget_meters_it_through_a_step_the_run_adds() -> None:
    """Budgets may come with the call, so the run adds their step (`BudgetMeters`) to the
    agent's own, once: it stops the agent before a model call (`Step.stop`), puts the
    notice after the call's conversation (its `tail`), counts the answer's usage and each tool call."""
    from langchain_core.messages import AIMessage

    from supervisor_graph.nodes.steps.budget import METERS, BudgetScope, child_budget
    from supervisor_graph.nodes.turn.turn import steps_of_run

    spec = build_spec(Agent(id="a", model=ScriptedChatModel(), compaction={"max_tokens": 1000}))

    class Handle:
        budget: BudgetScope | None = None

    handle = Handle()
    assert steps_of_run(spec, handle) is spec.steps  # type: ignore[arg-type]  # no budget: nothing added
    handle.budget = child_budget(None, {"tokens": 100, "tool_calls": 1}, None)
    steps = steps_of_run(spec, handle)  # type: ignore[arg-type]
    assert steps.all == (*spec.steps.all, METERS) and steps is steps_of_run(spec, handle)  # type: ignore[arg-type]
    assert steps.stop == (METERS,) and steps.stop_reason(handle) is None

    async def answer(request: ModelRequest) -> Any:
        assert request.system == "Be brief." and request.tail[-1].endswith("finish soon.")  # it read 85 of 100 tokens
        return AIMessage(content="ok", usage_metadata={"input_tokens": 10, "output_tokens": 10, "total_tokens": 20})

    handle.budget.meters[0].usage["total_tokens"] = 85  # type: ignore[union-attr]
    request = ModelRequest(None, "Be brief.", [], [], {}, {}, handle, None)
    await Steps.of([METERS]).call_model(request, answer)
    assert handle.budget.meters[0].usage["total_tokens"] == 105  # type: ignore[union-attr]
    assert steps.stop_reason(handle) == "budget"  # used up: the next turn ends before its model call

    async def ran(request: ToolRequest) -> str:
        return "ran"

    call = {"name": "t", "args": {}, "id": "c1"}
    first, second = [await Steps.of([METERS]).call_tool(ToolRequest(call, None, None, {}, handle), ran) for _ in range(2)]
    assert first == "ran" and "Budget exceeded" in second.content


async def test_structured_output_is_a_step_that_settles_every_answer() -> None:
    """The declared schema lives in the agent's `StructuredOutput` step; a run that gives
    its own schema to an agent declaring none has the check added (`CHECKS`); the step's
    `aafter_answer` makes the answer the run's value, sends it back, or ends the run."""
    from langchain_core.messages import AIMessage, HumanMessage

    from supervisor_graph.nodes.steps.structured_output import (
        CHECKS,
        ResponseFormat,
        StructuredOutput,
        output_schema_of,
    )
    from supervisor_graph.nodes.turn.turn import steps_of_run

    class Handle:
        budget = None

    plain = build_spec(Agent(id="a", model=ScriptedChatModel()))
    assert steps_of_run(plain, Handle()) is NO_STEPS  # type: ignore[arg-type]
    assert steps_of_run(plain, Handle(), shaped=True).all == (CHECKS,)  # type: ignore[arg-type]
    schema = output_schema_of({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    declared = build_spec(Agent(id="b", model=ScriptedChatModel(), output_schema=schema.declared))
    assert steps_of_run(declared, Handle(), shaped=True) is declared.steps  # type: ignore[arg-type]
    assert [type(s) for s in declared.steps.after_answer] == [StructuredOutput]

    def request(retries: int) -> ModelRequest:
        out = ModelRequest(None, "", [HumanMessage(content="go")], [], {}, {}, Handle(), None)
        out.response_format = ResponseFormat(schema, retries)
        return out

    good = await declared.steps.settle(request(1), AIMessage(content='{"n": 3}'))
    assert good is not None and good.updates == {"structured_response": {"n": 3}} and good.end is None
    again = await declared.steps.settle(request(1), AIMessage(content="three"))
    assert again is not None and again.again and len(again.results) == 1
    failed = await declared.steps.settle(request(0), AIMessage(content="three"))
    assert failed is not None and failed.end == "error" and "structured_output_error" in failed.updates
    unshaped = await declared.steps.settle(ModelRequest(None, "", [], [], {}, {}, Handle(), None), AIMessage(content="x"))
    assert unshaped is not None and not (unshaped.results or unshaped.updates or unshaped.again or unshaped.end)
