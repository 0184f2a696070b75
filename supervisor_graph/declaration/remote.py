"""`RemoteAgent`: a subagent served by a LangGraph API server (SPEC §21), and
`RemoteSubagent`, what every subagent run on a server of its own is (`A2AAgent` too)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from supervisor_graph.nodes.options import RunOptions
from supervisor_graph.nodes.remote.langgraph import RemoteSpec

__all__ = ["RemoteAgent", "RemoteSubagent"]


class RemoteSubagent(BaseModel):
    """A subagent that runs on a server of its own (`RemoteAgent`, `A2AAgent`): it has
    no tools, model, memory or subagents here, and runs in no background task; code
    walking an agent tree tells it from a local `Agent` with `isinstance(sub, RemoteSubagent)`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # what serves it, as its url's error names it
    served_by: ClassVar[str] = "a server"

    url: str = Field(min_length=1)
    id: str = ""
    description: str = Field(min_length=1)
    headers: dict[str, str] | None = None
    timeout: float = Field(default=300.0, gt=0)
    connect_timeout: float = Field(default=10.0, gt=0)

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"url must be an http(s) URL of {cls.served_by}, not {value!r}")
        return value.rstrip("/")

    # what code walking an agent tree reads of a subagent: a remote one has none of these
    name: None = None

    @property
    def agents(self) -> dict[str, Any]:
        return {}

    @property
    def tools(self) -> dict[str, Any]:
        return {}

    @property
    def model(self) -> None:
        return None

    @property
    def memory(self) -> None:
        return None

    @property
    def working_memory(self) -> None:
        return None

    @property
    def effective_working_memory(self) -> None:
        return None

    @property
    def defaults(self) -> RunOptions:
        return RunOptions()

    def agents_along(self, agent_path: Any) -> list[Any]:
        return [self]

    def spec(self) -> Any:  # what its node needs (each kind's own)
        raise NotImplementedError


class RemoteAgent(RemoteSubagent):
    """A graph on `langgraph dev`, Aegra or LangGraph Platform, used as a subagent:
    `agents={"research": RemoteAgent(url="http://127.0.0.1:2024", graph_id="research",
    description="Finds facts.")}`. Each delegation runs on a server thread of its own.

    Args:
        url: the server's base URL.
        graph_id: the graph (assistant) id the server serves.
        description: what the supervisor model reads about it.
        headers: sent with every request (for example an auth header).
        id: its agent id (default: `graph_id`).
        timeout: seconds an HTTP request may take (a streamed run counts as one);
            `connect_timeout`: seconds to connect.
        resumable: the remote keeps its threads (every LangGraph API server does), so its
            interrupts can be answered; `False` for a server that cannot resume: as a
            subagent, an interrupt of its remote run fails the delegation (the parent
            does not pause on it), and served with `AGUIAgent` its capabilities report no
            interrupts; answering one of its pauses (a resume over AG-UI, or
            `approve_tool_call` / `resume_generate` on a pause stored before the
            declaration changed) is refused with `RemoteNotResumableError` (AG-UI code
            `REMOTE_NOT_RESUMABLE`) before anything is sent to the server.
    """

    served_by: ClassVar[str] = "a LangGraph API server"

    graph_id: str = Field(min_length=1)
    resumable: bool = True

    def model_post_init(self, _context: Any) -> None:
        if not self.id:
            object.__setattr__(self, "id", self.graph_id)

    def spec(self) -> RemoteSpec:
        return RemoteSpec(
            agent_id=self.id,
            url=self.url,
            graph_id=self.graph_id,
            headers=tuple(sorted((self.headers or {}).items())),
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            resumable=self.resumable,
        )
