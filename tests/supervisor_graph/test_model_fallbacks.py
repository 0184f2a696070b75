"""Model fallbacks (SPEC §33): `Agent(model=[primary, fallback, ...])`. The next model
answers when one fails after its retries, in a supervisor and in a subagent, under the
facade and the compiled graph; the answer names the model that gave it; a stream never
shows text of a failed attempt; a bad list is refused when the agent is declared."""

from __future__ import annotations

import pickle
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from pydantic import ValidationError

from supervisor_graph import Agent, MissingAPIKeyError, ModelCallError
from supervisor_graph.compiler.build import build_spec
from supervisor_graph.declaration.agent_rules import model_retry_policy
from supervisor_graph.declaration.fallbacks import AllModelsFailedError, FallbackChatModel
from supervisor_graph.declaration.models import model_strings
from supervisor_graph.guardrails import pii
from supervisor_graph.testing import ScriptedChatModel, delegate
from tests.agui.conftest import AGUIAgent, collect, make_input, of_type, wire
from tests.openai_server import USAGE, FakeOpenAI

# the default policy (3 attempts of transient errors) without its waits
FAST = model_retry_policy()._replace(initial_interval=0.0, jitter=False)


def down(name: str = "primary", error: Exception | None = None) -> ScriptedChatModel:
    """A model whose provider is down: every call fails."""
    return ScriptedChatModel(policy=lambda m: (_ for _ in ()).throw(error or ConnectionError("down")), model_name=name)


def up(*answers: Any, name: str = "backup") -> ScriptedChatModel:
    return ScriptedChatModel(responses=list(answers), model_name=name)


class CutOff(BaseChatModel):
    """A provider that streams part of its answer, then drops the connection. Called
    whole, it streams to the call's handlers as it reads, as integrations do."""

    @property
    def _llm_type(self) -> str:
        return "cut-off"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        raise NotImplementedError

    async def _astream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        for word in ("PARTIAL ", "TEXT "):
            yield ChatGenerationChunk(message=AIMessageChunk(content=word))
        raise ConnectionError("connection reset")

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        text = ""
        async for chunk in self._astream(messages):
            if run_manager is not None:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            text += chunk.text
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


# -- the next model answers -------------------------------------------------------


async def test_the_fallback_answers_a_supervisor_whose_model_is_down() -> None:
    primary, backup = down(), up("hello from the backup")
    agent = Agent(id="solo", model=[primary, backup], retry_policy=FAST)
    result = await agent.generate("hi")
    assert result.text == "hello from the backup"
    assert len(primary.calls) == 3  # the agent's retry policy: three attempts, then the next model
    assert len(backup.calls) == 1
    assert result.messages[-1].response_metadata["model_name"] == "backup"


async def test_the_fallback_answers_a_subagent_whose_model_is_down() -> None:
    primary, backup = down("sub-primary"), up("the facts", name="sub-backup")
    research = Agent(id="research-agent", description="Finds facts.", model=[primary, backup], retry_policy=FAST)
    boss = Agent(id="boss", model=up(delegate("research", "find"), "done", name="boss-model"), agents={"research": research})
    result = await boss.generate("go")
    assert result.text == "done"
    assert (len(primary.calls), len(backup.calls)) == (3, 1)
    assert result.delegations[0].text == "the facts"


async def test_the_compiled_graph_falls_back_too() -> None:
    primary, backup = down(), up("from the graph")
    graph = Agent(id="solo", model=[primary, backup], retry_policy=FAST).compile()
    out = await graph.ainvoke({"messages": [HumanMessage("hi")]})
    assert out["messages"][-1].text == "from the graph"
    assert out["messages"][-1].response_metadata["model_name"] == "backup"


async def test_a_later_model_answers_when_two_are_down() -> None:
    first, second, third = down("first"), down("second"), up("third time lucky", name="third")
    agent = Agent(id="solo", model=[first, second, third], retry_policy=None)
    assert (await agent.generate("hi")).text == "third time lucky"
    assert (len(first.calls), len(second.calls), len(third.calls)) == (1, 1, 1)  # no retries: the policy is None


# -- retries ------------------------------------------------------------------------


@pytest.mark.parametrize("retries", [0, 1, 4])
async def test_max_retries_says_how_often_a_model_is_retried(retries: int) -> None:
    primary, backup = down(), up("ok")
    agent = Agent(id="solo", model=[{"model": primary, "max_retries": retries}, backup], retry_policy=FAST)
    assert (await agent.generate("hi")).text == "ok"
    assert len(primary.calls) == retries + 1


