"""The compiled graph's shape and contract (SPEC §4)."""

from __future__ import annotations

import json
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from supervisor_graph import Agent, compile_agent
from supervisor_graph.compiler.build import delegation_tool_schema
from supervisor_graph.nodes.options import RunContext
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def tree() -> Agent:
    leaf = Agent(id="leaf-agent", description="Leaf.", model=ScriptedChatModel(responses=["leaf"]))
    mid = Agent(id="mid-agent", description="Mid.", model=ScriptedChatModel(responses=["mid"]), agents={"leaf": leaf})
    other = Agent(id="other-agent", description="Other.", model=ScriptedChatModel(responses=["other"]))
    return Agent(id="top", model=ScriptedChatModel(responses=["top"]), agents={"mid": mid, "other_agent": other})


def test_node_names_are_stable() -> None:
    graph = tree().compile()
    assert isinstance(graph, CompiledStateGraph)
    assert set(graph.nodes) == {
        "__start__",
        "supervisor",
        "tools",
        "iteration",
        "task_complete",
        "mid",
        "mid.start",
        "mid.complete",
        "other_agent",
        "other_agent.start",
        "other_agent.complete",
    }


def test_compile_agent_function_and_checkpointer() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    graph = compile_agent(tree(), checkpointer=saver)
    assert graph.checkpointer is saver
    assert tree().compile().checkpointer is None


def test_mermaid_shows_the_delegation_edges() -> None:
    mermaid = tree().compile().get_graph().draw_mermaid()
    # Mermaid escapes "." in node ids as "\2e"
    for edge in ("supervisor -.-> mid;", "mid -.-> mid\\2ecomplete;", "mid\\2estart -.-> mid;", "supervisor -.-> tools;"):
        assert edge in mermaid, edge


def test_options_travel_in_runtime_context_not_state() -> None:
    graph = tree().compile()
    assert graph.builder.context_schema is RunContext
    state_keys = set(graph.builder.schemas[graph.builder.state_schema])
    # the answer's value is state because it is output (SPEC §28), never an option
    assert state_keys == {
        "messages", "finish_reason", "feedback", "bail", "stop_at", "structured_response", "structured_output_error",
        "tripwire", "guard_held",  # a guard's trip and a held answer (SPEC §30), written only when one happens
    }
    # Studio builds the context from JSON: all fields optional, schema serialisable.
    schema = RunContext.model_json_schema()
    assert not schema.get("required")
    assert bool(RunContext())


def test_subagents_are_subgraphs_to_any_depth() -> None:
    top = tree()
    graph = top.compile()
    mid_node = graph.builder.nodes["mid"]
    assert mid_node is not None
    # the mid subagent's own graph has its leaf node
    from supervisor_graph.compiler.build import _build

    mid_graph, _ = _build(top.agents["mid"], checkpointer=None, store=None)
    assert "leaf" in mid_graph.nodes and "leaf.start" in mid_graph.nodes


def _delegation_tools(boss: Agent) -> list[dict[str, Any]]:
    model = boss.model
    assert isinstance(model, ScriptedChatModel)
    boss.generate_sync("go")
    return [t for t in model.call_tools[0] if t["function"]["name"].startswith("agent-")]


def test_a_delegation_tool_offers_a_prompt_and_the_subagents_description_once() -> None:
    """Issue 51: the schema is resent on every supervisor call, so it holds what the model needs."""
    sub = Agent(id="sub-agent", description="Finds facts about a topic.", model=ScriptedChatModel(responses=["ok"]))
    boss = Agent(id="boss", model=ScriptedChatModel(responses=["done"]), agents={"sub": sub})
    [tool] = _delegation_tools(boss)
    assert tool["function"]["description"] == "Finds facts about a topic."
    assert json.dumps(tool).count("Finds facts") == 1
    assert tool["function"]["parameters"] == {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}
    assert delegation_tool_schema("sub", "Finds facts about a topic.") == tool


def test_max_steps_is_offered_only_when_the_supervisor_opts_in_and_is_always_honoured() -> None:
    sub = Agent(id="sub-agent", description="Sub.", model=ScriptedChatModel(responses=["ok"]))
    boss = Agent(id="boss", model=ScriptedChatModel(responses=["done"]), agents={"sub": sub}, expose_max_steps=True)
    [tool] = _delegation_tools(boss)
    assert tool["function"]["parameters"]["properties"]["max_steps"] == {"type": "integer", "minimum": 1}
    # a model that sends max_steps anyway (an older prompt, a replayed call) is still obeyed
    sub_model = ScriptedChatModel(responses=[tool_call("nothing"), "never"])
    sub = Agent(id="sub-agent", description="Sub.", model=sub_model)
    boss = Agent(id="boss", model=ScriptedChatModel(responses=[delegate("sub", "go", max_steps=1), "done"]), agents={"sub": sub})
    result = boss.generate_sync("go")
    assert len(sub_model.calls) == 1 and result.delegations[0].finish_reason == "max_steps"
