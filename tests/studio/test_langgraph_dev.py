"""LangGraph Studio, for real (SPEC §15): `langgraph dev` serves `langgraph.json` in a
subprocess on a free loopback port, and the test drives it over HTTP with
`langgraph_sdk`, the client Studio itself uses.

The capabilities of tests/embedding/test_parity.py are checked here over HTTP too
(tests/studio/parity_checks.py, on the graphs of tests/studio/parity_graphs.py).

One server serves the whole module. It runs in a temporary copy of the project (so its
`.langgraph_api/` store never lands in the work tree), offline: no version check, no
CLI analytics, no tracing. Its process group is killed even when a test fails.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from tests.langgraph_dev import langgraph_dev
from tests.studio import parity_checks as parity
from tests.studio.background_graph import answered_on_server

ROOT = Path(__file__).resolve().parents[2]
GRAPH = "supervisor"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a `langgraph dev` server serving this project's `langgraph.json`."""
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["graphs"]["background"] = str(ROOT / "tests/studio/background_graph.py") + ":graph"
    config["graphs"].update(parity.GRAPHS)  # one small graph per capability (tests/studio/parity_graphs.py)
    with langgraph_dev(tmp_path_factory.mktemp("studio"), config) as url:
        yield url


async def _stream(client: Any, thread_id: str, assistant_id: str, **kwargs: Any) -> list[tuple[str, Any]]:
    """One run streamed the way Studio streams it: values, message tokens, updates and
    custom events, with subgraphs."""
    parts = []
    async for part in client.runs.stream(
        thread_id,
        assistant_id,
        stream_mode=["values", "messages-tuple", "updates", "custom"],
        stream_subgraphs=True,
        **kwargs,
    ):
        assert part.event != "error", part.data
        parts.append((part.event, part.data))
    return parts