async def test_an_error_that_is_not_transient_goes_to_the_next_model_at_once() -> None:
    primary, backup = down(error=ValueError("bad request")), up("ok")
    agent = Agent(id="solo", model=[{"model": primary, "max_retries": 3}, backup], retry_policy=FAST)
    assert (await agent.generate("hi")).text == "ok"
    assert len(primary.calls) == 1


async def test_when_every_model_fails_the_run_fails_once_without_retrying_the_list() -> None:
    primary, backup = down("primary"), down("backup", error=TimeoutError())
    agent = Agent(id="solo", model=[primary, {"model": backup, "max_retries": 1}], retry_policy=FAST)
    with pytest.raises(ModelCallError, match="AllModelsFailedError") as caught:
        await agent.generate("hi")
    assert (len(primary.calls), len(backup.calls)) == (3, 2)  # the supervisor node is not run again
    error = caught.value.original
    assert isinstance(error, AllModelsFailedError)
    assert str(error) == "every model failed: primary (ConnectionError, 3 attempts), backup (TimeoutError, 2 attempts)"
    assert isinstance(error.__cause__, TimeoutError)
    assert str(pickle.loads(pickle.dumps(error))) == str(error)  # its text only: the errors stay in this process


async def test_when_every_model_of_a_subagent_fails_its_delegation_fails_once() -> None:
    primary, backup = down("sub-primary"), down("sub-backup")
    research = Agent(id="research-agent", description="Finds facts.", model=[primary, backup], retry_policy=FAST)
    boss = Agent(id="boss", model=up(delegate("research", "find"), "went on", name="boss-model"), agents={"research": research})
    result = await boss.generate("go")
    assert result.text == "went on"  # the supervisor is told and goes on
    assert (len(primary.calls), len(backup.calls)) == (3, 3)  # the leaf's loop does not retry the list


def test_a_sync_call_falls_back_too() -> None:
    model = Agent(id="solo", model=[down(), up("sync answer")]).model
    assert isinstance(model, FallbackChatModel)
    assert model.retrying(None).invoke("hi").text == "sync answer"


# -- the answer names its model -------------------------------------------------------


async def test_usage_by_agent_names_the_model_that_answered() -> None:
    research = Agent(id="research-agent", description="Finds facts.", model=[down("sub-primary"), up("facts", name="sub-backup")], retry_policy=None)
    boss = Agent(id="boss", model=[down("boss-primary"), up(delegate("research", "find"), "done", name="boss-backup")], agents={"research": research}, retry_policy=None)
    events = await collect(AGUIAgent(boss, resource_id="u1"), make_input())
    finished = wire(events)[-1]
    by_agent = finished["metadata"]["supervisor_graph"]["usage_by_agent"]
    assert {path: [u["model"] for u in usage] for path, usage in by_agent.items()} == {
        "boss": ["boss-backup"],
        "boss/research-agent": ["sub-backup"],
    }
    assert {u["model"] for u in finished["usage"]} == {"boss-backup", "sub-backup"}


async def test_a_step_finish_names_the_model_that_answered() -> None:
    stream = await Agent(id="solo", model=[down(), up("hi")], retry_policy=None).stream("go")
    finishes = [c.payload["model"] async for c in stream.full_stream if c.type == "step-finish"]
    assert finishes == ["backup"]


# -- streams -------------------------------------------------------------------------


async def test_the_cut_off_model_streams_its_partial_text_on_its_own() -> None:
    """The control for the test below: without a fallback, the partial text reaches the
    stream before the run fails."""
    stream = await Agent(id="solo", model=CutOff(), retry_policy=None).stream("go")
    seen = [(chunk.type, chunk.payload.get("text")) async for chunk in stream.full_stream]
    assert ("text-delta", "PARTIAL ") in seen
    assert seen[-1][0] == "error"
    with pytest.raises(ModelCallError):
        await stream.result()


async def test_a_stream_shows_no_text_of_a_failed_attempt() -> None:
    agent = Agent(id="solo", model=[CutOff(), up("the whole answer")], retry_policy=None)
    stream = await agent.stream("go")
    text = [delta async for delta in stream.text_stream]
    assert "".join(text) == "the whole answer"
    assert (await stream.result()).text == "the whole answer"


