"""Reasoning (with encrypted values both ways) and content parts (AGUI.md "Text,
reasoning, tools")."""

from __future__ import annotations

import json

from ag_ui.core import (
    AssistantMessage,
    DataSource,
    DocumentPart,
    FileSource,
    ImagePart,
    ReasoningMessage,
    TextPart,
    UrlSource,
    UserMessage,
)
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.agui.content import parts_to_blocks, result_content
from supervisor_graph.testing import ScriptedChatModel
from tests.agui.conftest import (
    AGUIAgent,
    Amount,
    collect,
    make_input,
    of_type,
    tool_call,
    types,
    wire,
)


def thinking_reply() -> AIMessage:
    return AIMessage(
        content=[
            {"type": "thinking", "thinking": "Weighing the options.", "signature": "sig-abc"},
            {"type": "redacted_thinking", "data": "opaque-blob"},
            {"type": "text", "text": "The answer is 42."},
        ]
    )


async def test_reasoning_streams_with_its_encrypted_value() -> None:
    model = ScriptedChatModel(responses=[thinking_reply()], model_name="claude-x", provider="anthropic")
    bridge = AGUIAgent(Agent(id="solo", model=model, memory=Memory()), resource_id="u1")
    events = await collect(bridge, make_input("t-r"))
    kinds = [k for i, k in enumerate(types(events)) if i == 0 or k != types(events)[i - 1]]  # text streams word by word
    assert kinds == [
        "RUN_STARTED",
        "STEP_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "REASONING_ENCRYPTED_VALUE",
        "REASONING_END",
        "STEP_FINISHED",
        "RUN_FINISHED",
    ]
    content = of_type(events, "REASONING_MESSAGE_CONTENT")[0]
    assert content["delta"] == "Weighing the options."
    encrypted = of_type(events, "REASONING_ENCRYPTED_VALUE")[0]
    assert encrypted["subtype"] == "message" and encrypted["entityId"] == content["messageId"]
    assert "sig-abc" in encrypted["encryptedValue"] and "opaque-blob" in encrypted["encryptedValue"]
    assert wire(events)[-1]["usage"] == [
        {"provider": "anthropic", "model": "claude-x", "inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
    ]

    # the client sends the reasoning back: the model gets the artefacts with its message
    text_id = of_type(events, "TEXT_MESSAGE_START")[0]["messageId"]
    history = [
        UserMessage(id="u-1", content="question"),
        ReasoningMessage(id=content["messageId"], content="Weighing the options.", encrypted_value=encrypted["encryptedValue"]),
        AssistantMessage(id=text_id, content="The answer is 42."),
        UserMessage(id="u-2", content="and then?"),
    ]
    model.responses.append("Then 43.")
    fresh = Agent(id="solo", model=model, memory=Memory())  # a new thread store: all of it is input
    again = await collect(AGUIAgent(fresh, resource_id="u1"), make_input("t-r2", messages=history))
    assert wire(again)[-1]["outcome"] == {"type": "success"}
    [ai] = [m for m in model.calls[-1] if isinstance(m, AIMessage)]
    blocks = [b for b in ai.content if isinstance(b, dict)]
    assert {"type": "redacted_thinking", "data": "opaque-blob"}.items() <= {**blocks[1]}.items()
    assert blocks[0]["signature"] == "sig-abc" and blocks[0]["thinking"] == "Weighing the options."
    assert blocks[-1] == {"type": "text", "text": "The answer is 42."}


def test_inbound_parts_become_content_blocks() -> None:
    parts = [
        TextPart(text="look"),
        ImagePart(source=DataSource(value="aGVsbG8=", mime_type="image/png")),
        ImagePart(source=UrlSource(value="https://example.com/cat.jpg")),
        DocumentPart(source=UrlSource(value="https://example.com/a.pdf", mime_type="application/pdf")),
        DocumentPart(source=UrlSource(value="data:application/pdf;base64,JVBERi0=")),
        ImagePart(source=FileSource(value="file-123")),
        DocumentPart(source=FileSource(value="file-456")),
    ]
    assert parts_to_blocks(parts) == [
        {"type": "text", "text": "look"},
        {"type": "image", "base64": "aGVsbG8=", "mime_type": "image/png"},
        {"type": "image", "url": "https://example.com/cat.jpg"},
        {"type": "file", "url": "https://example.com/a.pdf", "mime_type": "application/pdf"},
        {"type": "file", "base64": "JVBERi0=", "mime_type": "application/pdf"},
        {"type": "image", "file_id": "file-123"},
        {"type": "file", "file_id": "file-456"},
    ]


def test_outbound_results_are_strings_unless_parts_are_allowed() -> None:
    blocks = [{"type": "text", "text": "chart:"}, {"type": "image", "base64": "aGk=", "mime_type": "image/png"}]
    assert result_content("plain", parts=True) == "plain"
    assert result_content([{"type": "text", "text": "a"}, "b"], parts=True) == "ab"
    assert json.loads(result_content(blocks, parts=False)) == blocks
    converted = result_content(blocks, parts=True)
    assert [p.model_dump(mode="json", by_alias=True) for p in converted] == [
        {"type": "text", "text": "chart:"},
        {"type": "image", "source": {"type": "data", "value": "aGk=", "mimeType": "image/png"}},
    ]


async def test_a_tool_with_image_output_sends_parts_only_to_protocol_1_0_clients() -> None:
    def execute(args: Amount) -> list:
        return [{"type": "text", "text": f"chart of {args.amount}"}, {"type": "image", "base64": "aGk=", "mime_type": "image/png"}]

    chart = create_tool(id="chart", description="Draw a chart.", input_schema=Amount, execute=execute)
    model = ScriptedChatModel(policy=lambda m: "drawn" if isinstance(m[-1], ToolMessage) else tool_call("chart", {"amount": 3}))
    bridge = AGUIAgent(Agent(id="solo", model=model, tools=[chart], memory=Memory()), resource_id="u1")
    old = await collect(bridge, make_input("t-old"))
    assert isinstance(of_type(old, "TOOL_CALL_RESULT")[0]["content"], str)
    new = await collect(bridge, make_input("t-new", protocol_version="1.0"), validate=False)  # ag-ui-validate 0.4 rejects parts
    content = of_type(new, "TOOL_CALL_RESULT")[0]["content"]
    assert [p["type"] for p in content] == ["text", "image"]


async def test_user_content_parts_reach_the_model() -> None:
    model = ScriptedChatModel(responses=["nice picture"])
    bridge = AGUIAgent(Agent(id="solo", model=model, memory=Memory()), resource_id="u1")
    message = UserMessage(id="u-img", content=[TextPart(text="what is this?"), ImagePart(source=DataSource(value="aGk=", mime_type="image/png"))])
    await collect(bridge, make_input("t-img", messages=[message]))
    [human] = [m for m in model.calls[0] if isinstance(m, HumanMessage)]
    assert human.content == [{"type": "text", "text": "what is this?"}, {"type": "image", "base64": "aGk=", "mime_type": "image/png"}]
