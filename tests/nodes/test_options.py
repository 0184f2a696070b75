"""Per-call options (nodes/options.py): the options a capability brings (a budget, an
output schema, the task-completion gate) are validated by parsers their capability
modules register, so the options module imports no capability (SPEC §32)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel, ValidationError

from supervisor_graph import Agent, Budget, RunContext, RunOptions, create_scorer
from supervisor_graph.nodes import options as options_module
from supervisor_graph.nodes.gates.scoring import TaskCompleteOptions
from supervisor_graph.nodes.options import capability_option, parse_option
from supervisor_graph.nodes.steps.output_schema import OutputSchema
from supervisor_graph.testing import ScriptedChatModel, tool_call

CAPABILITY_ROOMS = ("steps", "gates", "guards", "background", "delegation", "remote", "turn")

always = create_scorer(id="always", name="Always").generate_score(lambda ctx: 1.0)


class Answer(BaseModel):
    title: str


def test_the_options_module_imports_no_capability() -> None:
    """Every import of nodes/options.py, those under TYPE_CHECKING included."""
    tree = ast.parse(Path(options_module.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    rooms = tuple(f"supervisor_graph.nodes.{room}" for room in CAPABILITY_ROOMS)
    assert not {m for m in imported if m.startswith(rooms)}, imported
    ours = {m for m in imported if m.startswith("supervisor_graph.")}
    assert ours <= {
        "supervisor_graph.checkpointers.naming",
        "supervisor_graph.nodes.scope.context",
        "supervisor_graph.nodes.scope.versions",
    }, ours


def test_importing_the_options_module_registers_every_capability_option() -> None:
    """The package's `__init__` runs before nodes/options.py and imports the capabilities."""
    script = "from supervisor_graph.nodes import options as o; print(' '.join(sorted(o._PARSERS)))"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == sorted(options_module.CAPABILITY_OPTIONS)


def test_capability_options_validate_through_their_capability() -> None:
    schema = {"type": "object", "properties": {}}
    opts = RunOptions.model_validate(
        {"budget": {"tokens": 10}, "output_schema": schema, "is_task_complete": {"scorers": [always]}}
    )
    assert opts.budget == Budget(tokens=10)
    assert isinstance(opts.output_schema, OutputSchema) and opts.output_schema.json_schema == schema
    assert isinstance(opts.is_task_complete, TaskCompleteOptions) and opts.is_task_complete.scorers == [always]

    budget, gate = Budget(seconds=1), TaskCompleteOptions(scorers=[always])
    opts = RunOptions(budget=budget, output_schema=Answer, is_task_complete=gate)
    assert opts.budget is budget and opts.is_task_complete is gate
    assert opts.output_schema.declared is Answer and opts.output_schema.name == "Answer"
    assert RunOptions().budget is None and RunOptions(budget=None, output_schema=None).output_schema is None


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [
        ("budget", {"tokens": "many"}, "budget.tokens"),
        ("budget", 3, "budget"),
        ("budget", {"calls": 1}, "budget.calls"),
        ("output_schema", 3, "output_schema"),
        ("output_schema", {"title": "no schema"}, "output_schema"),
        ("is_task_complete", {"scorers": []}, "is_task_complete.scorers"),
        ("is_task_complete", {"scorers": [1]}, "is_task_complete"),
    ],
)
def test_a_bad_capability_option_is_refused_naming_its_field(field: str, value: Any, where: str) -> None:
    with pytest.raises(ValidationError) as caught:
        RunOptions.model_validate({field: value})
    [error] = caught.value.errors()
    assert ".".join(str(part) for part in error["loc"]) == where


def test_an_option_no_capability_brings_cannot_be_registered_and_one_unregistered_names_its_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValueError, match="'colour' is not a capability's option"):
        capability_option("colour", lambda value, where: value)
    monkeypatch.delitem(options_module._PARSERS, "budget")
    with pytest.raises(RuntimeError, match=r"import supervisor_graph\.nodes\.steps\.budget"):
        RunOptions.model_validate({"budget": {"tokens": 1}})
    assert parse_option("budget", None) is None


def test_the_run_context_keeps_a_budget_as_json_and_hands_the_run_a_budget() -> None:
    context = RunContext(budget={"tokens": 10})
    assert context.budget == {"tokens": 10} and RunContext.model_json_schema()["properties"]["budget"]["description"]
    assert context.effective(RunOptions()).budget == Budget(tokens=10)
    assert RunContext(budget=Budget(tokens=5)).budget == {"tokens": 5}
    with pytest.raises(ValidationError, match=r"budget\.tokens"):
        RunContext(budget={"tokens": "many"})
    with pytest.raises(ValueError, match="context output_schema"):
        RunContext(output_schema={"title": "no schema"}).effective(RunOptions())


async def test_a_budget_in_the_graphs_context_reaches_the_run() -> None:
    """`ScriptedChatModel` reports 15 tokens a call: 20 tokens stop the agent before its
    third model call."""
    model = ScriptedChatModel(policy=lambda m: tool_call("lookup", {"q": "x"}))

    async def lookup(q: str) -> str:
        """Looks something up."""
        return "found"

    graph = Agent(id="solo", model=model, tools=[lookup]).compile(checkpointer=InMemorySaver())
    out = await graph.ainvoke(
        {"messages": [HumanMessage("go")]},
        {"configurable": {"thread_id": "ctx-budget"}, "recursion_limit": 100},
        context={"budget": {"tokens": 20}},
    )
    assert out["finish_reason"] == "budget" and len(model.calls) == 2
