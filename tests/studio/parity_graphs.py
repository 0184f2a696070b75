"""Small compiled graphs that `langgraph dev` and the Aegra cluster serve, one per
capability of tests/embedding/test_parity.py (SPEC §23): the same node code, driven over
HTTP. `tests/studio/parity_checks.py` drives each the same way on both server kinds.

The server's graph `parity_<name>` is this module's `<name>`: `<name>_agent` compiled
without a checkpointer (the server supplies one). Every model answers from a
`ScriptedChatModel` policy, so a run depends on its messages only. What a check
needs to see happens in the messages (a subagent answers with the prompt it got, a
supervisor says whether its input had an unanswered call): the models run in the
server's process, out of the test's reach. This module imports nothing from `tests`:
the servers load it by path.
"""

from __future__ import annotations

import asyncio
import sys
import types
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, RequestContext, create_scorer, create_tool, current_request_context, suspend
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def _asked(messages: list[Any]) -> str:
    return next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))


def _relay(call: Any) -> Any:
    """A supervisor policy: `call(messages)` first, then the subagent's or tool's result."""
    return lambda m: m[-1].content if isinstance(m[-1], ToolMessage) else call(m)


def _worker(policy: Any, **kwargs: Any) -> Agent:
    return Agent(
        id="worker-agent", description="Works.", model=ScriptedChatModel(policy=policy, record_calls=False), **kwargs
    )


def _boss(policy: Any, **kwargs: Any) -> Agent:
    return Agent(id="boss", model=ScriptedChatModel(policy=policy, record_calls=False), **kwargs)


# -- delegation hooks from default_options: the start hook rewrites the prompt, the
#    complete hook the result ---------------------------------------------------------


def _start(ctx: Any) -> dict[str, Any]:
    return {"modified_prompt": ctx.prompt + " (carefully)"}


def _complete(ctx: Any) -> dict[str, Any]:
    return {"result_text": ctx.result.text.upper()}


hooks_agent = _boss(
    _relay(lambda m: delegate("worker", "it")),
    agents={"worker": _worker(lambda m: f"did {m[-1].content}")},
    default_options={"delegation": {"on_delegation_start": _start, "on_delegation_complete": _complete}},
)


# -- result references: the second delegation names the first one's result -----------


def _references_boss(messages: list[Any]) -> Any:
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return delegate("worker", "first")
    if len(results) == 1:
        return tool_call("agent-worker", {"prompt": "second", "context_from_refs": ["worker-agent-1"]})
    return results[-1].content


references_agent = _boss(
    _references_boss,
    agents={"worker": _worker(lambda m: f"worked on <<{m[-1].content}>>")},
    default_options={"delegation": {"enable_result_references": True}},
)


# -- task-completion scorers from default_options: the first answer has no link --------

_has_link = create_scorer(id="link", name="Has a link").generate_score(
    lambda ctx: 1.0 if "http" in ctx.run.output else 0.0
)
scorer_agent = Agent(
    id="boss",
    model=ScriptedChatModel(
        policy=lambda m: "see http://example.org" if "not complete yet" in str(m[-1].content) else "no link yet",
        record_calls=False,
    ),
    default_options={"is_task_complete": {"scorers": [_has_link]}},
)


# -- suspend() inside a subagent's tool ------------------------------------------------


class Ask(BaseModel):
    question: str


def _ask(args: Ask) -> str:
    return f"using {suspend({'question': args.question})}"


suspended_agent = _boss(
    _relay(lambda m: delegate("worker", "ask")),
    agents={
        "worker": _worker(
            _relay(lambda m: tool_call("ask_user", {"question": "Which?"})),
            tools=[create_tool(id="ask_user", description="Ask the user.", input_schema=Ask, execute=_ask)],
        )
    },
)


# -- decisions on approvals (SPEC §29): a payer at depth one and one at depth two -------


class Pay(BaseModel):
    amount: int


