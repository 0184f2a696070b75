"""`create_tool(...)`: tools declared the way the source documents declare them."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tools import tool as as_langchain_tool
from pydantic import BaseModel, ValidationError

from supervisor_graph.nodes.background.tasks import BackgroundTaskConfig
from supervisor_graph.nodes.scope.context import current_request_context
from supervisor_graph.nodes.steps.decisions import ApprovalPolicy
from supervisor_graph.nodes.turn.tools import ToolCallInfo, current_tool_call, suspend

__all__ = [
    "ToolCallInfo",
    "create_tool",
    "current_request_context",
    "current_tool_call",
    "is_client_tool",
    "requires_approval",
    "suspend",
    "tools_by_name",
]


def create_tool(
    *,
    id: str,
    description: str,
    input_schema: type[BaseModel],
    execute: Callable[..., Any] | None = None,
    require_approval: bool | dict[str, Any] | ApprovalPolicy = False,
    resume_schema: type[BaseModel] | None = None,
    background: BackgroundTaskConfig | dict[str, Any] | bool | None = None,
) -> BaseTool:
    """A LangChain tool whose `execute(input)` receives the validated `input_schema` model.

    Example:
        >>> from pydantic import BaseModel
        >>> class Query(BaseModel):
        ...     query: str
        >>> search = create_tool(id="web_search", description="Search the web", input_schema=Query,
        ...                      execute=lambda q: f"results for {q.query}")
        >>> search.invoke({"query": "LangGraph"})
        'results for LangGraph'

    A tool without `execute` is a client tool: the run stops for the caller to answer it.
    Inside `execute`, `suspend(payload)` pauses the run; `resume_schema` validates the
    data the caller resumes with. `require_approval=True` pauses each call for a
    person's decision (approve, edit the arguments, or reject with a reason);
    `{"allowed_decisions": ["approve", "reject"], "description": "..."}` limits the
    decisions and says what to show them (SPEC §29). `background` (`True` or `{"timeout_ms": ..., "retries":
    ...}`) marks the tool background-eligible: a subagent holding it runs as a background
    task of its parent with this setting, even when the parent does not list it in
    `background_tasks` (SPEC §12).
    """
    if not id:
        raise ValueError("create_tool: id must be a non-empty tool name")
    if not (isinstance(input_schema, type) and issubclass(input_schema, BaseModel)):
        raise TypeError("create_tool: input_schema must be a pydantic model class")
    try:
        policy = ApprovalPolicy.of(require_approval)
    except ValueError as exc:
        raise ValueError(f"create_tool {id!r}: {exc}") from None
    approval: Any = policy.model_dump(mode="json") if policy is not None and require_approval is not True else policy is not None
    metadata: dict[str, Any] = {"require_approval": approval, "client_tool": execute is None, "resume_schema": resume_schema}
    try:
        setting = BackgroundTaskConfig.of(background)
    except ValidationError as exc:
        raise ValueError(f"create_tool {id!r}: invalid background setting (enabled, timeout_ms, retries): {exc}") from None
    if setting is not None:
        metadata["background"] = setting.model_dump()

    def parse(kwargs: dict[str, Any]) -> BaseModel:
        return input_schema.model_validate(kwargs)

    if execute is None:

        def client_side(**kwargs: Any) -> Any:
            raise RuntimeError(f"{id} is a client tool: the caller answers it")

        return StructuredTool.from_function(
            func=client_side, name=id, description=description, args_schema=input_schema, metadata=metadata
        )
    if inspect.iscoroutinefunction(execute):

        async def run_async(**kwargs: Any) -> Any:
            return await execute(parse(kwargs))

        return StructuredTool.from_function(
            coroutine=run_async, name=id, description=description, args_schema=input_schema, metadata=metadata
        )

    def run(**kwargs: Any) -> Any:
        result = execute(parse(kwargs))
        return result

    return StructuredTool.from_function(
        func=run, name=id, description=description, args_schema=input_schema, metadata=metadata
    )


def requires_approval(tool: BaseTool) -> bool:
    return bool((tool.metadata or {}).get("require_approval"))


def is_client_tool(tool: BaseTool) -> bool:
    return bool((tool.metadata or {}).get("client_tool"))


def tool_from_callable(key: str | None, item: Any) -> BaseTool:
    if not callable(item):
        raise ValueError(f"tool {key or item!r} must be a LangChain tool, a create_tool(...) result or a function")
    try:
        return as_langchain_tool(item) if key is None else as_langchain_tool(key, item)  # type: ignore[call-overload,no-any-return]
    except (ValueError, ValidationError, TypeError) as exc:
        raise ValueError(f"tool {key or getattr(item, '__name__', item)!r} could not become a tool: {exc}") from exc


def tools_by_name(value: Any) -> dict[str, BaseTool]:
    """`Agent(tools=...)` (a dict by name, or a list of tools and callables) as tools by
    their unique names."""
    if value is None:
        return {}
    items = value.items() if isinstance(value, dict) else ((None, t) for t in value)
    out: dict[str, BaseTool] = {}
    for key, item in items:
        tool = item if isinstance(item, BaseTool) else tool_from_callable(key, item)
        name = key or tool.name
        if name != tool.name:
            tool = tool.model_copy(update={"name": name})
        if name in out:
            raise ValueError(f"two tools are named {name!r}; tool names must be unique")
        out[name] = tool
    return out
