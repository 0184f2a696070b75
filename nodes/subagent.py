"""The subagent node: runs a subagent's compiled graph as a LangGraph subgraph.

The subgraph inherits the parent's checkpointer and stores its checkpoints under the
task's namespace, so each delegation gets a thread of its own that survives a pause
and resume. The parent's conversation reaches the subagent's model through the run
handle (never through state), so the subagent's thread stores only its prompt, its
own messages and its answer, and the parent's thread stores only the call and its
final text.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.pregel._read import ChannelRead
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from checkpointers.naming import delegation_thread_id, stable_namespace, subagent_resource_id
from nodes.events import Emitter
from nodes.options import RunContext, RunHandle, RunOptions
from nodes.routing import SUPERVISOR_NODE, complete_node
from nodes.scope import run_scope
from nodes.spec import AgentSpec
from nodes.state import run_start, usage_of_run

__all__ = ["RUN_IDENTITY_KEYS", "context_for_subagent", "make_subagent_node", "text_of"]

log = logging.getLogger("supervisor_graph")

# Request-context keys that identify the top-level run and so are not copied down.
RUN_IDENTITY_KEYS = frozenset({"run_id", "thread_id", "resource_id", "memory"})

_thread_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()


def text_of(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        part if isinstance(part, str) else str(part.get("text", ""))
        for part in content
        if isinstance(part, str) or part.get("type") == "text"
    )


def context_for_subagent(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The parent's conversation as model context for a subagent: tool calls, tool
    results and empty messages are dropped (SPEC §8)."""
    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            continue
        if isinstance(message, AIMessage):
            text = text_of(message)
            if not text:
                continue
            if message.tool_calls:
                message = AIMessage(content=text, id=message.id, name=message.name)
            out.append(message)
        elif message.content:
            out.append(message)
    return out


def _sub_options(parent: RunOptions, sub_defaults: RunOptions, max_steps: int | None, handle: RunHandle) -> RunOptions:
    update: dict[str, Any] = {
        "request_context": handle.request_context,
        "abort_signal": handle.abort_signal,
        "memory": None,
        "require_tool_approval": parent.require_tool_approval or sub_defaults.require_tool_approval,
    }
    if max_steps is not None:
        update["max_steps"] = max_steps
    # Delegation options of the call apply at every depth (SPEC §6.8).
    if parent.delegation.model_fields_set:
        update["delegation"] = parent.delegation
    return sub_defaults.model_copy(update=update)


