"""Who a run belongs to, for traces (SPEC §24): the metadata every agent's runs carry,
the library's events as LangChain custom events, and the callbacks a background task
keeps when it leaves the run that started it.

Identity travels in the run's metadata, which LangChain hands down to every child run:
set where an agent's run begins (the compiled graph's config, a delegation's config), it
reaches the agent's node, model and tool runs without any node setting it again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.callbacks.manager import adispatch_custom_event
from langchain_core.runnables import RunnableConfig

__all__ = [
    "AGENT_ID_KEY",
    "AGENT_NAME_KEY",
    "AGENT_PATH_KEY_META",
    "TRACING_KEY",
    "agent_metadata",
    "announce",
    "detached_config",
    "parent_run_of",
]

AGENT_ID_KEY = "agent_id"
AGENT_NAME_KEY = "agent_name"
AGENT_PATH_KEY_META = "agent_path"
# False on the runs of an `Agent(tracing=False)`: the OpenTelemetry spans skip them
TRACING_KEY = "supervisor_graph_tracing"

# LangGraph's and LangChain's own stream handlers: they feed the stream of the run that
# owns them, so neither wants custom events nor may outlive that run
_INTERNAL = ("langgraph.", "langchain_core.tracers.event_stream", "langchain_core.tracers.log_stream")


def agent_metadata(agent_id: str, agent_name: str | None, agent_path: Sequence[str], tracing: bool = True) -> dict[str, Any]:
    """The metadata that names an agent on its runs (`agent_path`: ids from the top agent
    down, joined by `/`)."""
    metadata: dict[str, Any] = {
        AGENT_ID_KEY: agent_id,
        AGENT_NAME_KEY: agent_name or agent_id,
        AGENT_PATH_KEY_META: "/".join(agent_path),
    }
    if not tracing:
        metadata[TRACING_KEY] = False
    return metadata


def _wants_events(config: RunnableConfig) -> bool:
    callbacks = config.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        # astream_events' handler is one of LangChain's own: it is the reader here
        return any(not h.ignore_custom_event and not type(h).__module__.startswith("langgraph.") for h in callbacks.handlers)
    return False


async def announce(config: RunnableConfig, type_: str, payload: dict[str, Any], agent_path: Sequence[str]) -> None:
    """`type_` as a LangChain custom event (`on_custom_event` in `astream_events`), when a
    callback handler listens; a run nobody listens to pays one check."""
    if not _wants_events(config):
        return
    await adispatch_custom_event(type_, {**payload, "agent_path": "/".join(agent_path)}, config=config)


def detached_config(config: RunnableConfig, parent_run_id: Any) -> RunnableConfig:
    """The config of a background task's runs: the caller's tracers and callbacks and
    metadata, but its own trace root, linked to the run that started it by
    `parent_run_id` in its metadata (its runs end after that run has ended)."""
    callbacks = config.get("callbacks")
    handlers: list[BaseCallbackHandler] = []
    if isinstance(callbacks, BaseCallbackManager):
        handlers = list(callbacks.inheritable_handlers)
    elif isinstance(callbacks, list):
        handlers = list(callbacks)
    detached: RunnableConfig = {
        "metadata": {**(config.get("metadata") or {}), "parent_run_id": str(parent_run_id) if parent_run_id else ""},
        "callbacks": [h for h in handlers if not type(h).__module__.startswith(_INTERNAL)],
    }
    for key in ("tags", "recursion_limit", "max_concurrency"):
        if key in config:
            detached[key] = config[key]  # type: ignore[literal-required]
    return detached


def parent_run_of(config: RunnableConfig) -> Any:
    """The id of the LangChain run a node's config belongs to (None outside one)."""
    callbacks = config.get("callbacks")
    return callbacks.parent_run_id if isinstance(callbacks, BaseCallbackManager) else None
