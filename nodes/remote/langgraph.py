"""The remote subagent node (SPEC §21): a delegation to a graph on a LangGraph API server
(`langgraph dev`, Aegra, LangGraph Platform), driven with `langgraph_sdk`.

Each delegation gets one server thread, its id derived from the delegation (so the node,
run again on resume, finds it again): the prompt starts a run there, the remote answer's
tokens stream into the parent's stream as the subagent's chunks, and its last AI message
is the result. An interrupt on the remote thread becomes an `interrupt()` here, so the
parent pauses with it; the answer resumes the remote thread where it stopped. A
`RemoteAgent(resumable=False)` cannot be resumed: its interrupt fails the delegation.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass
from typing import Any

from langgraph.types import interrupt

from supervisor_graph.nodes.delegation.result import DelegationRecord
from supervisor_graph.nodes.errors import SupervisorGraphError
from supervisor_graph.nodes.observability.cost import ByModel, add_call, model_key
from supervisor_graph.nodes.observability.otel import traceparent_headers
from supervisor_graph.nodes.options import RunHandle
from supervisor_graph.nodes.remote.delegation import RemoteDelegation, RemoteEndpoint, remote_delegation_node
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import zero_usage
from supervisor_graph.nodes.text import text_of_content

__all__ = ["RemoteNotResumableError", "RemoteSpec", "make_remote_node", "remote_thread_id"]

# the stream modes a delegation reads: tokens (text), values (the result)
_MODES = ["messages-tuple", "values"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteSpec(RemoteEndpoint):
    """What the node needs of a `RemoteAgent`."""

    graph_id: str
    resumable: bool = True

    def client(self) -> Any:
        from langgraph_sdk import get_client

        return get_client(
            url=self.url,
            headers=dict(self.headers) or None,
            api_key=None,
            timeout=(self.connect_timeout, self.timeout, self.timeout, self.connect_timeout),
        )


class RemoteNotResumableError(SupervisorGraphError):
    """A `RemoteAgent(resumable=False)` would have to resume its remote thread: an answer
    to one of its pauses is refused before anything is sent to its server (AG-UI code
    `REMOTE_NOT_RESUMABLE`), and an interrupt of its remote run fails the delegation."""

    code = "REMOTE_NOT_RESUMABLE"


def remote_thread_id(parent_thread: Any, namespace: str, tool_call_id: str) -> str:
    """The server thread of one delegation (a UUID, as servers want)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"supervisor-graph:{parent_thread}|{namespace}|{tool_call_id}"))


def _add_usage(total: dict[str, int], message: dict[str, Any]) -> None:
    usage = message.get("usage_metadata") or {}
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        total[key] += int(usage.get(key) or 0)


def _outcome(values: dict[str, Any], record: DelegationRecord) -> None:
    messages = [m for m in values.get("messages") or [] if isinstance(m, dict)]
    record.usage = zero_usage()
    by_model: ByModel = {}  # the same calls by the model that answered: priced when read (SPEC §33)
    last_ai = None
    for message in messages:
        if message.get("type") in ("ai", "AIMessage", "AIMessageChunk"):
            _add_usage(record.usage, message)
            if message.get("usage_metadata"):
                add_call(by_model, model_key(message), message["usage_metadata"])
            last_ai = message
    record.usage_by_model = {record.agent_id: by_model} if by_model else {}
    record.text = text_of_content(last_ai.get("content")) if last_ai is not None else ""
    record.finish_reason = str(values.get("finish_reason") or "stop")


