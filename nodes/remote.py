"""The remote subagent node (SPEC §21): a delegation to a graph on a LangGraph API server
(`langgraph dev`, Aegra, LangGraph Platform), driven with `langgraph_sdk`.

Each delegation gets one server thread, its id derived from the delegation (so the node,
run again on resume, finds it again): the prompt starts a run there, the remote answer's
tokens stream into the parent's stream as the subagent's chunks, and its last AI message
is the result. An interrupt on the remote thread becomes an `interrupt()` here, so the
parent pauses with it; the answer resumes the remote thread where it stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from supervisor_graph.checkpointers.compat import read_channel
from supervisor_graph.nodes.budget import spend
from supervisor_graph.nodes.context import RUN_IDENTITY_KEYS
from supervisor_graph.nodes.delegation_complete import finish_delegation
from supervisor_graph.nodes.delegation_result import DelegationRecord
from supervisor_graph.nodes.delegation_view import apply_message_filter, model_view
from supervisor_graph.nodes.errors import log_failure
from supervisor_graph.nodes.events import EVENT_KEY, Emitter
from supervisor_graph.nodes.options import RunContext, RunHandle
from supervisor_graph.nodes.otel import traceparent_headers
from supervisor_graph.nodes.scope import run_scope
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import zero_usage
from supervisor_graph.nodes.text import text_of_content
from supervisor_graph.nodes.tracing import announce

__all__ = ["RemoteSpec", "make_remote_node", "remote_thread_id"]

log = logging.getLogger("supervisor_graph")

# the stream modes a delegation reads: tokens (text), values (the result)
_MODES = ["messages-tuple", "values"]


@dataclass(frozen=True, slots=True)
class RemoteSpec:
    """What the node needs of a `RemoteAgent`."""

    agent_id: str
    url: str
    graph_id: str
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = 300.0
    connect_timeout: float = 10.0

    def client(self) -> Any:
        from langgraph_sdk import get_client

        return get_client(
            url=self.url,
            headers=dict(self.headers) or None,
            api_key=None,
            timeout=(self.connect_timeout, self.timeout, self.timeout, self.connect_timeout),
        )


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
    last_ai = None
    for message in messages:
        if message.get("type") in ("ai", "AIMessage", "AIMessageChunk"):
            _add_usage(record.usage, message)
            last_ai = message
    record.text = text_of_content(last_ai.get("content")) if last_ai is not None else ""
    record.finish_reason = str(values.get("finish_reason") or "stop")


def _local_request(item: dict[str, Any], spec: RemoteSpec, handle: RunHandle, namespace: str, thread_id: str) -> dict[str, Any]:
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
    agent_id = spec.agent_id

    async def run_remote(task: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opts, handle = run_scope(parent, config, runtime)
        call = task["call"]
        tool_call_id = call["id"] or ""
        prompt = task["prompt"]
        configurable = config.get("configurable") or {}
        namespace = configurable.get("checkpoint_ns", "")
        thread_id = remote_thread_id(configurable.get("thread_id"), namespace, tool_call_id)
        record = DelegationRecord(
            tool_call_id=tool_call_id, key=key, agent_id=agent_id, prompt=prompt, sub_agent_thread_id=thread_id,
            usage=zero_usage(),
        )
        handle.delegations[tool_call_id] = record
        emit = Emitter(runtime, handle)
        announced = {"tool_call_id": tool_call_id, "agent_key": key, "agent_id": agent_id, "prompt": prompt, "namespace": namespace}
        emit("delegation-start", announced)
        await announce(config, "delegation-start", announced, handle.agent_path)
        sub_path = (*handle.agent_path, agent_id)
        try:
            parent_messages: list[BaseMessage] = read_channel(config, "messages") or []
            chosen = await apply_message_filter(
                opts, handle, [*handle.context_messages, *parent_messages], agent_id, prompt, tool_call_id
            )
            values = task.get("request_context")
            context = dict(values) if values is not None else handle.request_context.fork(RUN_IDENTITY_KEYS).to_dict()
            context = {k: v for k, v in context.items() if k not in RUN_IDENTITY_KEYS}
            context["parent_messages"] = [{"role": m.type, "content": m.content} for m in model_view(chosen)]
            client = spec.client()
            await client.threads.create(thread_id=thread_id, if_exists="do_nothing", metadata={"parent_agent": handle.agent_path[-1]})
            state = await client.threads.get_state(thread_id)
            started = bool((state.get("values") or {}).get("messages")) if isinstance(state.get("values"), dict) else False
            run_input: dict[str, Any] = {"input": {"messages": [{"role": "user", "content": prompt}]}, "context": context}
            while True:
                if not started or run_input.get("command") is not None:
                    await _stream(client, spec, thread_id, run_input, emit, sub_path, namespace, handle, traceparent_headers(config))
                    started = True
                    state = await client.threads.get_state(thread_id)
                waiting = state.get("interrupts") or []
                if not waiting:
                    break
                answers = {}
                for item in waiting:  # each pauses the parent in turn; answered ones return here
                    answers[item.get("id")] = interrupt(_local_request(item, spec, handle, namespace, thread_id))
                run_input = {"command": {"resume": answers}}
            _outcome(state.get("values") or {}, record)
            spend(handle.budget, record.usage)  # counted against this run's budgets once it has ended (SPEC §25)
        except GraphBubbleUp:
            raise  # this graph's own pause: the parent's caller answers it
        except Exception as exc:  # noqa: BLE001 - an unreachable or failing server is a failed delegation
            record.success, record.error, record.finish_reason = False, exc, "error"
            log_failure(log, logging.WARNING, "remote delegation to %r failed", exc, agent_id)

        artifact = {
            "agent_id": agent_id,
            "success": record.success,
            "usage": record.usage,
            "finish_reason": record.finish_reason,
            "sub_agent_thread_id": thread_id,
            "remote": {"url": spec.url, "graph_id": spec.graph_id},
        }
        return await finish_delegation(config, opts, handle, record, call, key, artifact, emit, namespace)

    run_remote.__name__ = key
    return run_remote


async def _stream(
    client: Any,
    spec: RemoteSpec,
    thread_id: str,
    run_input: dict[str, Any],
    emit: Emitter,
    path: tuple[str, ...],
    namespace: str,
    handle: RunHandle,
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
            if emit.active and part.event == "messages" and isinstance(part.data, list) and len(part.data) == 2:
                chunk, meta = part.data
                if "|" in str((meta or {}).get("langgraph_checkpoint_ns", "")):
                    continue  # the remote's own subagents: not this delegation's answer
                if isinstance(chunk, dict) and chunk.get("type") in ("AIMessageChunk", "ai"):
                    text = text_of_content(chunk.get("content"))
                    if text:
                        emit.writer(  # type: ignore[misc]
                            {
                                EVENT_KEY: True,
                                "type": "text-delta",
                                "payload": {"text": text, "message_id": chunk.get("id")},
                                "agent_path": path,
                                "run_id": handle.run_id,
                                "namespace": namespace,
                            }
                        )
    except asyncio.CancelledError:
        if created:  # the run was aborted: stop the remote run too
            with contextlib.suppress(Exception):
                await asyncio.shield(client.runs.cancel(thread_id, created[-1]))
        raise
