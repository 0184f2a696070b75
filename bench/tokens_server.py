"""The recording fake OpenAI chat-completions server of `python -m bench tokens` (issue 51).

One server on 127.0.0.1 (a random port) answers every contender's real client: it keeps
each request's JSON body and answers from one script, the same for every contender. It
tells the agents apart by their system prompt (the supervisor, `research`, `writing`),
and the supervisor's tools by their names (`agent-research`, `research`,
`transfer_to_research` ... all contain the key), filling each tool's required string
arguments with the delegation prompt (`prompt`, `input`; a handoff takes none). So every
contender gets the same delegation prompts and the same subagent answers, whatever its
tool schema looks like.

The script, per user turn "Write a short brief about <topic>.": the supervisor asks
`research` for the facts, then `writing` for the brief (with the facts in its prompt),
then answers with the brief; each subagent answers once, from the topic.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "AGENTS",
    "DESCRIPTIONS",
    "MODEL",
    "RESEARCH",
    "SUPERVISOR",
    "TOPICS",
    "WRITING",
    "RecordingServer",
    "agent_of",
    "user_message",
]

MODEL = "gpt-4o-mini"  # an o200k_base model: the encoding the counts use
SUPERVISOR = (
    "You lead a small team that writes short briefs. Send the research part of a request to the "
    "research subagent and the writing part to the writing subagent, one at a time, then answer "
    "the user with the brief."
)
RESEARCH = (
    "You are a research assistant. Find the key facts on the topic you are given and return them "
    "as a short numbered list, most important first."
)
WRITING = "You are a writer. Turn the notes you are given into one short, clear paragraph for a general reader."
AGENTS = {"supervisor": SUPERVISOR, "research": RESEARCH, "writing": WRITING}
DESCRIPTIONS = {
    "research": "Finds the key facts on a topic and returns them as a short list.",
    "writing": "Writes a short brief from notes.",
}
TOPICS = (
    "solar power in cities", "the history of the bicycle", "coral reef bleaching", "how vaccines are tested",
    "the printing press", "urban beekeeping", "tidal energy", "the first transatlantic cable",
    "desert agriculture", "how lighthouses work", "electric buses", "the origins of coffee",
    "volcanic soils", "paper recycling", "the longitude problem", "heat pumps",
    "night trains in Europe", "the invention of the zipper", "rainwater harvesting", "public libraries",
)  # fmt: skip
_TOPIC = re.compile(r"about (.+?)(?:\.| from these notes)")


def user_message(turn: int) -> str:
    """The user's message on `turn` (0-based) of a conversation."""
    return f"Write a short brief about {TOPICS[turn % len(TOPICS)]}."


def research_prompt(topic: str) -> str:
    return f"Find the key facts about {topic}."


def research_answer(topic: str) -> str:
    return (
        f"Key facts about {topic}:\n"
        f"1. {topic.capitalize()} has a long record of use and study, with clear gains where it is done well.\n"
        "2. Costs have fallen over the last decade, while the main limits are local conditions and upkeep.\n"
        "3. Experts agree on the basics but disagree on how fast it should grow."
    )


def writing_prompt(topic: str, notes: str) -> str:
    return f"Write a short brief about {topic} from these notes:\n{notes}"


def writing_answer(topic: str) -> str:
    return (
        f"{topic.capitalize()} is better understood than most people think. It has been used and studied for a "
        "long time, and where it is done well the gains are clear. Costs have come down in recent years; what "
        "holds it back now is mostly local conditions and the work of keeping it running. Experts agree on the "
        "basics, and argue mainly about how quickly it should grow."
    )


def agent_of(body: dict[str, Any]) -> str:
    """Which agent sent a request: the one whose instructions its system prompt holds."""
    system = " ".join(
        _text(m.get("content")) for m in body.get("messages", []) if m.get("role") in ("system", "developer")
    )
    for name, instructions in AGENTS.items():
        if instructions in system:
            return name
    raise ValueError(f"a request from no known agent (system prompt {system[:80]!r})")


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _topic(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            found = _TOPIC.search(_text(message.get("content")))
            if found:
                return found.group(1)
    raise ValueError("no topic in the request's user messages")


def _this_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return messages[last + 1 :]


def _tool_call(tool: dict[str, Any], prompt: str, call_id: str) -> dict[str, Any]:
    schema = tool["function"].get("parameters") or {}
    properties = schema.get("properties", {})
    args = {
        name: prompt for name in schema.get("required", []) if properties.get(name, {}).get("type", "string") == "string"
    }
    return {"id": call_id, "type": "function", "function": {"name": tool["function"]["name"], "arguments": json.dumps(args)}}


def _supervisor_reply(body: dict[str, Any], call_id: str) -> dict[str, Any]:
    messages = body["messages"]
    topic = _topic(messages)
    called = [c["function"]["name"] for m in _this_turn(messages) for c in m.get("tool_calls") or []]
    for key, prompt in (("research", research_prompt(topic)), ("writing", writing_prompt(topic, research_answer(topic)))):
        if not any(key in name for name in called):
            tool = next(t for t in body.get("tools", []) if key in t["function"]["name"])
            return {"role": "assistant", "content": None, "tool_calls": [_tool_call(tool, prompt, call_id)]}
    return {"role": "assistant", "content": writing_answer(topic)}


def reply(body: dict[str, Any], call_id: str) -> dict[str, Any]:
    """The scripted assistant message for a request."""
    agent = agent_of(body)
    if agent == "supervisor":
        return _supervisor_reply(body, call_id)
    topic = _topic(body["messages"])
    return {"role": "assistant", "content": research_answer(topic) if agent == "research" else writing_answer(topic)}


class RecordingServer:
    """The fake server: `start()`, `url` (the client's base_url), `requests` (each body),
    `reset()` between contenders (the tool-call ids start again, so they are the same for all)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._ids = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="tokens-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> RecordingServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._ids = 0

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            self._ids += 1
            n = self._ids
        message = reply(body, f"call_{n:04d}")
        return {
            "id": f"chatcmpl-{n:04d}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model", MODEL),
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }


def _sse(completion: dict[str, Any]) -> bytes:
    """The completion as a stream: one delta with the whole message, the finish, the usage."""
    choice = completion["choices"][0]
    message = dict(choice["message"])
    for i, call in enumerate(message.get("tool_calls") or []):
        call["index"] = i
    head = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    chunks = [
        head | {"choices": [{"index": 0, "delta": message, "finish_reason": None}]},
        head | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        head | {"choices": [], "usage": completion["usage"]},
    ]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def _handler(server: RecordingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real endpoint
        disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart (delayed ACK)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if not self.path.endswith("/chat/completions"):
                return self._send(404, b'{"error": {"message": "not found"}}', "application/json")
            try:
                completion = server.answer(body)
            except Exception as exc:  # a script error shows in the client's error, not a hung call
                return self._send(400, json.dumps({"error": {"message": str(exc)}}).encode(), "application/json")
            if body.get("stream"):
                return self._send(200, _sse(completion), "text/event-stream")
            self._send(200, json.dumps(completion).encode(), "application/json")

        def _send(self, status: int, data: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