def _local_request(
    item: dict[str, Any], spec: RemoteSpec, handle: RunHandle, namespace: str, thread_id: str
) -> dict[str, Any]:
    """A remote interrupt as this graph's own pause (what the parent's caller answers)."""
    value = item.get("value")
    ours = value if isinstance(value, dict) and value.get("kind") in ("approval", "suspend") else None
    return {
        "kind": ours["kind"] if ours else "approval",
        "tool_call_id": (ours or {}).get("tool_call_id") or item.get("id"),
        "tool_name": (ours or {}).get("tool_name") or spec.graph_id,
        "args": (ours or {}).get("args") or {},
        "agent_path": [*handle.agent_path, spec.agent_id],
        "run_id": handle.run_id,
        "namespace": namespace,
        "payload": value,
        "remote": {"url": spec.url, "thread_id": thread_id, "interrupt_id": item.get("id")},
    }


def make_remote_node(parent: AgentSpec, key: str, spec: RemoteSpec) -> Any:
    async def exchange(delegation: RemoteDelegation) -> None:
        record, thread_id = delegation.record, str(delegation.record.sub_agent_thread_id)
        context = delegation.request_context()
        context["parent_messages"] = await delegation.parent_messages()
        client = spec.client()
        await client.threads.create(
            thread_id=thread_id, if_exists="do_nothing", metadata={"parent_agent": delegation.handle.agent_path[-1]}
        )
        state = await client.threads.get_state(thread_id)
        started = bool((state.get("values") or {}).get("messages")) if isinstance(state.get("values"), dict) else False
        run_input: dict[str, Any] = {
            "input": {"messages": [{"role": "user", "content": delegation.prompt}]},
            "context": context,
        }
        while True:
            if not started or run_input.get("command") is not None:
                await _stream(client, spec, thread_id, run_input, delegation, traceparent_headers(delegation.config))
                started = True
                state = await client.threads.get_state(thread_id)
            waiting = state.get("interrupts") or []
            if not waiting:
                break
            if not spec.resumable:  # nothing could answer it: the delegation fails, the parent goes on
                raise RemoteNotResumableError(
                    f"the remote graph {spec.graph_id!r} stopped on an interrupt, and RemoteAgent(resumable=False) "
                    "cannot resume it"
                )
            answers = {}
            for item in waiting:  # each pauses the parent in turn; answered ones return here
                answers[item.get("id")] = interrupt(
                    _local_request(item, spec, delegation.handle, delegation.namespace, thread_id)
                )
            run_input = {"command": {"resume": answers}}
        _outcome(state.get("values") or {}, record)

    return remote_delegation_node(
        parent,
        key,
        spec.agent_id,
        thread_of=remote_thread_id,
        remote={"url": spec.url, "graph_id": spec.graph_id},
        exchange=exchange,
        protocol="remote",
    )


async def _stream(
    client: Any,
    spec: RemoteSpec,
    thread_id: str,
    run_input: dict[str, Any],
    delegation: RemoteDelegation,
    headers: dict[str, str],
) -> None:
    """One remote run, its tokens streamed as the subagent's; cancelled with the run.
    `headers`: the trace context (`traceparent`) the remote server continues."""
    created: list[str] = []
    try:
        async for part in client.runs.stream(
            thread_id,
            spec.graph_id,
            stream_mode=_MODES,
            on_run_created=lambda meta: created.append(str(meta["run_id"])),
            headers=headers or None,
            **run_input,
        ):
            if part.event == "error":
                raise RuntimeError(f"the remote run failed: {str(part.data)[:200]}")
            if (
                delegation.emit.active
                and part.event == "messages"
                and isinstance(part.data, list)
                and len(part.data) == 2
            ):
                chunk, meta = part.data
                if "|" in str((meta or {}).get("langgraph_checkpoint_ns", "")):
                    continue  # the remote's own subagents: not this delegation's answer
                if isinstance(chunk, dict) and chunk.get("type") in ("AIMessageChunk", "ai"):
                    text = text_of_content(chunk.get("content"))
                    if text:
                        delegation.text_delta(text, chunk.get("id"))
    except asyncio.CancelledError:
        if created:  # the run was aborted: stop the remote run too
            with contextlib.suppress(Exception):
                await asyncio.shield(client.runs.cancel(thread_id, created[-1]))
        raise
