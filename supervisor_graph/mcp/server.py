"""`add_mcp_endpoint`: one MCP tool, `ask_<agent id>`, served at `/mcp` (streamable HTTP)
beside the AG-UI routes, each call one AG-UI run of the app's bridge.

A call runs like an AG-UI run of the same bridge: the thread is the serve command's
resource's (another user's thread is refused), a thread another run holds is refused
(`THREAD_BUSY`), the thread id has the app's length limit, and a failure shows the
client the bridge's generic message. Each refusal is a tool error naming its code.

A run that pauses for approval cannot be answered over MCP (the tool has no answer
input, and most MCP clients could not show one): the result names what waits (tool,
arguments, interrupt id) and where to answer it (the playground, or AG-UI `resume`).

Each result's `_meta` holds the run's `usage` (input, output and total tokens) and its
`cost` in USD (SPEC §33: None when a model has no price).

As the run advances the client hears `notifications/progress` (with a progress token)
and `notifications/message` (see `supervisor_graph.mcp.progress`). The server declares
what it has, and only that: `tools` and `logging`; FastMCP's empty resource and prompt
handlers are taken off so that `resources` and `prompts` are not declared (a client
asking for them gets "method not found"), and there are no completions.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from typing import Any, cast

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageStartEvent,
    UserMessage,
)
from fastapi import FastAPI
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    GetPromptRequest,
    ListPromptsRequest,
    ListResourcesRequest,
    ListResourceTemplatesRequest,
    LoggingLevel,
    ReadResourceRequest,
    TextContent,
)
from pydantic import ValidationError
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from supervisor_graph.agui.agent import AGUIAgent
from supervisor_graph.agui.jsonrpc import with_checked_body
from supervisor_graph.agui.outcomes import client_error
from supervisor_graph.agui.serving import DEFAULT_MAX_THREAD_ID_LENGTH, thread_id_problem
from supervisor_graph.agui.usage import usage_and_cost
from supervisor_graph.mcp.progress import ProgressReporter
from supervisor_graph.run.busy import OnBusy

__all__ = ["add_mcp_endpoint", "tool_name"]

log = logging.getLogger("supervisor_graph.mcp")


def tool_name(agent_id: str) -> str:
    """The MCP tool's name: `ask_` and the agent's id with `-` as `_`."""
    return "ask_" + agent_id.replace("-", "_")


def _error(code: str, message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=f"{code}: {message}")], isError=True)


def _result(text: str, end: RunFinishedEvent | None = None, **structured: Any) -> CallToolResult:
    """A tool result; the run's usage and cost in USD (SPEC §33) in its `_meta`."""
    meta = usage_and_cost(end.usage) if end is not None else None
    return CallToolResult(content=[TextContent(type="text", text=text)], structuredContent=structured, _meta=meta)


def result_schema(answer: dict[str, Any]) -> dict[str, Any]:
    """The tool's `outputSchema` when the agent has an output schema: the structured
    content every result has (status, thread), with the answer's object under `object`
    (its `$defs` lifted to the top, where its references point)."""
    answer = dict(answer)
    defs = answer.pop("$defs", None)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["answered", "paused", "stopped"]},
            "thread_id": {"type": "string"},
            "answer": {"type": "string", "description": "The object as JSON text."},
            "object": answer,
            "waiting": {"type": "array", "items": {"type": "object"}},
        },
        "required": ["status", "thread_id"],
    }
    if defs:
        schema["$defs"] = defs
    return schema


def _waiting(interrupt: Interrupt) -> dict[str, Any]:
    # the bridge's metadata: {"<dialect key>": {"tool_name": ..., "args": ...}}
    outer = interrupt.metadata if isinstance(interrupt.metadata, dict) else {}
    meta = next((v for v in outer.values() if isinstance(v, dict)), {})
    return {
        "interrupt_id": interrupt.id,
        "tool_name": meta.get("tool_name", meta.get("toolName")),
        "args": meta.get("args"),
        "kind": "approval" if (interrupt.reason or "").endswith("tool_approval") else "input",
    }


def _paused_text(waiting: list[dict[str, Any]], thread_id: str, base_url: str, agui_path: str) -> str:
    lines = [f"The run paused on thread {thread_id!r}: {len(waiting)} item(s) wait for a person's answer."]
    for item in waiting:
        args = json.dumps(item["args"], ensure_ascii=False, default=str)
        lines.append(
            f"- {item['kind']} for tool {item['tool_name']!r} with arguments {args} (interrupt id {item['interrupt_id']})"
        )
    lines.append(
        "This MCP tool cannot answer them. Approve or decline in the playground at "
        f"{base_url}/ (open thread {thread_id}), or over AG-UI at {base_url}{agui_path} with a run on this "
        "thread whose `resume` answers each interrupt id. Until then, calls on this thread are refused "
        "(INTERRUPT_PENDING)."
    )
    return "\n".join(lines)


