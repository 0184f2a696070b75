"""Stream events nodes write with LangGraph's stream writer (`stream_mode="custom"`).

Each event is a plain dict `{"type", "payload", "agent_path", "run_id"}`; the run
facade turns them into typed chunks. When nobody streams custom events LangGraph hands
nodes a no-op writer, and `Emitter.active` lets nodes skip building payloads at all.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import StreamWriter

__all__ = ["EVENT_KEY", "Emitter"]

# Key that marks a custom stream item as one of ours (other nodes of an embedding app
# may write custom items too).
EVENT_KEY = "supervisor_graph"


def _no_op(_: Any) -> None:
    return None


class Emitter:
    __slots__ = ("writer", "agent_path", "run_id", "active")

    def __init__(self, runtime: Runtime[Any] | None, agent_path: tuple[str, ...], run_id: str) -> None:
        writer: StreamWriter = runtime.stream_writer if runtime is not None else _no_op
        self.writer = writer
        self.agent_path = agent_path
        self.run_id = run_id
        self.active = getattr(writer, "__name__", "") != "_no_op_stream_writer" and writer is not _no_op

    def __call__(self, type_: str, payload: dict[str, Any] | None = None) -> None:
        if self.active:
            self.writer(
                {
                    EVENT_KEY: True,
                    "type": type_,
                    "payload": payload or {},
                    "agent_path": self.agent_path,
                    "run_id": self.run_id,
                }
            )
