"""Structured output (SPEC §28): a schema that shapes an agent's final answer only.

The agent still calls tools and delegates; its last turn is the object, got from the
model natively or through a `final_answer` tool (`output_schema.py`, which also holds
the schema's forms; its names are re-exported here, the capability's one entry).

The answer is validated here, by the capability's step; an invalid one goes back to the model with the errors
(`output_retries` times), after which the run ends `finish_reason "error"` with the
errors in the state, never with a silent `None`. What is stored is the JSON value (a
checkpoint must be JSON); `to_object` turns it into a model instance for the caller.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from supervisor_graph.nodes.options import capability_option
from supervisor_graph.nodes.state import FEEDBACK_MARK, run_start
from supervisor_graph.nodes.steps.output_schema import (
    FINAL_ANSWER_TOOL,
    OUTPUT_ANSWER_MARK,
    OUTPUT_RETRY_MARK,
    Invalid,
    OutputSchema,
    StructuredOutputError,
    final_value,
    output_schema_of,
    strict_tool,
    uses_native,
)
from supervisor_graph.nodes.steps.protocol import Answered, ModelRequest, Step
from supervisor_graph.nodes.text import text_of

if TYPE_CHECKING:
    from supervisor_graph.nodes.spec import AgentSpec

__all__ = [
    "CHECKS",
    "STRUCTURED_KEYS",
    "OUTPUT_ANSWER_MARK",
    "Invalid",
    "final_value",
    "ResponseFormat",
    "StructuredOutput",
    "declared_schema",
    "FINAL_ANSWER_TOOL",
    "OUTPUT_RETRY_MARK",
    "OutputSchema",
    "StructuredOutputError",
    "output_schema_of",
    "retries_used",
    "strict_tool",
    "uses_native",
]

log = logging.getLogger("supervisor_graph")

# `output_schema=` of a call and of a graph run's context, in any of the schema's forms
capability_option("output_schema", output_schema_of)


def retries_used(messages: Sequence[BaseMessage], start: int) -> int:
    """How many invalid answers this run (messages from `start`) has sent back."""
    return sum(1 for i in range(start, len(messages)) if OUTPUT_RETRY_MARK in messages[i].additional_kwargs)


@dataclass(slots=True)
class Settled:
    """What one answer turn becomes: the messages to store after it, and either the
    value, a retry, or the error that ends the run."""

    messages: list[BaseMessage]
    value: Any = None
    retry: bool = False
    error: StructuredOutputError | None = None


def settle(schema: OutputSchema, response: AIMessage, retries_left: bool) -> Settled | None:
    """The answer in `response` validated; None when the turn is not an answer (it calls
    tools other than `final_answer`: the loop goes on)."""
    finals = [c for c in response.tool_calls if c["name"] == FINAL_ANSWER_TOOL]
    if response.tool_calls and not finals:
        return None
    if finals and len(response.tool_calls) > 1:
        return None  # answered by `stray_final_answers`; the other calls run first
    if finals:
        call = finals[0]
        raw = json.dumps(call["args"], ensure_ascii=False)
        try:
            value = schema.validate(final_value(schema, call["args"]))
        except Invalid as exc:
            text = f"Invalid {schema.name}: {exc}. Call {FINAL_ANSWER_TOOL} again with corrected arguments."
            result = ToolMessage(content=text, tool_call_id=call["id"] or "", name=FINAL_ANSWER_TOOL, status="error")
            result.additional_kwargs[OUTPUT_RETRY_MARK] = True
            return _failed(schema, exc, raw, [result], retries_left)
        done = ToolMessage(content="Answer recorded.", tool_call_id=call["id"] or "", name=FINAL_ANSWER_TOOL)
        answer = AIMessage(content=schema.dumps(value), additional_kwargs={OUTPUT_ANSWER_MARK: True})
        return Settled([done, answer], value=value)
    raw = text_of(response)
    try:
        value = schema.parse_text(raw)
    except Invalid as exc:
        note = HumanMessage(
            content=f"Your answer does not match the {schema.name} schema: {exc}. Answer again with a valid "
            f"{schema.name} JSON object (through the {FINAL_ANSWER_TOOL} tool when you have it).",
            additional_kwargs={OUTPUT_RETRY_MARK: True, FEEDBACK_MARK: "structured_output"},
        )
        return _failed(schema, exc, raw, [note], retries_left)
    return Settled([], value=value)


def _failed(schema: OutputSchema, exc: Invalid, raw: str, messages: list[BaseMessage], retries_left: bool) -> Settled:
    if retries_left:
        return Settled(messages, retry=True)
    closing: list[BaseMessage] = [m for m in messages if isinstance(m, ToolMessage)]  # a call stays answered
    return Settled(closing, error=StructuredOutputError(schema.name, exc.errors, raw))


def stray_final_answers(response: AIMessage) -> list[ToolMessage]:
    """Error results for `final_answer` calls made beside other calls."""
    if len(response.tool_calls) < 2:
        return []
    return [
        ToolMessage(
            content=f"{FINAL_ANSWER_TOOL} ends your turn: call it alone, once the results of your other calls are back.",
            tool_call_id=call["id"] or "",
            name=FINAL_ANSWER_TOOL,
            status="error",
        )
        for call in response.tool_calls
        if call["name"] == FINAL_ANSWER_TOOL
    ]


class ResponseFormat(NamedTuple):
    """The shape this run's answers must take (`ModelRequest.response_format`) and how
    many invalid answers it sends back before the run ends with an error."""

    schema: OutputSchema
    retries: int


class StructuredOutput(Step):
    """Structured output as a step (SPEC §28): the schema an agent declares, and the
    check of every accepted answer against the run's shape (the run's own schema, else
    the declared one: `request.response_format`, which the turn binds the model to).
    Stray `final_answer` calls are answered; an answer is the run's value, is sent back
    while retries are left, or ends the run with an error. A run that gives a schema to
    an agent that declares none has this step added (`CHECKS`)."""

    name = "structured_output"

    def __init__(self, schema: OutputSchema | None = None) -> None:
        self.schema = schema

    async def aafter_answer(self, request: ModelRequest, response: Any) -> Answered | None:
        shape = request.response_format
        if shape is None:
            return None
        out = Answered(results=list(stray_final_answers(response)))
        messages = request.messages
        settled = settle(shape.schema, response, retries_used(messages, run_start(messages)) < shape.retries)
        if settled is None:  # tool calls go on
            return out
        out.results.extend(settled.messages)
        if settled.retry:
            out.again = True
        elif settled.error is not None:
            out.updates["structured_output_error"] = settled.error.to_dict()
            out.end = "error"
        else:
            out.updates["structured_response"] = settled.value
            out.end = "stop" if settled.messages else None  # a final answer call, answered; else the text is the JSON
        return out


CHECKS = StructuredOutput()
# the state keys an answer checked against its schema writes: its value, or why it has none
STRUCTURED_KEYS = frozenset({"structured_response", "structured_output_error"})


def declared_schema(spec: AgentSpec) -> OutputSchema | None:
    """The output schema the agent declares, if any."""
    step = spec.steps.find(StructuredOutput)
    return step.schema if step is not None else None
