"""`A2AAgent`: a subagent served by any A2A server (SPEC §27), driven with `a2a-sdk`."""

from __future__ import annotations

import re
from typing import Any, ClassVar
from urllib.parse import urlsplit

from supervisor_graph.declaration.remote import RemoteSubagent
from supervisor_graph.nodes.remote.a2a import A2ASpec

__all__ = ["A2AAgent"]


class A2AAgent(RemoteSubagent):
    """An agent served over the A2A protocol (any server with an agent card at
    `/.well-known/agent-card.json`, such as `supervisor-graph serve --a2a`), used as a
    subagent: `agents={"travel": A2AAgent(url="http://127.0.0.1:9999", description="Books
    trips.")}`. Needs `pip install "supervisor-graph[a2a]"`.

    A delegation sends the prompt as one A2A message (streamed when the agent's card says
    it streams); the agent's text streams into the parent's stream as this subagent's
    chunks and its final text is the delegation's result. A task that stops in
    `input-required` becomes a pending approval of the parent; the answer (`{"approved":
    true}` or `false`) goes back to the same task as a data part (with a text part,
    `approved` or `declined`). `abort_signal` cancels the remote task; an unreachable agent
    is a failed delegation with a generic message.

    Args:
        url: the agent's base URL (where its card is served).
        description: what the supervisor model reads about it.
        headers: sent with every request (for example an auth header).
        id: its agent id (default: `a2a-` and the URL's host and port).
        timeout: seconds an HTTP request may take (a streamed answer counts as one);
            `connect_timeout`: seconds to connect.
        streaming: `False` sends `message/send` even when the card offers streaming.
    """

    served_by: ClassVar[str] = "an A2A agent"

    streaming: bool = True

    def model_post_init(self, _context: Any) -> None:
        if not self.id:
            parts = urlsplit(self.url)
            slug = re.sub(r"[^A-Za-z0-9_-]+", "-", f"{parts.hostname or 'agent'}-{parts.port or ''}{parts.path}").strip(
                "-"
            )
            object.__setattr__(self, "id", f"a2a-{slug}")

    def spec(self) -> A2ASpec:
        return A2ASpec(
            agent_id=self.id,
            url=self.url,
            headers=tuple(sorted((self.headers or {}).items())),
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            streaming=self.streaming,
        )