def _payer(id: str) -> Agent:
    pay = create_tool(
        id="pay", description="Pay.", input_schema=Pay, execute=lambda a: f"paid {a.amount}", require_approval=True
    )
    return Agent(
        id=id, description="Pays.", tools=[pay],
        model=ScriptedChatModel(policy=_relay(lambda m: tool_call("pay", {"amount": 1200})), record_calls=False),
    )


def _all_results(messages: list[Any]) -> str:
    return " | ".join(sorted(str(m.content) for m in messages if isinstance(m, ToolMessage)))


decisions_agent = _boss(
    lambda m: _all_results(m) if isinstance(m[-1], ToolMessage) else [delegate("near", "pay"), delegate("middle", "pay")],
    agents={
        "near": _payer("near-agent"),
        "middle": Agent(
            id="middle-agent", description="Delegates.", agents={"deep": _payer("deep-agent")},
            model=ScriptedChatModel(policy=_relay(lambda m: delegate("deep", "pay")), record_calls=False),
        ),
    },
)


# -- a client tool (no execute): the run ends with the call pending ---------------------

client_agent = _boss(
    lambda m: (
        f"ui said {m[-1].content}"
        if isinstance(m[-1], ToolMessage)
        else tool_call("confirm_in_ui", {"question": "ok?"})
    ),
    tools=[create_tool(id="confirm_in_ui", description="Ask the UI.", input_schema=Ask)],
)


# -- the request context, from the run's context, in a subagent's tool ------------------


def whoami() -> str:
    """Who asks."""
    return str(current_request_context().get("user"))


context_agent = _boss(
    _relay(lambda m: delegate("worker", "who?")),
    agents={
        "worker": _worker(
            lambda m: f"it is {m[-1].content}" if isinstance(m[-1], ToolMessage) else tool_call("whoami"),
            tools=[whoami],
        )
    },
)


# -- a subagent set chosen per run from the request context -----------------------------


def _specialist(name: str) -> Agent:
    return Agent(
        id=f"{name}-agent",
        description=f"The {name} specialist.",
        model=ScriptedChatModel(policy=lambda m: f"{name} done", record_calls=False),
    )


TEAM = {name: _specialist(name) for name in ("legal", "sales", "support")}


def _choose(ctx: RequestContext) -> dict[str, Agent]:
    if ctx.get("tier") == "enterprise":
        return {"legal": TEAM["legal"], "sales": TEAM["sales"]}
    return {"support": TEAM["support"]}


dynamic_agent = _boss(
    lambda m: f"boss: {m[-1].content}" if isinstance(m[-1], ToolMessage) else delegate(_asked(m), "help"),
    agents=_choose,
)


# -- subagent versions: the researcher answers with its system prompt -------------------


def _system(messages: list[Any]) -> str:
    return str(messages[0].content) if messages and isinstance(messages[0], SystemMessage) else ""


versions_agent = _boss(
    _relay(lambda m: delegate("research", "go")),
    instructions="PARENT CODE",
    agents={
        "research": Agent(
            id="research-agent",
            description="Finds facts.",
            instructions="RESEARCH CODE",
            model=ScriptedChatModel(policy=lambda m: f"said: {_system(m)}", record_calls=False),
        )
    },
)


# -- cancellation: two delegations whose subagents sleep in a tool; on "next" the
#    supervisor says whether its input still had a call without a result ---------------


class Nap(BaseModel):
    seconds: float


async def _nap(args: Nap) -> str:
    await asyncio.sleep(args.seconds)
    return "rested"


def _open_calls(messages: list[Any]) -> list[str | None]:
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls if c["id"] not in answered]


def _slow_boss(messages: list[Any]) -> Any:
    if _asked(messages) == "next":
        open_calls = _open_calls(messages)
        return f"unanswered calls: {open_calls}" if open_calls else "fresh answer"
    if isinstance(messages[-1], ToolMessage):
        return f"finished: {messages[-1].content}"
    return [delegate("slow", "x"), delegate("slow", "y")]


slow_agent = _boss(
    _slow_boss,
    agents={
        "slow": Agent(
            id="slow-agent",
            description="Slow.",
            model=ScriptedChatModel(policy=_relay(lambda m: tool_call("nap", {"seconds": 3.0})), record_calls=False),
            tools=[create_tool(id="nap", description="Rest a while.", input_schema=Nap, execute=_nap)],
        )
    },
)


