"""Model strings for every provider LangChain's `init_chat_model` knows (SPEC §26, issue
30 item 1), over real HTTP against the shipped fake Anthropic Messages API server (and the
fake OpenAI-compatible one): delegation through tool calls, streamed usage, any event loop,
rubric judges and versions; missing keys, packages and unknown providers up front."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from supervisor_graph import Agent, Memory, MissingAPIKeyError, create_rubric_scorer
from supervisor_graph.declaration.models import (
    PROVIDERS,
    ProviderChatModel,
    check_credentials,
    parse_model_string,
    resolve_model_string,
)
from supervisor_graph.declaration.providers import check_provider_credentials, provider
from supervisor_graph.memory.versions import AgentDefinition
from supervisor_graph.testing.anthropic_server import USAGE, FakeAnthropic, is_tool_result, text_of
from supervisor_graph.testing.http_server import free_port
from tests.openai_server import FakeOpenAI

PER_CALL = USAGE["input_tokens"] + USAGE["output_tokens"]
ANTHROPIC_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_URL")
# an integration this environment lacks, for the pip line (checked, not assumed)
ABSENT = next(
    name for name in ("groq", "mistralai", "ollama", "cohere", "xai")
    if importlib.util.find_spec(provider(name).module) is None
)


def conversation(body: dict[str, Any]) -> Any:
    """Delegate once to the researcher, then answer; the researcher answers at once."""
    last = body["messages"][-1]
    names = {t["name"] for t in body.get("tools") or []}
    if "CriterionVerdict" in names:
        return {"tool": "CriterionVerdict", "args": {"met": True, "reason": "it answers"}}
    if is_tool_result(last):
        return f"final answer from {text_of(last)}"
    if "agent-research" in names:
        return {"tool": "agent-research", "args": {"prompt": "find facts"}}
    return "the facts"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(conversation) as fake:
        for name in ANTHROPIC_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


def team(model: str = "anthropic/claude-sonnet-4-5") -> Agent:
    research = Agent(id="research-agent", description="Finds facts.", model=model, retry_policy=None)
    return Agent(id="boss", model=model, agents={"research": research}, retry_policy=None)


def test_the_table_is_langchains() -> None:
    from langchain.chat_models.base import _BUILTIN_PROVIDERS

    assert sorted(PROVIDERS) == sorted(_BUILTIN_PROVIDERS)
    for name, (module, cls, _) in _BUILTIN_PROVIDERS.items():
        assert (provider(name).module, provider(name).cls) == (module, cls), name


async def test_a_supervisor_on_claude_delegates_streams_and_counts_usage(server: FakeAnthropic) -> None:
    stream = await team().stream("go")
    text = "".join([delta async for delta in stream.text_stream])
    result = await stream.result()
    assert text.strip() == result.text.strip() == "final answer from the facts"
    assert result.delegations[0].text.strip() == "the facts"
    assert result.usage.total_tokens == 3 * PER_CALL  # two supervisor calls and the researcher's
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3 * USAGE["input_tokens"], 3 * USAGE["output_tokens"])
    assert len(server.requests) == 3 and all(r["stream"] for r in server.requests)
    assert server.requests[0]["model"] == "claude-sonnet-4-5"
    assert server.requests[0]["tools"][0]["name"] == "agent-research"
    assert is_tool_result(server.requests[-1]["messages"][-1])  # the delegation's answer went back as a tool_result


async def test_generate_counts_usage_of_whole_messages(server: FakeAnthropic) -> None:
    result = await team("anthropic:claude-haiku-4-5").generate("go")
    assert result.text.strip() == "final answer from the facts"
    assert result.usage.total_tokens == 3 * PER_CALL
    assert {r["model"] for r in server.requests} == {"claude-haiku-4-5"}


def test_sync_and_async_calls_mix_on_any_event_loop(server: FakeAnthropic) -> None:
    agent = team()
    assert asyncio.run(agent.generate("go")).text.strip() == "final answer from the facts"
    assert asyncio.run(agent.generate("again")).text.strip() == "final answer from the facts"  # a new loop

    async def async_then_sync() -> tuple[str, str]:
        first = await agent.generate("go")
        second = agent.generate_sync("go")  # the sync twin runs on a loop of its own
        return first.text, second.text

    assert [t.strip() for t in asyncio.run(async_then_sync())] == ["final answer from the facts"] * 2
    assert agent.generate_sync("sync").usage.total_tokens == 3 * PER_CALL


def test_one_client_per_loop_with_streamed_usage(server: FakeAnthropic) -> None:
    # no retries: langchain-anthropic's shared HTTP client would fail on the second loop
    # ("Event loop is closed"), and a retry would hide it
    model = resolve_model_string("anthropic/claude-sonnet-4-5", max_tokens=256, max_retries=0)
    assert isinstance(model, ProviderChatModel)

    async def call() -> Any:
        chat = model.client()
        assert model.client() is chat  # one per loop
        assert (await model.ainvoke("hi")).content == "the facts"
        return chat

    first, second = asyncio.run(call()), asyncio.run(call())
    assert first is not second and first._async_client is not second._async_client
    assert first.stream_usage and first.max_tokens == 256
    assert model.client() is model.client()  # one for synchronous callers
    assert model.invoke("hi").usage_metadata["total_tokens"] == PER_CALL  # a non-streamed message

    def lookup(topic: str) -> str:
        """Look a topic up."""
        return topic

    call = model.bind_tools([lookup]).invoke("look it up")
    assert call.tool_calls == [] and server.requests[-1]["tools"][0]["name"] == "lookup"
    delegating = resolve_model_string("anthropic/claude-sonnet-4-5", max_retries=0).bind_tools([agent_research])
    for message in (delegating.invoke("go"), asyncio.run(_streamed(delegating))):
        assert [(c["name"], c["args"]) for c in message.tool_calls] == [("agent-research", {"prompt": "find facts"})]
        assert message.usage_metadata["total_tokens"] == PER_CALL


def agent_research(prompt: str) -> str:
    """Delegate to the researcher."""
    return prompt


agent_research.__name__ = "agent-research"


async def _streamed(model: Any) -> Any:
    whole = None
    async for chunk in model.astream("go"):  # tool_use arrives as input_json_delta pieces
        whole = chunk if whole is None else whole + chunk
    return whole


def test_the_server_runs_on_its_own_and_drives_the_demo() -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "supervisor_graph.testing.anthropic_server", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert server.poll() is None and time.monotonic() < deadline, server.stdout.read() if server.stdout else ""
            time.sleep(0.1)
        env = {**os.environ, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": "offline"}
        demo = subprocess.run(
            [str(Path(sys.executable).with_name("supervisor-graph")), "demo", "--model", "anthropic/claude-sonnet-4-5", "--approve-all"],
            capture_output=True, text=True, env=env, timeout=120,
        )
        assert demo.returncode == 0, demo.stderr[-2000:]
        assert "research-agent answered" in demo.stdout and "Done: Answer to: Research" in demo.stdout
        assert "tokens: 33 in, 21 out" in demo.stdout  # streamed usage from the server
    finally:
        server.terminate()
        server.wait(10)


async def test_a_rubric_judge_and_a_version_take_any_provider(server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    rubric = create_rubric_scorer(model="anthropic/claude-judge", criteria=[{"description": "Answers the question"}])
    seen: list[bool] = []
    result = await team().generate("go", is_task_complete={"scorers": [rubric], "on_complete": lambda r: seen.append(r.complete)})
    assert result.finish_reason == "stop" and seen == [True]
    assert any(r["model"] == "claude-judge" for r in server.requests)

    # a version moves the researcher of an OpenAI team to Claude: both wire formats in one run
    def openai_reply(body: dict[str, Any]) -> Any:
        messages, names = body["messages"], {t["function"]["name"] for t in body.get("tools") or []}
        if messages[-1]["role"] == "tool":
            return f"final answer from {messages[-1]['content']}"
        return {"tool": "agent-research", "args": {"prompt": "find facts"}} if "agent-research" in names else "openai facts"

    with FakeOpenAI(openai_reply) as openai:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.setenv("OPENAI_BASE_URL", openai.base_url)
        memory = Memory()
        boss = team("openai/local-model").model_copy(update={"memory": memory})
        claude = await memory.versions.save("research-agent", {"model": "anthropic/claude-version"})
        before = len(server.requests)
        result = await boss.generate("go", versions={"agents": {"research-agent": {"version_id": claude}}})
        assert result.delegations[0].text.strip() == "the facts"  # Claude's answer, not "openai facts"
        assert [r["model"] for r in server.requests[before:]] == ["claude-version"]
        assert result.usage.total_tokens == PER_CALL + 2 * 18  # the researcher's call and the supervisor's two


async def test_a_keyless_local_server_needs_only_its_base_url(server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    result = await team().generate("go")
    assert result.text.strip() == "final answer from the facts"


async def test_a_missing_key_names_the_providers_variable_before_anything_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*ANTHROPIC_VARIABLES, "GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    agent = team()  # declaring needs no key
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        agent.compile()
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        await agent.generate("go")
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        agent.generate_sync("go")
    if importlib.util.find_spec("langchain_google_genai") is not None:
        with pytest.raises(MissingAPIKeyError, match="GOOGLE_API_KEY"):
            check_credentials("google_genai/gemini-2.5-flash")
        monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "false")  # Vertex AI mode off: still the key
        with pytest.raises(MissingAPIKeyError, match="GOOGLE_API_KEY"):
            check_credentials("google_genai/gemini-2.5-flash")
        monkeypatch.setenv("GEMINI_API_KEY", "g")
        check_credentials("google_genai/gemini-2.5-flash")
    check_provider_credentials(provider("ollama"), "ollama/llama3.2")  # a local server needs no key
    for name in ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GROQ_API_KEY", "")
    with pytest.raises(MissingAPIKeyError, match="GROQ_API_KEY"):
        check_provider_credentials(provider("groq"), "groq/llama-3.3-70b")


def test_a_missing_package_is_one_error_with_the_pip_line() -> None:
    value = f"{ABSENT}/some-model"
    pip = f"pip install {provider(ABSENT).package}"
    with pytest.raises(ValidationError) as declared:
        Agent(id="p", model=value)
    assert str(declared.value).count(pip) == 1 and declared.value.error_count() == 1
    with pytest.raises(ValueError, match=pip):
        create_rubric_scorer(model=value, criteria=[{"description": "x"}])
    with pytest.raises(ValidationError, match=pip):
        AgentDefinition(model=value)
    assert AgentDefinition(model="anthropic/claude-sonnet-4-5").model == "anthropic/claude-sonnet-4-5"


def test_unknown_providers_list_the_known_ones_and_strings_parse_at_the_first_separator() -> None:
    with pytest.raises(ValidationError, match="unknown provider 'acme'") as unknown:
        Agent(id="p", model="acme/model-1")
    for known in ("anthropic", "google_genai", "ollama", "bedrock", "openai"):
        assert known in str(unknown.value)
    assert parse_model_string("anthropic:claude/x:1") == ("anthropic", "claude/x:1")
    assert parse_model_string("openai/ft:gpt-4o:org") == ("openai", "ft:gpt-4o:org")
    if importlib.util.find_spec("langchain_google_genai") is not None:
        assert parse_model_string("google-genai/gemini-2.5-flash") == ("google_genai", "gemini-2.5-flash")
    for bad in ("anthropic", "anthropic/", "/claude"):
        with pytest.raises(ValueError, match="provider/model"):
            parse_model_string(bad)
