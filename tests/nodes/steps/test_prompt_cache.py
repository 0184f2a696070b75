"""Prompt caching (SPEC §33, issue 49 item 4), over real HTTP against the shipped fake
Anthropic and OpenAI servers, which record each request's body: Anthropic requests carry
breakpoints on the tools, the system prompt and the conversation so far, OpenAI requests
a `prompt_cache_key` per agent path; an agent's prompt prefix is byte-identical from call
to call and from run to run; `prompt_cache=False` asks for nothing; the cached input
tokens, read and written, are reported per agent; an agent whose model needs no asking
has no step."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI

from supervisor_graph import Agent, Memory
from supervisor_graph.compiler.build import build_spec
from supervisor_graph.nodes.state import Usage, add_usage, zero_usage
from supervisor_graph.nodes.steps.prompt_cache import BREAKPOINT, PromptCache, asks, cache_key, provider_of, variant
from supervisor_graph.nodes.steps.protocol import NO_STEPS
from supervisor_graph.testing import ScriptedChatModel
from supervisor_graph.testing.anthropic_server import FakeAnthropic, is_tool_result, text_of
from tests.openai_server import FakeOpenAI

INSTRUCTIONS = "You delegate research and report what it found. " * 20


def claude(body: dict[str, Any]) -> Any:
    """The boss delegates once, then answers; the researcher answers at once."""
    last = body["messages"][-1]
    names = {tool["name"] for tool in body.get("tools") or []}
    if is_tool_result(last):
        return f"final answer from {text_of(last)}"
    if "agent-research" in names:
        return {"tool": "agent-research", "args": {"prompt": f"find facts on {text_of(last)}"}}
    return "the facts"


def gpt(body: dict[str, Any]) -> Any:
    messages = body["messages"]
    names = {tool["function"]["name"] for tool in body.get("tools") or []}
    if messages[-1]["role"] == "tool":
        return f"final answer from {messages[-1]['content']}"
    if "agent-research" in names:
        return {"tool": "agent-research", "args": {"prompt": "find facts"}}
    return "the facts"


@pytest.fixture
def anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(claude) as fake:
        for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_URL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


@pytest.fixture
def openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(gpt) as fake:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        yield fake


def team(model: Any, **boss: Any) -> Agent:
    research = Agent(id="research-agent", description="Finds facts.", instructions="You research.", model=model, retry_policy=None)
    return Agent(id="boss", instructions=INSTRUCTIONS, model=model, agents={"research": research}, retry_policy=None, **boss)


def stable(body: dict[str, Any], upto: int) -> str:
    """What must not change from call to call: tools, system and the first `upto` messages, as sent."""
    return json.dumps([body.get("tools"), body.get("system"), body["messages"][:upto]], sort_keys=True)


def boss_calls(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [body for body in requests if body.get("tools")]


# -- Anthropic ---------------------------------------------------------------------------


async def test_anthropic_requests_mark_tools_system_and_the_conversation(anthropic: FakeAnthropic) -> None:
    result = await team("anthropic/claude-sonnet-4-5").generate("tides")
    assert result.text.startswith("final answer from")
    first, research, second = anthropic.requests
    for body in (first, research, second):
        assert body["cache_control"] == BREAKPOINT  # the conversation's last block (automatic caching)
        assert body["system"][-1]["cache_control"] == BREAKPOINT
        assert json.dumps(body).count('"cache_control"') <= 4  # Anthropic's limit
    assert first["system"] == [{"type": "text", "text": INSTRUCTIONS, "cache_control": BREAKPOINT}]
    assert first["tools"][-1]["name"] == "agent-research" and first["tools"][-1]["cache_control"] == BREAKPOINT
    assert research["system"] == [{"type": "text", "text": "You research.", "cache_control": BREAKPOINT}]
    # the boss's second call starts with its first, byte for byte, so the server read it from its cache
    assert stable(second, len(first["messages"])) == stable(first, len(first["messages"]))
    by_agent = result.usage_by_agent
    assert by_agent["boss"].cache_read_tokens > 0 and by_agent["boss"].cache_creation_tokens > 0
    assert by_agent["boss/research-agent"].cache_creation_tokens > 0
    assert result.usage.cache_read_tokens == sum(u.cache_read_tokens for u in by_agent.values())
    assert result.usage.input_tokens == 33  # the cache's share is part of the input, as before


async def test_the_prefix_is_the_same_across_runs_on_one_thread_and_streams(anthropic: FakeAnthropic) -> None:
    agent = team("anthropic/claude-sonnet-4-5", memory=Memory(storage=":memory:"))
    thread = {"thread": "t1", "resource": "user-1"}
    await agent.generate("tides", memory=thread)
    last = boss_calls(anthropic.requests)[-1]
    stream = await agent.stream("currents", memory=thread)
    async for _ in stream.text_stream:
        pass
    result = await stream.result()
    again = boss_calls(anthropic.requests)[len(boss_calls(anthropic.requests)) - 2]  # the second run's first call
    assert again["stream"] is True
    assert stable(again, len(last["messages"])) == stable(last, len(last["messages"]))
    assert result.usage_by_agent["boss"].cache_read_tokens > 0  # streamed usage counts the cache too


async def test_the_system_breakpoint_ends_before_what_a_call_appends(anthropic: FakeAnthropic) -> None:
    memory = Memory(storage=":memory:")
    agent = team("anthropic/claude-sonnet-4-5", memory=memory, working_memory={"scope": "resource", "template": "# Notes\n"})
    await agent.generate("tides", memory={"thread": "t1", "resource": "user-1"})
    first = boss_calls(anthropic.requests)[0]
    own, appended = first["system"]
    assert own == {"type": "text", "text": INSTRUCTIONS, "cache_control": BREAKPOINT}
    assert "cache_control" not in appended and "<working_memory> block" in appended["text"]  # the guide: stable
    # the value follows the conversation (issue 51): an update changes nothing before it
    assert "# Notes" not in json.dumps(first["system"]) and "# Notes" in json.dumps(first["messages"][-1])


async def test_chat_models_and_model_callables_are_asked_too(anthropic: FakeAnthropic) -> None:
    model = ChatAnthropic(model="claude-sonnet-4-5", base_url=anthropic.base_url, api_key="test")  # type: ignore[call-arg]
    await team(model).generate("tides")
    await team(lambda _context: model).generate("tides")
    assert all(body["cache_control"] == BREAKPOINT for body in anthropic.requests)
    assert len(anthropic.requests) == 6


async def test_prompt_cache_false_asks_for_nothing(anthropic: FakeAnthropic) -> None:
    research = Agent(id="research-agent", description="Finds facts.", model="anthropic/claude-sonnet-4-5", prompt_cache=False)
    boss = Agent(id="boss", instructions=INSTRUCTIONS, model="anthropic/claude-sonnet-4-5", agents={"research": research}, prompt_cache=False)
    result = await boss.generate("tides")
    assert all("cache_control" not in json.dumps(body) for body in anthropic.requests)
    assert anthropic.requests[0]["system"] == INSTRUCTIONS
    assert result.usage.cache_read_tokens == 0 and "cache_read_tokens" not in result.usage.model_dump()


# -- OpenAI ------------------------------------------------------------------------------


async def test_openai_requests_carry_a_key_per_agent_path(openai: FakeOpenAI) -> None:
    result = await team("openai/local-model").generate("tides")
    assert [body["prompt_cache_key"] for body in openai.requests] == ["boss", "boss/research-agent", "boss"]
    first, _, second = openai.requests
    assert json.dumps([second["tools"], second["messages"][:2]]) == json.dumps([first["tools"], first["messages"]])
    assert result.usage_by_agent["boss"].cache_read_tokens > 0  # the second call read the first's prefix
    assert result.usage_by_agent["boss/research-agent"].cache_read_tokens == 0


async def test_openai_chat_models_streamed_and_turned_off(openai: FakeOpenAI) -> None:
    model = ChatOpenAI(model="local-model", base_url=openai.base_url, api_key="test", stream_usage=True)  # type: ignore[arg-type]
    stream = await team(model).stream("tides")
    async for _ in stream.text_stream:
        pass
    assert (await stream.result()).usage_by_agent["boss"].cache_read_tokens > 0
    assert [body.get("prompt_cache_key") for body in openai.requests] == ["boss", "boss/research-agent", "boss"]
    asked = len(openai.requests)
    await team(model, prompt_cache=False).generate("tides")
    assert [body.get("prompt_cache_key") for body in openai.requests[asked:]] == [None, "boss/research-agent", None]


# -- fallback lists ----------------------------------------------------------------------


async def test_each_model_of_a_fallback_list_asks_its_own_provider(anthropic: FakeAnthropic, openai: FakeOpenAI) -> None:
    down = ScriptedChatModel(policy=lambda _messages: (_ for _ in ()).throw(ValueError("down")))
    research = Agent(id="research-agent", description="Finds facts.", model=[down, "openai/local-model"], retry_policy=None)
    boss = Agent(id="boss", instructions=INSTRUCTIONS, model=["anthropic/claude-sonnet-4-5", "openai/local-model"],
                 agents={"research": research}, retry_policy=None)  # fmt: skip
    result = await boss.generate("tides")
    assert [body["cache_control"] for body in anthropic.requests] == [BREAKPOINT, BREAKPOINT]  # the boss's primary
    assert anthropic.requests[0]["system"][-1]["cache_control"] == BREAKPOINT
    assert [body["prompt_cache_key"] for body in openai.requests] == ["boss/research-agent"]  # the researcher's fallback
    assert result.usage_by_agent["boss"].cache_read_tokens > 0


# -- who gets the step -------------------------------------------------------------------


def test_only_agents_whose_model_must_be_asked_get_the_step(anthropic: FakeAnthropic) -> None:
    assert build_spec(Agent(id="a", model=ScriptedChatModel())).steps is NO_STEPS  # unused is free
    assert build_spec(Agent(id="a", model="anthropic/claude-sonnet-4-5", prompt_cache=False)).steps is NO_STEPS
    assert isinstance(build_spec(Agent(id="a", model="anthropic/claude-sonnet-4-5")).steps.find(PromptCache), PromptCache)
    assert build_spec(Agent(id="a", model=lambda _context: ScriptedChatModel())).steps.find(PromptCache) is not None
    assert build_spec(Agent(id="a", model=[ScriptedChatModel(), "anthropic/claude-sonnet-4-5"])).steps.find(PromptCache) is not None
    assert build_spec(Agent(id="a", model=[ScriptedChatModel(), ScriptedChatModel()])).steps is NO_STEPS
    assert not asks(ScriptedChatModel()) and asks(lambda _context: None)
    claude_model = ChatAnthropic(model="claude-sonnet-4-5", api_key="test")  # type: ignore[call-arg]
    assert provider_of(claude_model.bind_tools([])) == "anthropic" and provider_of(ScriptedChatModel()) is None
    assert cache_key(("boss", "research-agent")) == "boss/research-agent"


def test_a_key_or_breakpoint_of_the_users_own_stays() -> None:
    mine = ChatOpenAI(model="local-model", api_key="test", model_kwargs={"prompt_cache_key": "mine"})  # type: ignore[arg-type]
    assert variant(mine, "", ("boss",)) is mine
    hour = {"type": "ephemeral", "ttl": "1h"}
    claude_model = ChatAnthropic(model="claude-sonnet-4-5", api_key="test").bind(cache_control=hour)  # type: ignore[call-arg]
    assert variant(claude_model, "", ("boss",)).kwargs["cache_control"] == hour


async def test_a_model_of_another_provider_passes_through() -> None:
    scripted = ScriptedChatModel(responses=["hi"])
    agent = Agent(id="a", model=lambda _context: scripted)
    assert (await agent.generate("hello")).text == "hi"


def test_cached_tokens_add_up_as_langchain_reports_them() -> None:
    total = zero_usage()
    add_usage(total, AIMessage("", usage_metadata={"input_tokens": 10, "output_tokens": 1, "total_tokens": 11}).usage_metadata)
    assert total == zero_usage() | {"input_tokens": 10, "output_tokens": 1, "total_tokens": 11}  # no cache: as before
    details = {"cache_read": 4, "cache_creation": 0, "ephemeral_5m_input_tokens": 3, "ephemeral_1h_input_tokens": 2}
    add_usage(total, {"input_tokens": 9, "output_tokens": 1, "total_tokens": 10, "input_token_details": details})
    add_usage(total, {"input_tokens": 1, "output_tokens": 0, "total_tokens": 1, "cache_read_tokens": 1})  # ours
    assert (total["cache_read_tokens"], total["cache_creation_tokens"]) == (5, 5)
    assert Usage(**total).model_dump()["cache_creation_tokens"] == 5
    assert Usage().model_dump() == {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