# -- a background delegation whose task takes a few seconds (the Aegra crash test):
#    tests/studio/background_graph.py with a slow researcher, same answers ---------------


def _background_boss(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return f"research says: {last.content}"
    if str(last.content).startswith("[Background task"):
        return "reported: " + " / ".join(str(last.content).splitlines())
    return delegate("research", "dig")


background_slow_agent = Agent(
    id="boss",
    model=ScriptedChatModel(policy=_background_boss, record_calls=False),
    agents={
        "research": Agent(
            id="research-agent",
            description="Researches.",
            model=ScriptedChatModel(policy=lambda m: "server facts", latency=3.0, record_calls=False),
        )
    },
    background_tasks={"tools": {"research": {"timeout_ms": 60_000}}},
)


# -- a background task whose subagent needs an approval: it waits on the task's own
#    thread, is resumed there, and then reports to the parent ---------------------------


class Note(BaseModel):
    text: str


_note = create_tool(id="note", description="Take a note.", input_schema=Note, execute=lambda a: f"noted {a.text}", require_approval=True)

background_approval_agent = Agent(
    id="boss",
    model=ScriptedChatModel(policy=_background_boss, record_calls=False),
    agents={
        "research": Agent(
            id="research-agent",
            description="Researches.",
            tools=[_note],
            model=ScriptedChatModel(
                policy=lambda m: str(m[-1].content) if isinstance(m[-1], ToolMessage) else tool_call("note", {"text": "bees"}),
                record_calls=False,
            ),
        )
    },
    background_tasks={"tools": {"research": {"timeout_ms": 60_000}}},
)


# -- the control tools on a server: check, update and cancel a running task -----------


def _task_id(messages: list[Any]) -> str:
    started = next(m for m in messages if isinstance(m, ToolMessage) and "Task ID: " in str(m.content))
    return str(started.content).split("Task ID: ")[1].split(".")[0]


def _control_boss(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        prefix = "research says" if last.name == "agent-research" else "control"
        return f"{prefix}: {last.content}"
    text = str(last.content)
    if text.startswith("[Background task"):
        return "reported: " + " / ".join(text.splitlines())
    if text in ("check", "cancel"):
        return tool_call(f"{text}_background_task", {"task_id": _task_id(messages)})
    if text == "update":
        return tool_call("update_background_task", {"task_id": _task_id(messages), "instructions": "be brief"})
    return delegate("research", "dig")


class _SlowFirstTry(ScriptedChatModel):
    """Never answers within the task timeout unless its prompt carries updated
    instructions (the next try): the task runs until the control tools act on it."""

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        if "Updated instructions" not in str(messages[-1].content):
            await asyncio.sleep(120)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)

    async def _astream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        if "Updated instructions" not in str(messages[-1].content):
            await asyncio.sleep(120)
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk


background_control_agent = Agent(
    id="boss",
    model=ScriptedChatModel(policy=_control_boss, record_calls=False),
    agents={
        "research": Agent(
            id="research-agent",
            description="Researches.",
            model=_SlowFirstTry(policy=lambda m: f"facts for: {m[-1].content}", record_calls=False),
        )
    },
    background_tasks={"tools": {"research": {"timeout_ms": 60_000}}},
)


# -- compaction (SPEC §25): a model that refuses inputs over 3,000 characters keeps
#    answering a long conversation, its older turns summarised -------------------------


def _windowed(messages: list[Any]) -> Any:
    size = sum(len(str(m.content)) for m in messages)
    return ValueError(f"input of {size} characters is over the window") if size > 3000 else "answer " + "x" * 300


compaction_agent = Agent(
    id="boss",
    model=ScriptedChatModel(policy=_windowed, record_calls=False),
    compaction={
        "max_tokens": 500,
        "keep_last": 4,
        "model": ScriptedChatModel(policy=lambda m: "summary of the earlier turns", record_calls=False),
    },
)


# -- structured output (SPEC §28): the worker answers a typed object; the supervisor
#    answers its declared schema, or the one the run's context gives ---------------------


class Summary(BaseModel):
    title: str
    facts: list[str]


def _structured(messages: list[Any]) -> Any:
    last = messages[-1]
    if not isinstance(last, ToolMessage):
        return delegate("worker", "facts")
    if "count" in _asked(messages):
        return tool_call("final_answer", {"count": 2})
    return tool_call("final_answer", {"title": "summary", "facts": [str(last.content)]})


structured_agent = _boss(
    _structured,
    agents={"worker": _worker(lambda m: tool_call("final_answer", {"facts": ["f1", "f2"]}), output_schema=Summary.model_json_schema() | {"required": ["facts"]})},
    output_schema=Summary,
)


# -- time travel (SPEC §34): a researcher with one thread per parent thread answers with
#    every prompt it has had, so an answer shows what its memory holds in this branch ----


def _topics(messages: list[Any]) -> str:
    return "sub saw " + " | ".join(str(m.content) for m in messages if isinstance(m, HumanMessage))


time_travel_agent = _boss(
    lambda m: f"done: {m[-1].content}" if isinstance(m[-1], ToolMessage) else delegate("research", f"topic {m[-1].content}"),
    agents={
        "research": Agent(
            id="research-agent", description="Researches.", inherit_context=False,
            model=ScriptedChatModel(policy=_topics, record_calls=False),
        )
    },
    subagent_threads="per_parent_thread",
)


# -- the graphs the servers serve as `parity_<name>` ------------------------------------
#
# A server loads this module once per graph id it serves (once per graph), each time as a new
# module. The graphs are compiled at the first load of a process only and kept in
# `sys.modules` for the later ones: compiling all ten at every load added seconds to
# every server's start.

_COMPILED = "_supervisor_graph_tests_parity_graphs"


# -- LangChain middleware (SPEC §33): the boss's PII redaction and model-call limit, which
#    its worker inherits --------------------------------------------------------------


def _middleware() -> list[Any]:
    from langchain.agents.middleware import ModelCallLimitMiddleware, PIIMiddleware

    return [PIIMiddleware("email", strategy="redact"), ModelCallLimitMiddleware(thread_limit=3, exit_behavior="end")]


middleware_agent = _boss(
    _relay(lambda m: delegate("worker", _asked(m))),
    agents={"worker": _worker(lambda m: "worked on: " + _asked(m))},
    middleware=_middleware(),
)


def _compiled_once(agents: dict[str, Agent]) -> dict[str, Any]:
    held = sys.modules.get(_COMPILED)
    if held is None:
        held = types.ModuleType(_COMPILED)
        # no checkpointer: the server supplies one
        held.__dict__["graphs"] = {name: agent.compile() for name, agent in agents.items()}
        sys.modules[_COMPILED] = held
    return dict(held.__dict__["graphs"])


_graphs = _compiled_once(
    {
        "hooks": hooks_agent,
        "references": references_agent,
        "scorer": scorer_agent,
        "suspended": suspended_agent,
        "client": client_agent,
        "context": context_agent,
        "dynamic": dynamic_agent,
        "versions": versions_agent,
        "slow": slow_agent,
        "background_slow": background_slow_agent,
        "background_approval": background_approval_agent,
        "background_control": background_control_agent,
        "compaction": compaction_agent,
        "structured": structured_agent,
        "decisions": decisions_agent,
        "middleware": middleware_agent,
        "time_travel": time_travel_agent,
    }
)
hooks = _graphs["hooks"]
references = _graphs["references"]
scorer = _graphs["scorer"]
suspended = _graphs["suspended"]
client = _graphs["client"]
context = _graphs["context"]
dynamic = _graphs["dynamic"]
versions = _graphs["versions"]
slow = _graphs["slow"]
background_slow = _graphs["background_slow"]
background_approval = _graphs["background_approval"]
background_control = _graphs["background_control"]
compaction = _graphs["compaction"]
structured = _graphs["structured"]
decisions = _graphs["decisions"]
middleware = _graphs["middleware"]
time_travel = _graphs["time_travel"]