def _token_problem(message: dict[str, Any]) -> JSONResponse | None:
    """The JSON-RPC error for a request whose `_meta.progressToken` is neither a string
    nor an integer (None: the request is fine, or not ours to judge).

    Decision: such a request is refused with a clear `-32602` naming the token, before
    anything runs, rather than run without progress. The spec allows only strings and
    integers; the SDK alone would answer a bare "Invalid request parameters" for most
    wrong types and quietly turn `true` into `1`, so the client would get progress for a
    token it never sent. Refusing up front loses no run: none has started.
    `"progressToken": null` is no token (the SDK reads it so too)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if token is None or (isinstance(token, str | int) and not isinstance(token, bool)):
        return None
    error = {
        "code": INVALID_PARAMS,
        "message": f"Invalid params: _meta.progressToken must be a string or an integer, not {json.dumps(token)[:80]}",
    }
    return JSONResponse({"jsonrpc": "2.0", "id": message.get("id"), "error": error})


class _Handler:
    """The ASGI app of the `/mcp` route: a POST's body is checked first (`agui.jsonrpc`:
    parse errors, wrong types and bad progress tokens get a JSON-RPC error of ours, HTTP
    400 as the SDK answers its own), then the request goes to the session manager."""

    def __init__(self, server: FastMCP) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "POST":
            await self.server.session_manager.handle_request(scope, receive, send)
            return
        # MCP clients post responses to the server's requests too; MCP ids are never null
        await with_checked_body(
            scope, receive, send, self._checked, status=400, responses=True, null_id=False, null_params=True
        )

    async def _checked(self, message: dict[str, Any], scope: Scope, receive: Receive, send: Send) -> None:
        refused = _token_problem(message)
        if refused is not None:
            await refused(scope, receive, send)
            return
        await self.server.session_manager.handle_request(scope, receive, send)


def _declare_output_schema(server: FastMCP, name: str, schema: dict[str, Any]) -> None:
    """`tools/list` says the shape of the tool's structured content (the agent answers
    typed objects, SPEC §28). Declared on the listing only: the tool returns a whole
    `CallToolResult`, which FastMCP would otherwise try to build from an output model."""

    async def list_tools() -> list[Any]:
        tools = await FastMCP.list_tools(server)
        return [t.model_copy(update={"outputSchema": schema}) if t.name == name else t for t in tools]

    server._mcp_server.list_tools()(list_tools)


def _declare_only_what_is_served(server: FastMCP) -> None:
    """Take FastMCP's resource and prompt handlers off (the server has neither: the
    lowlevel server declares a capability for each handler it holds) and answer
    `logging/setLevel`, which declares `logging`."""
    handlers = server._mcp_server.request_handlers
    for request in (
        ListResourcesRequest,
        ReadResourceRequest,
        ListResourceTemplatesRequest,
        ListPromptsRequest,
        GetPromptRequest,
    ):
        handlers.pop(request, None)

    async def set_level(level: LoggingLevel) -> None:
        # Acknowledged, and kept nowhere: the server is stateless (a session per request),
        # so no later request could see it. Each tools/call sends its lines at info and
        # above (few: delegations and the run's end); clients filter what they show.
        return None

    server._mcp_server.set_logging_level()(set_level)  # type: ignore[no-untyped-call]


def _errors_in_our_words(server: FastMCP) -> None:
    """A tool call that fails answers a tool error of ours. FastMCP words every failure
    "Error executing tool ...: <the exception>", which for arguments of the wrong type is
    pydantic's whole report (input values, a link to its docs) and for anything else the
    exception's text. Here: `INVALID_ARGUMENTS` naming each argument and what is wrong
    with it, or the code and message an AG-UI client gets (`client_error`; the
    exception goes to the log). FastMCP's own refusals (an unknown tool) keep their words."""

    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        try:
            return await FastMCP.call_tool(server, name, arguments)
        except ToolError as exc:
            cause = exc.__cause__
            if cause is None:
                raise
            if isinstance(cause, ValidationError):
                problems = "; ".join(
                    f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
                    for error in cause.errors()[:10]
                )
                raise ToolError(f"INVALID_ARGUMENTS: {problems}") from None
            log.error("MCP tool %s failed", name, exc_info=cause)
            code, text = client_error(cause, False)
            raise ToolError(f"{code}: {text}") from None

    server._mcp_server.call_tool(validate_input=False)(call_tool)


def _with_session_manager(app: FastAPI, server: FastMCP) -> None:
    """Run the MCP session manager for the app's lifetime (around its own lifespan)."""
    inner: Callable[[Any], AbstractAsyncContextManager[Any]] = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(target: Any) -> AsyncIterator[Any]:
        async with server.session_manager.run(), inner(target) as state:
            yield state

    app.router.lifespan_context = lifespan