def make_subagent_node(
    parent: AgentSpec,
    key: str,
    sub_spec: AgentSpec,
    graph: Any,
    *,
    per_parent_thread: bool = False,
) -> Any:
    agent_id = sub_spec.agent_id

    async def run_subagent(task: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opts, handle = run_scope(parent, config, runtime)
        call = task["call"]
        prompt = task["prompt"]
        configurable = config.get("configurable") or {}
        ns = configurable.get("checkpoint_ns", "")
        if per_parent_thread:
            ns = stable_namespace(ns)
        thread_id = delegation_thread_id(configurable.get("thread_id"), ns)
        resource_id = subagent_resource_id(handle.resource_id or handle.thread_id, key)

        parent_messages: list[BaseMessage] = ChannelRead.do_read(config, select="messages", fresh=False) or []
        sub_handle = RunHandle(
            run_id=handle.run_id,
            agent_path=(*handle.agent_path, agent_id),
            request_context=handle.request_context.fork(RUN_IDENTITY_KEYS),
            abort_signal=handle.abort_signal,
            context_messages=context_for_subagent([*handle.context_messages, *parent_messages]),
            thread_id=thread_id,
            resource_id=resource_id,
        )
        sub_opts = _sub_options(opts, sub_spec.defaults, task.get("max_steps"), sub_handle)
        emit = Emitter(runtime, handle.agent_path, handle.run_id)
        emit(
            "delegation-start",
            {"tool_call_id": call["id"], "agent_key": key, "agent_id": agent_id, "prompt": prompt},
        )
        sub_config: RunnableConfig = {
            **config,
            "metadata": {
                **(config.get("metadata") or {}),
                "agent_id": agent_id,
                "resource_id": resource_id,
                "parent_thread_id": handle.thread_id or "",
                "delegation_thread_id": thread_id or "",
            },
        }
        sub_input = {"messages": [HumanMessage(content=prompt)]}
        success, error = True, None
        messages: list[BaseMessage] = []
        try:
            if per_parent_thread and thread_id is not None:
                lock = _thread_locks.get(thread_id)
                if lock is None:
                    lock = _thread_locks[thread_id] = asyncio.Lock()
                async with lock:
                    out = await graph.ainvoke(sub_input, sub_config, context=RunContext.for_run(sub_opts, sub_handle))
            else:
                out = await graph.ainvoke(sub_input, sub_config, context=RunContext.for_run(sub_opts, sub_handle))
        except GraphBubbleUp:
            raise  # interrupts and parent commands belong to LangGraph
        except Exception as exc:  # noqa: BLE001 - a failed subagent is a failed tool result
            success, error = False, exc
            log.warning("subagent %r failed: %s: %s", agent_id, type(exc).__name__, exc)
            out = None

        if out is not None:
            all_messages = out.get("messages") or []
            start = run_start(all_messages)
            messages = all_messages[start:]
            last = messages[-1] if messages else None
            text = text_of(last) if isinstance(last, AIMessage) else ""
            usage = usage_of_run(all_messages, start)
            finish_reason = out.get("finish_reason") or "stop"
        else:
            text, usage, finish_reason = "", {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}, "error"
        tool_results = _tool_results(messages)
        artifact = {
            "agent_id": agent_id,
            "success": success,
            "usage": usage,
            "finish_reason": finish_reason,
            "sub_agent_thread_id": thread_id,
            "sub_agent_resource_id": resource_id,
        }
        if success:
            result = ToolMessage(content=text, tool_call_id=call["id"], name=call["name"], artifact=artifact)
        else:
            artifact["error"] = type(error).__name__
            result = ToolMessage(
                content=f"[Delegation Failed] {agent_id} could not complete the task.",
                tool_call_id=call["id"],
                name=call["name"],
                artifact=artifact,
                status="error",
            )
        if emit.active:
            payload = {
                "tool_call_id": call["id"],
                "agent_key": key,
                "agent_id": agent_id,
                "success": success,
                "text": text,
                "usage": usage,
                "finish_reason": finish_reason,
                "sub_agent_tool_results": tool_results,
                "sub_agent_thread_id": thread_id,
                "sub_agent_resource_id": resource_id,
            }
            emit("delegation-complete", payload)
            emit(
                "tool-result" if success else "tool-error",
                {"tool_call_id": call["id"], "tool_name": call["name"], "result": result.content, **payload},
            )
        if opts.delegation.on_delegation_complete is not None:
            # The transcript and error stay in memory: a Send payload is checkpointed in
            # the parent's thread, which must never hold the subagent's messages.
            handle.delegations[call["id"] or ""] = (messages, error, tool_results)
            return Command(
                goto=Send(
                    complete_node(key),
                    {"call": call, "key": key, "message": result},
                )
            )
        return Command(update={"messages": [result]}, goto=SUPERVISOR_NODE)

    run_subagent.__name__ = key
    return run_subagent


def _tool_results(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    calls: dict[str, dict[str, Any]] = {}
    out = []
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                calls[call["id"] or ""] = dict(call)
        elif isinstance(message, ToolMessage):
            made = calls.get(message.tool_call_id, {})
            out.append(
                {
                    "tool_call_id": message.tool_call_id,
                    "tool_name": message.name or made.get("name"),
                    "args": made.get("args", {}),
                    "result": message.content,
                    "status": message.status,
                }
            )
    return out
