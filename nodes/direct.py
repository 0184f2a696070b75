"""A subagent that cannot pause, run inside its parent's subagent node (issue 17).

A subagent with no tools, no subagents of its own, no working memory and no per-run
hooks can only answer: it never interrupts. Under the run facade (which attributes
chunks itself; LangGraph Studio and embedding apps read LangGraph's own subgraph
streams, so there it still runs as a subgraph), Running it as a LangGraph subgraph costs a
second Pregel loop and three checkpoints (input, start, its one step); here its model is
called in the parent's node, and its delegation thread is written in one checkpoint
(`aupdate_state` on the subagent's graph, in the delegation's namespace), so
`get_messages(sub_agent_thread_id)`, `list_threads` and Studio's view of the delegation
read what they read before. Its chunks carry its own agent path and the delegation's
namespace, as the subgraph's did.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from supervisor_graph.checkpointers.compat import has_checkpointer
from supervisor_graph.nodes.delegation import DelegationRecord, record_answer, record_transcript
from supervisor_graph.nodes.errors import ModelCallError
from supervisor_graph.nodes.events import Emitter
from supervisor_graph.nodes.options import RunHandle, RunOptions
from supervisor_graph.nodes.routing import SUPERVISOR_NODE, error_result
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.supervisor import finish_reason_of, model_input, step_finish

__all__ = ["AGENT_PATH_KEY", "NAMESPACE_KEY", "can_run_directly", "run_directly"]

# metadata of the model call: which agent and namespace its tokens belong to
AGENT_PATH_KEY = "supervisor_graph_agent_path"
NAMESPACE_KEY = "supervisor_graph_namespace"


def can_run_directly(spec: AgentSpec, opts: RunOptions, handle: RunHandle, per_parent_thread: bool) -> bool:
    """True when the subagent can only answer (nothing in it can pause the run)."""
    return (
        not spec.tools
        and not spec.delegation_schemas
        and spec.working_memory is None
        and spec.background is None
        and not per_parent_thread
        and opts.on_iteration_complete is None
        and opts.is_task_complete is None
    )


async def _call(model: Any, messages: ChatPromptValue, config: RunnableConfig, policy: RetryPolicy | None, agent_id: str) -> Any:
    attempt = 0
    while True:
        attempt += 1
        try:
            return await model.ainvoke(messages, config)
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - provider text must not reach the checkpoint
            retry = policy is not None and attempt < policy.max_attempts and _retryable(policy, exc)
            if not retry:
                raise ModelCallError(agent_id, exc) from exc
            assert policy is not None
            delay = min(policy.max_interval, policy.initial_interval * policy.backoff_factor ** (attempt - 1))
            await asyncio.sleep(delay + (random.uniform(0, 1) if policy.jitter else 0))


def _retryable(policy: RetryPolicy, exc: Exception) -> bool:
    retry_on = policy.retry_on
    if callable(retry_on) and not isinstance(retry_on, type):
        return bool(retry_on(exc))
    kinds = retry_on if isinstance(retry_on, tuple) else (retry_on,)
    return isinstance(exc, kinds)


async def run_directly(
    spec: AgentSpec,
    graph: Any,
    prompt: str,
    config: RunnableConfig,
    opts: RunOptions,
    handle: RunHandle,
    runtime: Runtime[Any],
    namespace: str,
    record: DelegationRecord,
) -> None:
    """Run the subagent's turns here and record them in `record` (a failure keeps the
    partial transcript, as a failed subgraph run does)."""
    emit = Emitter(runtime, handle, namespace)
    model = await spec.resolve_model(handle.request_context, False, handle.override)
    system = await spec.resolve_instructions(handle.request_context, handle.override)
    history: list[BaseMessage] = [HumanMessage(content=prompt, id=str(uuid.uuid4()))]
    model_config: RunnableConfig = {
        **config,
        "metadata": {**(config.get("metadata") or {}), AGENT_PATH_KEY: list(handle.agent_path), NAMESPACE_KEY: namespace},
    }
    reason = "max_steps"
    try:
        reason = await _turns(spec, model, system, history, model_config, opts, handle, emit)
    finally:
        record_transcript(record, {"messages": history})
    state = {"messages": history, "finish_reason": reason}
    if has_checkpointer(config):  # runs without a checkpointer keep nothing, as before
        await graph.aupdate_state(config, state, as_node=SUPERVISOR_NODE)
    record_answer(record, state)


async def _turns(
    spec: AgentSpec,
    model: Any,
    system: str,
    history: list[BaseMessage],
    model_config: RunnableConfig,
    opts: RunOptions,
    handle: RunHandle,
    emit: Emitter,
) -> str:
    """The subagent's model turns, appended to `history`; returns its finish reason."""
    reason = "max_steps"
    for iteration in range(opts.max_steps):
        if handle.abort_signal is not None and handle.abort_signal.is_set():
            reason = "abort"
            break
        emit("step-start", {"iteration": iteration + 1})
        response = await _call(model, model_input(system, handle.context_messages, history), model_config, spec.retry_policy, spec.agent_id)
        if not isinstance(response, AIMessage):
            raise TypeError(f"Agent {spec.agent_id!r}: the model returned {type(response).__name__}, not an AIMessage")
        history.append(response)
        if emit.active:
            emit("step-finish", step_finish(response, iteration + 1))
        if not response.tool_calls:
            reason = finish_reason_of(response)
            break
        # it has no tools: each call is answered with the error the tools node would give
        history.extend(
            error_result(call, f"there is no tool named {call['name']!r}; available tools: none") for call in response.tool_calls
        )
    return reason
