"""Guardrails (SPEC §30): guards at the boundaries of the delegation tree, as users import them.

    from supervisor_graph.guardrails import guardrail, pii, prompt_injection
    Agent(..., guardrails=[pii(at=["input", "output"]), prompt_injection(model="openai/gpt-5-mini"),
                           guardrail(my_check, at="tool_result")])

Their home is `nodes/guards/` (`supervisor_graph.nodes.guards`): the protocol (contexts,
verdicts, declarations: `core`), where the verdicts take effect, and the built-in guards:
`pii` (deterministic detectors in `detectors`, presidio as an extra in `presidio`) and the
judge behind `prompt_injection`, `moderation` and `topic` (`judges`). This module
re-exports them and holds only the judges' factories, because they read model strings
(`supervisor_graph.declaration.models`), which `nodes` may not import. It imports `nodes`
and `declaration`; nothing above them.

    >>> from supervisor_graph.testing import ScriptedChatModel, tool_call
    >>> judge = ScriptedChatModel(responses=[tool_call("GuardJudgement", {"flagged": True, "reason": "asks to ignore the rules"})])
    >>> guard = prompt_injection(model=judge)
    >>> sorted(guard.at), guard.name
    (['result', 'tool_result'], 'prompt_injection')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel

from supervisor_graph.declaration.models import parse_model_string, resolve_model_string
from supervisor_graph.nodes.guards.core import (
    BOUNDARIES,
    Allow,
    Block,
    Boundary,
    Escalate,
    GuardContext,
    GuardError,
    Guardrail,
    Redact,
    Retry,
    Tripwire,
    TripwireError,
    Verdict,
    allow,
    block,
    escalate,
    guardrail,
    redact,
    retry,
)
from supervisor_graph.nodes.guards.detectors import PII_KINDS, PIIMatch, detect_pii
from supervisor_graph.nodes.guards.judges import (
    DEFAULT_POLICY,
    INJECTION,
    GuardJudgeError,
    GuardJudgement,
    JudgeModel,
    judge_guardrail,
    moderation_instructions,
    topic_instructions,
)
from supervisor_graph.nodes.guards.pii import pii

__all__ = [
    "BOUNDARIES",
    "PII_KINDS",
    "Allow",
    "Block",
    "Boundary",
    "Escalate",
    "GuardContext",
    "GuardError",
    "GuardJudgeError",
    "GuardJudgement",
    "Guardrail",
    "PIIMatch",
    "Redact",
    "Retry",
    "Tripwire",
    "TripwireError",
    "Verdict",
    "allow",
    "block",
    "detect_pii",
    "escalate",
    "guardrail",
    "moderation",
    "pii",
    "prompt_injection",
    "redact",
    "retry",
    "topic",
]


def _judge_model(name: str, model: BaseChatModel | str) -> JudgeModel:
    """The judge as `nodes` takes it: a model string is checked now (a bad string or a
    missing package fails at declaration) and resolved at the guard's first check (the
    provider's key is needed only then)."""
    if isinstance(model, str):
        parse_model_string(model)
        return partial(resolve_model_string, model)
    if isinstance(model, BaseChatModel):
        return model
    raise TypeError(
        f"{name}: model must be a model string ('provider/model', e.g. 'openai/gpt-5-mini') or a LangChain "
        f"BaseChatModel, not {type(model).__name__}"
    )


def prompt_injection(
    model: BaseChatModel | str,
    *,
    at: str | Iterable[str] = ("tool_result", "result"),
    on_flag: Literal["block", "escalate"] = "block",
    name: str = "prompt_injection",
    instructions: str = INJECTION,
    **settings: Any,
) -> Guardrail:
    """A judge for indirect prompt injection: text that gives the agent reading it orders.
    Built for the boundaries where outside text comes in: `tool_result` (what a tool
    read) and `result` (what a subagent hands back). `settings` are `Guardrail`'s."""
    return judge_guardrail(name, _judge_model(name, model), instructions, at, on_flag, settings)


def moderation(
    model: BaseChatModel | str,
    *,
    policy: str = DEFAULT_POLICY,
    at: str | Iterable[str] = ("input", "output"),
    on_flag: Literal["block", "escalate"] = "block",
    name: str = "moderation",
    **settings: Any,
) -> Guardrail:
    """A judge of content against `policy` (what to flag, in plain words; a general one by
    default), on what the user sends and what the agent answers by default."""
    return judge_guardrail(name, _judge_model(name, model), moderation_instructions(policy), at, on_flag, settings)


def topic(
    allowed: Sequence[str],
    model: BaseChatModel | str,
    *,
    at: str | Iterable[str] = ("input",),
    on_flag: Literal["block", "escalate"] = "block",
    name: str = "topic",
    **settings: Any,
) -> Guardrail:
    """A judge that keeps the conversation on the `allowed` topics: a user message about
    anything else is flagged (greetings and follow-ups on an allowed topic pass)."""
    instructions = topic_instructions(allowed)
    return judge_guardrail(name, _judge_model(name, model), instructions, at, on_flag, settings)
