"""The supervisor the HTTP tests serve, in process and with
`supervisor-graph serve tests/agui/served.py:supervisor` (self-contained: the command
loads it as a file).

The supervisor's scripted model routes on the latest user message: "pay" delegates to
the payer (whose `pay` tool needs approval), "research" to the researcher, "slow" to a
subagent that takes two seconds, "both" to the researcher and the slow one at once, "which account" calls a tool that suspends for a form, "remember" updates its working memory (the client's
shared state); anything else is echoed.
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool, suspend
from supervisor_graph.nodes.state import FEEDBACK_MARK
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

LEDGER: list[int] = []


class Amount(BaseModel):
    amount: int


class Notes(BaseModel):
    notes: list[str] = []
    favourite: str | None = None


def _pay(args: Amount) -> str:
    LEDGER.append(args.amount)
    return f"paid {args.amount}"


def _after(prefix: str, call: Any):
    def policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"{prefix}: {messages[-1].content}"
        return call

    return policy


pay = create_tool(id="pay", description="Pay an amount.", input_schema=Amount, execute=_pay, require_approval=True)


class Question(BaseModel):
    question: str


class Account(BaseModel):
    account: str
    seats: int


def _ask(args: Question) -> str:
    answer = suspend({"message": args.question})
    return f"using {answer.account} for {answer.seats} seats"


ask = create_tool(id="ask_account", description="Ask which account.", input_schema=Question, execute=_ask, resume_schema=Account)

payer = Agent(
    id="payer-agent",
    description="Pays invoices.",
    tools=[pay],
    model=ScriptedChatModel(policy=_after("payer", tool_call("pay", {"amount": 12})), model_name="payer-model", record_calls=False),
)
research = Agent(
    id="research-agent",
    description="Finds facts.",
    model=ScriptedChatModel(policy=lambda m: "- the sky is blue", model_name="research-model", record_calls=False),
)
slowpoke = Agent(
    id="slow-agent",
    description="Takes its time.",
    model=ScriptedChatModel(policy=lambda m: "finally done", latency=2.0, record_calls=False),
)


def _route(messages: list[Any]) -> Any:
    if messages and messages[-1].additional_kwargs.get(FEEDBACK_MARK) == "notice":
        messages = messages[:-1]  # the working memory's value, after the conversation (issue 51)
    if isinstance(messages[-1], ToolMessage) and messages[-1].name == "update_working_memory":
        return "remembered"
    if isinstance(messages[-1], ToolMessage):
        return "final: " + " | ".join(str(m.content) for m in messages if isinstance(m, ToolMessage))
    ask = next((str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage)), "")
    lowered = ask.lower()
    if "pay" in lowered:
        return delegate("payer", ask)
    if "research" in lowered:
        return delegate("research_agent", ask)
    if lowered.startswith("both"):  # two delegations at once: one quick, one slow
        return [delegate("research_agent", ask), delegate("slowpoke", ask)]
    if "slow" in lowered:
        return delegate("slowpoke", ask)
    if lowered.startswith("which account"):
        return tool_call("ask_account", {"question": "Which account should I use?"})
    if lowered.startswith("remember "):
        return tool_call("update_working_memory", {"memory": {"favourite": ask.split(" ", 1)[1]}})
    return f"echo: {ask}"


supervisor = Agent(
    id="supervisor",
    description="Routes work to its team.",
    agents={"payer": payer, "research_agent": research, "slowpoke": slowpoke},
    tools=[ask],
    model=ScriptedChatModel(policy=_route, model_name="boss-model", record_calls=False),
    # several server processes share one database in the multi-worker test
    memory=Memory(os.environ.get("SG_AGUI_STORAGE", ":memory:")),
    working_memory={"schema": Notes, "scope": "thread"},
)