async def test_an_agui_stream_shows_no_text_of_a_failed_attempt() -> None:
    research = Agent(id="research-agent", description="Finds facts.", model=[CutOff(), up("facts")], retry_policy=None)
    boss = Agent(id="boss", model=[CutOff(), up(delegate("research", "find"), "done")], agents={"research": research}, retry_policy=None)
    events = await collect(AGUIAgent(boss, resource_id="u1"), make_input())
    deltas = [e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT")]
    assert deltas and not any("PARTIAL" in d or "TEXT" in d for d in deltas)
    assert "".join(deltas).endswith("done")


# -- declaration ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "words"),
    [
        ([], "model=[] names no model"),
        ([ScriptedChatModel(), 42], "model[1] is int"),
        (["openai/gpt-5-mini", ["nested"]], "model[1] is list"),
        ([ScriptedChatModel(), "nowhere/some-model"], "model[1]: model 'nowhere/some-model' names unknown provider 'nowhere'"),
        ([{"model": "nowhere:x"}], "model[0]: model: model 'nowhere:x' names unknown provider"),
        ([{"model": 3}], "model[0]: model: must be a model string or a LangChain BaseChatModel; got int"),
        ([{"model": ScriptedChatModel(), "max_retries": -1}], "max_retries: Input should be greater than or equal to 0"),
        ([{"model": ScriptedChatModel(), "retries": 2}], "retries: Extra inputs are not permitted"),
        ([{"max_retries": 2}], "model: Field required"),
        ([lambda ctx: ScriptedChatModel()], "model[0] is function"),
    ],
)
def test_a_bad_list_is_refused_when_the_agent_is_declared(model: list[Any], words: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(words)):
        Agent(id="solo", model=model)


def test_a_list_of_one_model_is_that_model() -> None:
    model = ScriptedChatModel()
    assert Agent(id="solo", model=[model]).model is model
    assert Agent(id="solo", model=("openai/gpt-5-mini",)).model == "openai/gpt-5-mini"
    assert isinstance(Agent(id="solo", model=[{"model": model, "max_retries": 2}]).model, FallbackChatModel)


def test_an_agent_with_one_model_keeps_it_unwrapped() -> None:
    """Unused is free: no wrapper, nothing between the turn and the model."""
    model = ScriptedChatModel()
    assert build_spec(Agent(id="solo", model=model)).chat_model is model


# -- model strings --------------------------------------------------------------------


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(lambda body: f"{body['model']} answers") as fake:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        yield fake


async def test_a_model_string_answers_as_a_fallback(server: FakeOpenAI) -> None:
    agent = Agent(id="solo", model=[down(), "openai/local-model"], retry_policy=None)
    assert list(model_strings(agent)) == ["openai/local-model"]
    result = await agent.generate("hi")
    assert result.text == "local-model answers"
    assert result.messages[-1].response_metadata["model_name"] == "local-model"
    assert result.messages[-1].response_metadata["model_provider"] == "openai"
    assert result.usage.total_tokens == USAGE["total_tokens"]
    assert [r["model"] for r in server.requests] == ["local-model"]


async def test_a_fallback_model_string_needs_its_credentials_before_anything_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    primary = up("never asked")
    agent = Agent(id="solo", model=[primary, "openai/gpt-5-mini"])  # declared without credentials, as a string is
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        await agent.generate("hi")
    assert primary.calls == []


async def test_a_streaming_output_guard_reads_the_answer_of_the_model_that_answered() -> None:
    """The streaming guards read the model through `astream`: the fallback's answer, whole."""
    guard = pii(at="output", mode="streaming", window_tokens=8, overlap_tokens=2)
    agent = Agent(id="solo", model=[CutOff(), up("write to ann@example.com today")], guardrails=[guard], retry_policy=None)
    stream = await agent.stream("go")
    text = "".join([delta async for delta in stream.text_stream])
    assert "PARTIAL" not in text and "ann@example.com" not in text
    assert text == (await stream.result()).text
    assert text.startswith("write to ") and text.endswith(" today")


async def test_a_trace_shows_each_attempt_under_the_call() -> None:
    collector = RunCollectorCallbackHandler()
    model = FallbackChatModel(models=[{"model": down(), "max_retries": 1}, {"model": up("hi")}], retry_policy=FAST)
    answer = await model.ainvoke("go", {"callbacks": [collector]})
    assert answer.response_metadata["model_name"] == "backup"
    [call] = collector.traced_runs
    assert [(child.name, child.error is not None) for child in call.child_runs] == [
        ("ScriptedChatModel", True),
        ("ScriptedChatModel", True),
        ("ScriptedChatModel", False),
    ]
