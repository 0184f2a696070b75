"""Stream events nodes write with LangGraph's stream writer (`stream_mode="custom"`).

Each event is a plain dict `{"type", "payload", "agent_path", "run_id"}`; the run
facade turns them into typed chunks. A run whose caller reads no events (`generate()`)
says so in its run handle, and `Emitter.active` lets nodes skip building payloads at
all; graphs driven directly (Studio, `astream`) always emit.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import StreamWriter

from supervisor_graph.nodes.options import RunHandle

__all__ = ["EVENT_KEY", "Emitter"]

# Key that marks a custom stream item as one of ours (other nodes of an embedding app
# may write custom items too).
EVENT_KEY = "supervisor_graph"


class Emitter:
    __slots__ = ("writer", "agent_path", "run_id", "active", "namespace")

    def __init__(self, runtime: Runtime[Any] | None, handle: RunHandle, namespace: str | None = None) -> None:
        self.writer: StreamWriter | None = runtime.stream_writer if runtime is not None else None
        self.agent_path = handle.agent_path
        self.run_id = handle.run_id
        # the namespace a chunk names when it is not the writing graph's (a subagent run
        # inside its parent's node)
        self.namespace = namespace
        # `generate()` reads no events: nodes then skip building their payloads at all
        self.active = handle.stream_events and self.writer is not None

    def __call__(self, type_: str, payload: dict[str, Any] | None = None) -> None:
        if self.active:
            self.writer(  # type: ignore[misc]
                {
                    EVENT_KEY: True,
                    "type": type_,
                    "payload": payload or {},
                    "agent_path": self.agent_path,
                    "run_id": self.run_id,
                    **({"namespace": self.namespace} if self.namespace is not None else {}),
                }
            )
