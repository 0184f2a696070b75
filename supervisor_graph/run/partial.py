"""Partial objects of an answer as it streams (SPEC §28, `AgentStream.object_stream`).

The answer's JSON arrives as text deltas (native structured output) or as the argument
deltas of the `final_answer` call; each delta that changes what the JSON so far parses
to yields the object so far.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.utils.json import parse_partial_json
from pydantic import BaseModel

from supervisor_graph.nodes.steps.structured_output import FINAL_ANSWER_TOOL, OutputSchema, final_value
from supervisor_graph.nodes.text import text_of

__all__ = ["PartialObjects", "json_value"]


def json_value(value: Any) -> Any:
    """A model instance as its JSON value (stream payloads are plain JSON)."""
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


class PartialObjects:
    """The JSON so far of each message of the top agent, and the object it parses to."""

    def __init__(self, schema: OutputSchema) -> None:
        self.schema = schema
        self.text: dict[str, str] = {}
        self.args: dict[tuple[str, int], str] = {}
        self.final: dict[str, int] = {}  # message id -> index of its final_answer call
        self.last: Any = None

    def feed(self, message: AIMessage) -> Any:
        """The new partial object after `message` (a chunk or a whole message), or None."""
        mid = message.id or ""
        if isinstance(message, AIMessageChunk):
            self.text[mid] = self.text.get(mid, "") + text_of(message)
            for part in message.tool_call_chunks:
                at = part.get("index") or 0
                if part.get("name") == FINAL_ANSWER_TOOL:
                    self.final[mid] = at
                self.args[(mid, at)] = self.args.get((mid, at), "") + (part.get("args") or "")
        else:
            self.text[mid] = text_of(message)
            for position, call in enumerate(message.tool_calls):
                if call["name"] == FINAL_ANSWER_TOOL:
                    self.final[mid] = position
                    self.args[(mid, position)] = OutputSchema.dumps(call["args"])
        index = self.final.get(mid)
        raw = self.args.get((mid, index), "") if index is not None else self.text.get(mid, "")
        raw = raw.strip()
        if not raw.startswith(("{", "[")):
            return None
        try:
            value = parse_partial_json(raw)
        except ValueError:
            return None
        if index is not None and isinstance(value, dict):
            value = final_value(self.schema, value)
        if value is None or value == self.last:
            return None
        self.last = value
        return value