def _tool_message(messages: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(m for m in messages if m["type"] == "tool" and m.get("name") == name)


async def test_studio_sees_the_graph_and_its_input_form(example_nodes: set[str], server: str) -> None:
    client = get_client(url=server)
    (assistant,) = await client.assistants.search(graph_id=GRAPH)
    graph = await client.assistants.get_graph(assistant["assistant_id"])
    assert example_nodes <= {node["id"] for node in graph["nodes"]}
    xray = await client.assistants.get_graph(assistant["assistant_id"], xray=True)
    ids = {node["id"] for node in xray["nodes"]}
    assert {"research_agent:supervisor", "writing_agent:supervisor"} <= ids  # the subagents' own graphs
    schemas = await client.assistants.get_schemas(assistant["assistant_id"])
    assert "messages" in schemas["input_schema"]["properties"]
    assert {"max_steps", "require_tool_approval"} <= set(schemas["context_schema"]["properties"])


async def test_a_run_with_approval_resumed_by_command_then_a_second_run(server: str) -> None:
    client = get_client(url=server)
    (assistant,) = await client.assistants.search(graph_id=GRAPH)
    aid = assistant["assistant_id"]
    thread = await client.threads.create()
    tid = thread["thread_id"]

    # 1. a run that delegates research and writing, then asks to publish
    parts = await _stream(
        client,
        tid,
        aid,
        input={"messages": [{"role": "user", "content": "Research bees, write an article and publish it."}]},
    )
    events = {event for event, _ in parts}
    # leaf subagents run inside their delegation's node (SPEC §23): their tokens reach
    # Studio under the delegation's namespace, their state is kept in it
    assert any(e.startswith("messages|research_agent:") for e in events), events
    assert any(e.startswith("messages|writing_agent:") for e in events), events
    custom = [data["type"] for event, data in parts if event == "custom"]
    assert custom.count("delegation-start") == 2 and custom.count("delegation-complete") == 2
    [research_ns] = [d["payload"]["namespace"] for e, d in parts if e == "custom" and d["type"] == "delegation-start" and d["payload"]["agent_key"] == "research_agent"]
    [delegation] = await client.threads.get_history(tid, checkpoint={"checkpoint_ns": research_ns})
    assert [m["type"] for m in delegation["values"]["messages"]] == ["human", "ai"]
    assert any(event == "updates" and "__interrupt__" in data for event, data in parts)

    # 2. the approval waits in the thread state, where Studio shows it
    state = await client.threads.get_state(tid)
    assert state["next"] == ["tools"]
    (pending,) = state["interrupts"]
    assert pending["value"]["kind"] == "approval" and pending["value"]["tool_name"] == "publish"
    assert pending["value"]["args"]["title"] == "Bees: what we know"
    assert pending["value"]["agent_path"] == ["parent-agent"]

    # 3. an answer that is not an approval is asked again, and nothing is published
    await _stream(client, tid, aid, command={"resume": "yes please"})
    state = await client.threads.get_state(tid)
    (again,) = state["interrupts"]
    assert "approved" in again["value"]["error"] and again["value"]["tool_call_id"] == pending["value"]["tool_call_id"]
    assert not any(m["type"] == "tool" and m.get("name") == "publish" for m in state["values"]["messages"])

    # 4. Command(resume=...) approves it; the tool runs once and the supervisor answers
    parts = await _stream(client, tid, aid, command={"resume": {"approved": True}})
    state = await client.threads.get_state(tid)
    assert state["next"] == [] and not state["interrupts"]
    messages = state["values"]["messages"]
    final = messages[-1]["content"]
    assert final.startswith("Here is your article on bees.")
    assert final.endswith("Published 'Bees: what we know' at /blog/bees-what-we-know (79 words).")
    assert [m["content"] for m in messages if m["type"] == "tool" and m.get("name") == "publish"] == [
        "Published 'Bees: what we know' at /blog/bees-what-we-know (79 words)."
    ]

    # 5. subagent memory under the platform's checkpointer: each delegation's thread
    #    (a namespace of this thread) keeps its prompt and its own answer, nothing else
    research = _tool_message(messages, "agent-research_agent")
    assert research["content"].startswith("- What it is: bees")
    sub_thread = research["artifact"]["sub_agent_thread_id"]
    parent_thread, _, namespace = sub_thread.partition("::")
    assert parent_thread == tid and namespace.startswith("research_agent:")
    sub_state = await client.threads.get_state(tid, checkpoint={"checkpoint_ns": namespace})
    sub_messages = sub_state["values"]["messages"]
    assert [m["type"] for m in sub_messages] == ["human", "ai"]
    assert sub_messages[0]["content"].startswith("Gather the key facts about bees.")
    assert sub_messages[1]["content"] == research["content"]

    # 6. a second run on the thread continues the conversation
    await _stream(client, tid, aid, input={"messages": [{"role": "user", "content": "Write an article about owls"}]})
    state = await client.threads.get_state(tid)
    messages = state["values"]["messages"]
    assert [m["content"] for m in messages if m["type"] == "human"] == [
        "Research bees, write an article and publish it.",
        "Write an article about owls",
    ]
    assert messages[-1]["content"].startswith("Here is your article on owls.")
    owl_research = [m for m in messages if m["type"] == "tool" and m.get("name") == "agent-research_agent"][-1]
    owl_namespace = owl_research["artifact"]["sub_agent_thread_id"].partition("::")[2]
    assert owl_namespace != namespace  # a fresh thread per delegation; the first one is still there
    first_again = await client.threads.get_state(tid, checkpoint={"checkpoint_ns": namespace})
    assert first_again["values"]["messages"] == sub_messages

    # 7. working memory lives in the platform's store (no resource id here: the thread's
    #    id stands in for it), and the next run reads it: a known topic is not noted again
    item = await client.store.get_item(["supervisor_graph", "working_memory"], key=json.dumps(["parent-agent", tid]))
    assert item is not None and item["value"]["value"].endswith("- Topics:\n  - bees\n  - owls\n")
    await _stream(client, tid, aid, input={"messages": [{"role": "user", "content": "Research owls"}]})
    state = await client.threads.get_state(tid)
    notes = [m for m in state["values"]["messages"] if m["type"] == "tool" and m.get("name") == "update_working_memory"]
    assert len(notes) == 2 and state["values"]["messages"][-1]["content"].startswith("Here is your article on owls.")


async def test_a_background_delegation_is_a_server_run_whose_outcome_is_answered(server: str) -> None:
    """SPEC §12: under `langgraph dev` (no configuration) a background delegation is a run
    of the graph on a thread of its own; its outcome reaches the parent thread as a new
    run, which the supervisor answers without a user message."""
    client = get_client(url=server)
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await _stream(client, tid, "background", input={"messages": [{"role": "user", "content": "go"}]})
    task_id, record, values = await answered_on_server(client, tid)
    assert values["background_tasks"][task_id]["status"] == "completed"
    task_thread = await client.threads.get_state(record["server_thread"])
    assert task_thread["values"]["messages"][-1]["content"] == "server facts"  # the task ran on its own thread


# -- the capabilities of tests/embedding/test_parity.py, over HTTP (SPEC §23) -------------


async def test_delegation_hooks_from_default_options(server: str) -> None:
    await parity.check_hooks(get_client(url=server))


async def test_result_references_from_default_options(server: str) -> None:
    await parity.check_references(get_client(url=server))


async def test_scorers_from_default_options_loop_until_they_pass(server: str) -> None:
    await parity.check_scorer(get_client(url=server))


async def test_suspend_in_a_subagents_tool_resumed_with_a_command(server: str) -> None:
    await parity.check_suspend(get_client(url=server))


async def test_a_client_tool_ends_the_run_with_the_call_pending(server: str) -> None:
    await parity.check_client_tool(get_client(url=server))


async def test_decisions_on_approvals_at_depth_one_and_two_by_command(server: str) -> None:
    await parity.check_decisions(get_client(url=server))


async def test_the_request_context_comes_from_the_runs_context(server: str) -> None:
    await parity.check_request_context(get_client(url=server))


async def test_the_subagent_set_is_chosen_per_run_from_its_context(server: str) -> None:
    await parity.check_dynamic(get_client(url=server))


async def test_usage_reaches_the_client_in_the_runs_output(server: str) -> None:
    await parity.check_usage(get_client(url=server))


async def test_a_budget_comes_from_the_runs_context(server: str) -> None:
    await parity.check_budget(get_client(url=server))


async def test_langchain_middleware_runs_in_the_served_graph(server: str) -> None:
    await parity.check_middleware(get_client(url=server))


async def test_a_long_conversation_compacts(server: str) -> None:
    await parity.check_compaction(get_client(url=server))


async def test_output_schemas_declared_and_from_the_runs_context(server: str) -> None:
    await parity.check_structured_output(get_client(url=server))


async def test_a_version_in_the_servers_store_is_selected_by_the_runs_context(server: str) -> None:
    client = get_client(url=server)

    async def put(namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
        await client.store.put_item(namespace, key=key, value=value, index=False)

    await parity.check_versions(client, put)


async def test_a_run_cancelled_mid_delegation_is_closed_by_the_next_run(server: str) -> None:
    await parity.check_cancel(get_client(url=server))


async def test_an_approval_inside_a_server_hosted_task_waits_on_the_tasks_thread(server: str) -> None:
    await parity.check_background_approval(get_client(url=server))


async def test_the_control_tools_check_update_and_cancel_a_server_hosted_task(server: str) -> None:
    await parity.check_background_control(get_client(url=server))


async def test_time_travel_forks_edits_and_copies_through_the_sdk(server: str) -> None:
    await parity.check_time_travel(get_client(url=server))