def add_mcp_endpoint(
    app: FastAPI,
    bridge: AGUIAgent,
    *,
    path: str = "/mcp",
    agui_path: str = "/agent",
    max_thread_id_length: int | None = DEFAULT_MAX_THREAD_ID_LENGTH,
) -> FastMCP:
    """Serve `bridge`'s agent as an MCP server at `path` of `app` (streamable HTTP,
    stateless: any worker process can answer any request).

    The tool `ask_<agent id>` takes `prompt` and an optional `thread_id` (a new thread
    each call without one; the result's structured content names it), and an optional
    `on_busy` (SPEC §29: what the call does while a run holds the thread; the bridge's
    default otherwise), and returns the answer's text. Put it on the app `create_app(bridge, agui_path, ...)` built: its
    guard checks `/mcp` like the AG-UI routes. The app must run its lifespan (uvicorn
    does by default).
    """
    agent_id = bridge.agent.id
    description = getattr(bridge.agent, "description", None) or f"the {agent_id} agent"
    server = FastMCP(
        name=agent_id,
        instructions=f"Ask {agent_id} ({description}). Pass the same thread_id to continue a conversation.",
        stateless_http=True,
        streamable_http_path=path,
        # the app's Guard checks the Host header (and the token) before this route
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    declared = getattr(bridge.agent, "output_schema", None)
    server.add_tool(
        _ask(bridge, agui_path, max_thread_id_length),
        name=tool_name(agent_id),
        description=(
            f"Ask {agent_id}: {description}. Returns the answer's text. Give the same thread_id to continue a "
            "conversation (the result's structured content names the thread of a call without one)."
        ),
    )
    if declared is not None:
        _declare_output_schema(server, tool_name(agent_id), result_schema(declared.json_schema))
    _declare_only_what_is_served(server)
    _errors_in_our_words(server)
    server.streamable_http_app()  # creates the session manager; its own Starlette app is not used
    app.router.routes.append(Route(path, endpoint=_Handler(server), methods=["GET", "POST", "DELETE"]))
    _with_session_manager(app, server)
    return server


def _ask(bridge: AGUIAgent, agui_path: str, max_thread_id_length: int | None) -> Callable[..., Any]:
    """The tool's function: one AG-UI run of `bridge` on the prompt, its events told to
    the client as progress, its answer (or pause, or stop) the result."""

    async def ask(
        prompt: str, ctx: Context[Any, Any, Any], thread_id: str | None = None, on_busy: OnBusy | None = None
    ) -> CallToolResult:
        request = ctx.request_context.request
        thread = thread_id if thread_id is not None else f"mcp-{uuid.uuid4().hex}"
        problem = thread_id_problem(thread, max_thread_id_length)
        if problem is not None:
            return _error("INVALID_THREAD_ID", problem)
        run_input = RunAgentInput(
            thread_id=thread,
            run_id=f"mcp-{uuid.uuid4().hex}",
            state={},
            messages=[UserMessage(id=f"mcp-{uuid.uuid4().hex}", role="user", content=prompt)],
            tools=[],
            context=[],
            forwarded_props={"on_busy": on_busy} if on_busy is not None else {},  # double texting (SPEC §29)
        )
        texts: dict[str, list[str]] = {}
        end: RunFinishedEvent | None = None
        progress = ProgressReporter(ctx, bridge.agent, attributed=bridge.subagent_visibility == "attributed")
        async with aclosing(cast(AsyncGenerator[BaseEvent, None], bridge.run(run_input, request=request))) as events:
            async for event in events:
                await progress.on_event(event)
                if isinstance(event, TextMessageStartEvent):
                    texts[event.message_id] = []
                elif isinstance(event, TextMessageContentEvent | TextMessageChunkEvent):
                    texts.setdefault(event.message_id or "", []).append(event.delta or "")
                elif isinstance(event, RunErrorEvent):
                    return _error(event.code or "AGENT_ERROR", event.message)
                elif isinstance(event, RunFinishedEvent):
                    end = event
                    ended = _finished(event, _said(texts), thread, request, agui_path)
                    if ended is not None:
                        return ended
        answer = _said(texts)
        return _result(answer, end, status="answered", thread_id=thread, answer=answer)

    return ask


def _said(texts: dict[str, list[str]]) -> str:
    """The text of the run's last message (the answer, or what it said before it stopped)."""
    return "".join(texts[list(texts)[-1]]) if texts else ""


def _finished(event: RunFinishedEvent, said: str, thread: str, request: Any, agui_path: str) -> CallToolResult | None:
    """The result of a run that finished with a typed answer, a pause or a stop (None: a
    plain answer, its text the messages')."""
    if event.result is not None:  # a typed answer (SPEC §28)
        answer = json.dumps(event.result, ensure_ascii=False)
        return _result(answer, event, status="answered", thread_id=thread, answer=answer, object=event.result)
    outcome = event.outcome
    if outcome is not None and outcome.type == "interrupt":
        waiting = [_waiting(i) for i in getattr(outcome, "interrupts", [])]
        base = str(request.base_url).rstrip("/") if request is not None else ""
        text = _paused_text(waiting, thread, base, agui_path)
        return _result(text, event, status="paused", thread_id=thread, waiting=waiting)
    if outcome is not None and outcome.type == "cancelled":
        # stopped before it answered: a newer message on the thread (on_busy
        # interrupt / rollback) or a cancel; what it said so far is kept
        text = "The run was stopped before it answered (a newer message on this thread, or a cancel)."
        return _result(f"{text}\n{said}" if said else text, event, status="stopped", thread_id=thread)
    return None
