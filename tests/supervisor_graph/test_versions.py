"""Subagent versions (SPEC §13): stored definitions selected per call."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from supervisor_graph import VERSIONS_KEY, Agent, Memory
from supervisor_graph.memory.versions import VERSIONS_NAMESPACE
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def search(query: str) -> str:
    """Search the web."""
    return f"searched {query}"


def system_of(messages: list[Any]) -> str:
    return str(messages[0].content) if messages and isinstance(messages[0], SystemMessage) else ""


def team(memory: Memory, *, sub_policy: Any = None, parent_calls: int = 1) -> tuple[Agent, ScriptedChatModel, ScriptedChatModel]:
    """A parent (instructions "PARENT CODE") delegating `parent_calls` times to a researcher
    (instructions "RESEARCH CODE", tools lookup and search) that answers with its system prompt."""
    sub_model = ScriptedChatModel(policy=sub_policy or (lambda m: f"said: {system_of(m)}"))
    research = Agent(
        id="research-agent", description="Finds facts.", instructions="RESEARCH CODE", model=sub_model, tools=[lookup, search]
    )
    calls = iter([delegate("research", f"task {i}") for i in range(parent_calls)])
    parent_model = ScriptedChatModel(
        policy=lambda m: next(calls, None) or ("done" if isinstance(m[-1], ToolMessage) else delegate("research", "again"))
    )
    parent = Agent(id="parent", instructions="PARENT CODE", model=parent_model, agents={"research": research}, memory=memory)
    return parent, parent_model, sub_model


async def test_save_publish_list_get(memory: Memory) -> None:
    team(memory)
    first = await memory.versions.save("research-agent", {"instructions": "v1"})
    second = await memory.versions.save("research-agent", {"instructions": "v2", "tools": ["lookup"]}, status="published")
    listed = await memory.versions.list("research-agent")
    assert [v.version_id for v in listed] == [second, first]  # newest first
    assert [(v.status, v.agent_id) for v in listed] == [("published", "research-agent"), ("draft", "research-agent")]
    await memory.versions.publish("research-agent", first)
    statuses = {v.version_id: v.status for v in await memory.versions.list("research-agent")}
    assert statuses == {first: "published", second: "archived"}
    published = await memory.versions.get("research-agent", status="published")
    assert published is not None and published.definition.instructions == "v1"
    by_id = await memory.versions.get("research-agent", version_id=second)
    assert by_id is not None and by_id.definition.tools == ["lookup"] and by_id.created_at.tzinfo is not None
    assert await memory.versions.get("research-agent", version_id="nope") is None
    assert await memory.versions.list("parent") == []


async def test_save_refuses_what_a_version_cannot_be() -> None:
    memory = Memory(":memory:")
    team(memory)
    with pytest.raises(ValueError, match="tools the code agent does not have: web"):
        await memory.versions.save("research-agent", {"tools": ["lookup", "web"]})
    with pytest.raises(ValueError, match="temperature"):
        await memory.versions.save("research-agent", {"temperature": 0.2})
    with pytest.raises(ValueError, match="unknown provider 'acme'"):
        await memory.versions.save("research-agent", {"model": "acme/model"})
    with pytest.raises(ValueError, match="max_steps"):
        await memory.versions.save("research-agent", {"max_steps": 0})
    with pytest.raises(ValueError, match="'ghost' is not declared with this memory"):
        await memory.versions.save("ghost", {"instructions": "x"})
    with pytest.raises(ValueError, match="has no version 'nope'"):
        await memory.versions.publish("research-agent", "nope")
    assert await memory.versions.list("research-agent") == []


async def test_a_selected_version_replaces_the_code_definition_at_any_depth(memory: Memory) -> None:
    parent, parent_model, sub_model = team(memory)
    sub_version = await memory.versions.save("research-agent", {"instructions": "RESEARCH V2", "tools": ["lookup"]})
    parent_version = await memory.versions.save("parent", {"instructions": "PARENT V2"}, status="published")
    seen: list[Any] = []

    def start(ctx: Any) -> None:
        seen.append(ctx.request_context.get(VERSIONS_KEY))

    selection = {"agents": {"research-agent": {"version_id": sub_version}}, "default_status": "published"}
    result = await parent.generate("go", versions=selection, delegation={"on_delegation_start": start})
    assert result.delegations[0].text == "said: RESEARCH V2"
    assert sub_model.bound_tool_names == ["lookup"]  # the version's subset of the tools
    assert system_of(parent_model.calls[0]) == "PARENT V2"  # the top-level agent too
    assert seen == [{"agents": {"research-agent": {"version_id": sub_version, "status": None}}, "default_status": "published"}]
    assert parent_version
    # for that run only: the next call without a selection runs the code
    plain = await parent.generate("go")
    assert plain.delegations[0].text == "said: RESEARCH CODE" and system_of(parent_model.calls[-1]) == "PARENT CODE"


async def test_default_options_select_and_calls_override() -> None:
    memory = Memory(":memory:")
    parent, _, _ = team(memory)
    await memory.versions.save("research-agent", {"instructions": "PUBLISHED"}, status="published")
    draft = await memory.versions.save("research-agent", {"instructions": "DRAFT"})
    with_defaults = parent.model_copy(update={"default_options": {"versions": {"default_status": "published"}}})
    assert (await with_defaults.generate("go")).delegations[0].text == "said: PUBLISHED"
    chosen = {"agents": {"research-agent": {"version_id": draft}}}
    assert (await with_defaults.generate("go", versions=chosen)).delegations[0].text == "said: DRAFT"


async def test_a_selector_that_does_not_resolve_warns_once_and_runs_the_code(caplog: pytest.LogCaptureFixture) -> None:
    memory = Memory(":memory:")
    parent, _, _ = team(memory, parent_calls=2)
    with caplog.at_level(logging.WARNING, logger="supervisor_graph"):
        result = await parent.generate("go", versions={"agents": {"research-agent": {"version_id": "missing"}}})
    assert [d.text for d in result.delegations] == ["said: RESEARCH CODE"] * 2
    warnings = [r.getMessage() for r in caplog.records if "versions:" in r.getMessage()]
    assert len(warnings) == 1 and "'research-agent'" in warnings[0] and "version_id='missing'" in warnings[0]
    # a status nobody published, named explicitly, warns too
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="supervisor_graph"):
        await parent.generate("go", versions={"agents": {"research-agent": {"status": "published"}}})
    assert any("status='published'" in r.getMessage() for r in caplog.records)
    with pytest.raises(ValueError, match="version_id or a status"):
        await parent.generate("go", versions={"agents": {"research-agent": {}}})


async def test_a_model_string_that_cannot_be_used_runs_the_code_model(monkeypatch, caplog) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    memory = Memory(":memory:")
    parent, _, sub_model = team(memory)
    version = await memory.versions.save("research-agent", {"model": "openai/gpt-5-mini"})
    with caplog.at_level(logging.WARNING, logger="supervisor_graph"):
        result = await parent.generate("go", versions={"agents": {"research-agent": {"version_id": version}}})
    assert result.delegations[0].text == "said: RESEARCH CODE" and len(sub_model.calls) == 1
    assert any("could not be used (MissingAPIKeyError)" in r.getMessage() for r in caplog.records)


async def test_version_tool_subset_and_max_steps_hold() -> None:
    memory = Memory(":memory:")
    sub_policy = lambda m: tool_call("search", {"query": "x"}) if not isinstance(m[-1], ToolMessage) else f"got: {m[-1].content}"  # noqa: E731
    parent, _, sub_model = team(memory, sub_policy=sub_policy)
    subset = await memory.versions.save("research-agent", {"tools": ["lookup"]})
    result = await parent.generate("go", versions={"agents": {"research-agent": {"version_id": subset}}})
    # search is not in the version: the call is refused like an unknown tool
    assert result.delegations[0].text == "got: Error: there is no tool named 'search'; available tools: lookup"
    # the version's step limit stops the subagent after one turn...
    short = await memory.versions.save("research-agent", {"max_steps": 1})
    result = await parent.generate("go", versions={"agents": {"research-agent": {"version_id": short}}})
    assert result.delegations[0].finish_reason == "max_steps"
    # ...unless the delegation sets one
    calls = iter([delegate("research", "x", max_steps=3)])
    parent.model.policy = lambda m: next(calls, None) or "done"  # type: ignore[union-attr]
    result = await parent.generate("go", versions={"agents": {"research-agent": {"version_id": short}}})
    assert result.delegations[0].finish_reason == "stop"
    # the top-level agent's version step limit, and a call's own max_steps winning over it
    await memory.versions.save("parent", {"max_steps": 1}, status="published")
    parent.model.policy = lambda m: delegate("research", "again")  # type: ignore[union-attr]
    limited = await parent.generate("go", versions={"default_status": "published"})
    assert limited.finish_reason == "max_steps" and len(limited.delegations) == 1
    wider = await parent.generate("go", versions={"default_status": "published"}, max_steps=2)
    assert len(wider.delegations) == 2
    assert sub_model.calls


async def test_one_store_read_per_agent_per_run() -> None:
    class Counting(InMemoryStore):
        reads = 0

        async def abatch(self, ops):  # type: ignore[no-untyped-def]
            ops = list(ops)
            self.reads += sum(1 for op in ops if getattr(op, "namespace_prefix", getattr(op, "namespace", None)) == VERSIONS_NAMESPACE)
            return await super().abatch(ops)

    store = Counting()
    memory = Memory(InMemorySaver(), store=store)
    parent, _, _ = team(memory, parent_calls=3)
    await memory.versions.save("research-agent", {"instructions": "V"}, status="published")
    store.reads = 0
    result = await parent.generate("go", versions={"default_status": "published"})
    assert [d.text for d in result.delegations] == ["said: V"] * 3
    assert store.reads == 2  # the parent once, the researcher once (three delegations)
    store.reads = 0
    await parent.generate("go")
    assert store.reads == 0  # no selection, no read


def test_cli_versions(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    target = "supervisor_graph.examples.research_write:agent"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "supervisor_graph.cli", "versions", *args, "--db", str(db)],
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
        )

    saved = cli("save", target, "research-agent", "--instructions", "Be terse.")
    assert saved.returncode == 0, saved.stderr
    version_id = saved.stdout.strip()
    published = cli("publish", target, "research-agent", version_id)
    assert published.returncode == 0 and '"status": "published"' in published.stdout
    listed = cli("list", target, "research-agent")
    assert listed.stdout.startswith(f"{version_id}  published") and "instructions" in listed.stdout
    shown = cli("show", target, "research-agent")
    assert '"instructions": "Be terse."' in shown.stdout
    refused = cli("save", target, "research-agent", "--tools", "publish")
    assert refused.returncode == 2 and "tools the code agent does not have: publish" in refused.stderr
    unknown = cli("list", target, "nobody")
    assert unknown.returncode == 2 and "no agent with id 'nobody'" in unknown.stderr


async def test_the_compiled_graph_takes_versions_and_request_context_from_its_context(memory: Memory) -> None:
    """SPEC §23: `graph.ainvoke(..., context={"versions": ...})`
    (what Studio, `langgraph dev` and Aegra send) selects stored versions from the run's
    store, at every depth."""
    parent, parent_model, sub_model = team(memory)
    store = InMemoryStore()
    graph = parent.compile(checkpointer=InMemorySaver(), store=store)
    # a version stored in this run's store (as a server's store holds it)
    from supervisor_graph.memory.versions import StoreVersions

    sub_v = await memory.versions.save("research-agent", {"instructions": "RESEARCH V2"}, status="published")
    stored = await memory.versions.get("research-agent", version_id=sub_v)
    assert stored is not None
    await store.aput(VERSIONS_NAMESPACE, f'["research-agent", "{sub_v}"]', stored.model_dump(mode="json"), index=False)
    assert (await StoreVersions(store).get("research-agent", status="published")) is not None

    out = await graph.ainvoke(
        {"messages": [("user", "go")]},
        {"configurable": {"thread_id": "ctx"}},
        context={"versions": {"agents": {"research-agent": {"status": "published"}}}},
    )
    assert out["messages"][-1].content == "done"
    assert system_of(sub_model.calls[-1]) == "RESEARCH V2"
    assert system_of(parent_model.calls[-1]) == "PARENT CODE"
    # without a selection the code runs
    await graph.ainvoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "plain"}})
    assert system_of(sub_model.calls[-1]) == "RESEARCH CODE"


# -- consistent writes outside runs, and the definition's size limit (SPEC §19) ----


async def test_concurrent_publishes_leave_exactly_one_published(memory: Memory) -> None:
    """Publishing takes a lock row beside the thread leases, so concurrent publishes (and
    saves with status="published") follow one another: exactly one is left published."""
    import asyncio

    team(memory)
    for attempt in range(5):
        drafts = [await memory.versions.save("research-agent", {"instructions": f"v{attempt}.{i}"}) for i in range(4)]
        await asyncio.gather(
            *(memory.versions.publish("research-agent", v) for v in drafts),
            memory.versions.save("research-agent", {"instructions": f"v{attempt}.new"}, status="published"),
        )
        published = [v for v in await memory.versions.list("research-agent") if v.status == "published"]
        assert len(published) == 1, (attempt, [v.version_id for v in published])
        assert published[0].definition.instructions is not None
        assert published[0].definition.instructions.startswith(f"v{attempt}.")


async def test_a_refused_save_stores_nothing() -> None:
    memory = Memory(":memory:")
    team(memory)
    with pytest.raises(ValueError, match="'draft' or 'published'"):
        await memory.versions.save("research-agent", {"instructions": "x"}, status="weird")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'draft' or 'published'"):
        await memory.versions.save("research-agent", {"instructions": "x"}, status="archived")
    assert await memory.versions.list("research-agent") == []


async def test_a_definition_over_the_size_limit_is_refused() -> None:
    big = "x" * (64 * 1024)
    memory = Memory(":memory:")
    team(memory)
    with pytest.raises(ValueError, match=r"65,536 bytes.*Memory\(max_version_bytes=\.\.\.\)"):
        await memory.versions.save("research-agent", {"instructions": big})
    assert await memory.versions.list("research-agent") == []
    assert await memory.versions.save("research-agent", {"instructions": "x" * 60_000})
    roomy = Memory(":memory:", max_version_bytes=128 * 1024)
    team(roomy)
    assert await roomy.versions.save("research-agent", {"instructions": big})
    with pytest.raises(ValueError, match="max_version_bytes"):
        Memory(":memory:", max_version_bytes=0)
