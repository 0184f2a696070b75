"""The tools node: runs the supervisor's own tools for one model turn, concurrently."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import ValidationError

from nodes.context import using_request_context
from nodes.events import Emitter
from nodes.options import RunContext
from nodes.routing import SUPERVISOR_NODE, error_result
from nodes.scope import run_scope
from nodes.spec import AgentSpec

__all__ = ["make_tools_node"]


def make_tools_node(spec: AgentSpec) -> Any:
    async def run_tool(call: ToolCall, config: RunnableConfig, emit: Emitter) -> ToolMessage:
        tool = spec.tools[call["name"]]
        try:
            result = await tool.ainvoke({**call, "type": "tool_call"}, config)
        except GraphBubbleUp:
            raise
        except ValidationError as exc:
            result = error_result(call, f"invalid arguments for {call['name']}: {exc.error_count()} error(s): {exc}")
        except Exception as exc:  # noqa: BLE001 - a failing tool is a tool error the model sees
            result = error_result(call, f"{call['name']} failed: {type(exc).__name__}: {exc}")
        if not isinstance(result, ToolMessage):
            result = ToolMessage(content=str(result), tool_call_id=call["id"] or "", name=call["name"])
        if emit.active:
            kind = "tool-error" if result.status == "error" else "tool-result"
            emit(kind, {"tool_call_id": call["id"], "tool_name": call["name"], "args": call["args"], "result": result.content})
        return result

    async def tools(payload: dict[str, Any], config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        _, handle = run_scope(spec, config, runtime)
        using_request_context(handle.request_context)
        emit = Emitter(runtime, handle.agent_path, handle.run_id)
        calls: list[ToolCall] = payload["calls"]
        if len(calls) == 1:
            results = [await run_tool(calls[0], config, emit)]
        else:
            results = list(await asyncio.gather(*(run_tool(call, config, emit) for call in calls)))
        return Command(update={"messages": results}, goto=SUPERVISOR_NODE)

    return tools
