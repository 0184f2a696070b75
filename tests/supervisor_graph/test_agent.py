"""Declarations are validated at construction, with errors that name the field (SPEC §3)."""

from __future__ import annotations

import pytest
from langchain_core.tools import tool
from pydantic import BaseModel, ValidationError

from supervisor_graph import Agent, create_tool
from supervisor_graph.testing import ScriptedChatModel


def model() -> ScriptedChatModel:
    return ScriptedChatModel(responses=["ok"])


def sub(id: str = "sub-agent", description: str | None = "Does things.") -> Agent:
    return Agent(id=id, description=description, model=model())


@pytest.mark.parametrize("bad_id", ["", "   "])
def test_empty_id_is_rejected(bad_id: str) -> None:
    with pytest.raises(ValidationError, match="id"):
        Agent(id=bad_id, model=model())


def test_missing_id_is_rejected() -> None:
    with pytest.raises(ValidationError, match="id"):
        Agent(model=model())  # type: ignore[call-arg]


def test_subagent_needs_description() -> None:
    with pytest.raises(ValidationError, match="needs a description"):
        Agent(id="p", model=model(), agents={"helper": sub(description=None)})


def test_duplicate_subagent_ids() -> None:
    with pytest.raises(ValidationError, match="same id 'sub-agent'"):
        Agent(id="p", model=model(), agents={"a": sub(), "b": sub()})


@pytest.mark.parametrize("key", ["has space", "colon:key", "pipe|key", "x" * 57, ""])
def test_subagent_key_pattern(key: str) -> None:
    with pytest.raises(ValidationError, match="must match"):
        Agent(id="p", model=model(), agents={key: sub()})


def test_valid_keys_accepted() -> None:
    agent = Agent(id="p", model=model(), agents={"Research_agent-2": sub(), "x" * 56: sub("other")})
    assert set(agent.agents) == {"Research_agent-2", "x" * 56}


def test_cycle_by_id_is_rejected() -> None:
    inner = Agent(id="p", description="same id as the parent", model=model())
    with pytest.raises(ValidationError, match="cycle p -> p"):
        Agent(id="p", model=model(), agents={"again": inner})


def test_cycle_by_mutation_is_caught_at_compile() -> None:
    child = sub("child")
    parent = Agent(id="parent", description="d", model=model(), agents={"child": child})
    child.agents["back"] = parent  # mutating the dict bypasses validation
    with pytest.raises(ValueError, match="cycle"):
        parent.compile()


def test_tool_name_clash_with_delegation_tool() -> None:
    @tool
    def anything(x: str) -> str:
        """A tool."""
        return x

    with pytest.raises(ValidationError, match="agent-helper"):
        Agent(id="p", model=model(), tools={"agent-helper": anything}, agents={"helper": sub()})


def test_unknown_model_provider() -> None:
    with pytest.raises(ValidationError, match="unknown provider 'acme'"):
        Agent(id="p", model="acme/claude")  # anthropic is known (SPEC §26)


def test_model_string_without_provider() -> None:
    with pytest.raises(ValidationError, match="provider/model"):
        Agent(id="p", model="gpt-5")


def test_model_of_wrong_type() -> None:
    with pytest.raises(ValidationError, match="model must be"):
        Agent(id="p", model=42)  # type: ignore[arg-type]


def test_unknown_field_is_rejected() -> None:
    with pytest.raises(ValidationError, match="instruction"):
        Agent(id="p", model=model(), instruction="typo")  # type: ignore[call-arg]


def test_bad_default_options_name_the_option() -> None:
    with pytest.raises(ValidationError, match="max_steps"):
        Agent(id="p", model=model(), default_options={"max_steps": 0})
    with pytest.raises(ValidationError, match="max_stepz"):
        Agent(id="p", model=model(), default_options={"max_stepz": 3})


def test_tools_as_list_dict_and_create_tool() -> None:
    class Query(BaseModel):
        query: str

    search = create_tool(id="web_search", description="Search", input_schema=Query, execute=lambda q: q.query)

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def shout(text: str) -> str:
        """Shout text."""
        return text.upper()

    from_list = Agent(id="p", model=model(), tools=[search, add])
    assert set(from_list.tools) == {"web_search", "add"}
    from_dict = Agent(id="p", model=model(), tools={"lookup": search, "shout": shout})
    assert set(from_dict.tools) == {"lookup", "shout"}
    assert from_dict.tools["lookup"].name == "lookup"
    assert from_dict.tools["shout"].invoke({"text": "hi"}) == "HI"


def test_duplicate_tool_names() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with pytest.raises(ValidationError, match="two tools are named 'add'"):
        Agent(id="p", model=model(), tools=[add, add])


def test_string_model_needs_no_key_to_declare_and_says_so_at_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    agent = Agent(id="p", model="openai/gpt-5-mini")  # declaring needs no key
    from supervisor_graph import MissingAPIKeyError

    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        agent.compile()
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        agent.generate_sync("hi")


def test_model_strings_resolve_to_chat_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_openai import ChatOpenAI

    from supervisor_graph.declaration.models import resolve_model_string

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    for value in ("openai/gpt-5-mini", "openai:gpt-5-mini"):
        chat = resolve_model_string(value).client()  # one ChatOpenAI per event loop
        assert isinstance(chat, ChatOpenAI)
        assert chat.model_name == "gpt-5-mini"
        assert str(chat.openai_api_base) == "http://127.0.0.1:9/v1"
        assert chat.stream_usage  # asked for even with a base URL (OpenAI-compatible servers)
