"""What a case file holds (SPEC §31): the case and its expectations as pydantic models,
checked field by field so a mistake names its field (`errors.py` turns it into one line
naming the file and the case)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "MATCHERS",
    "ORDERS",
    "Case",
    "Decision",
    "DelegationExpect",
    "Expect",
    "MemorySetting",
    "Order",
    "OutputExpect",
    "ScorerSpec",
    "TextMatch",
    "ToolExpect",
    "is_matcher",
]

Order = Literal["strict", "in_order", "unordered", "subset", "superset"]
ORDERS = ("strict", "in_order", "unordered", "subset", "superset")
MATCHERS = ("contains", "not_contains", "regex", "equals")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TextMatch(_Strict):
    """Matchers on a text: every one given must hold. `contains` / `not_contains` take a
    string or a list of strings (all of them); `regex` is searched (`re.search`)."""

    contains: str | list[str] | None = None
    not_contains: str | list[str] | None = None
    regex: str | None = None
    equals: str | None = None

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"invalid regular expression {value!r}: {exc}") from None
        return value

    def problems(self, text: str, what: str) -> list[str]:
        """Why `text` does not match (empty when it does)."""
        found = []
        shown = _short(text)
        for needle in _listed(self.contains):
            if needle not in text:
                found.append(f"{what} {shown} does not contain {needle!r}")
        for needle in _listed(self.not_contains):
            if needle in text:
                found.append(f"{what} {shown} contains {needle!r}")
        if self.regex is not None and re.search(self.regex, text) is None:
            found.append(f"{what} {shown} does not match /{self.regex}/")
        if self.equals is not None and text != self.equals:
            found.append(f"{what} {shown} is not {self.equals!r}")
        return found


def _listed(value: str | list[str] | None) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def _short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def is_matcher(value: Any) -> bool:
    """A dict of matchers (`{"contains": "x"}`) rather than a value to be equal to."""
    return isinstance(value, dict) and bool(value) and all(key in MATCHERS for key in value)


def value_problems(expected: Any, actual: Any, what: str) -> list[str]:
    """An argument or object field: a matcher dict on its text, else equality."""
    if is_matcher(expected):
        text = actual if isinstance(actual, str) else "" if actual is None else repr(actual)
        return TextMatch.model_validate(expected).problems(text, what)
    if actual != expected:
        return [f"{what} is {actual!r}, not {expected!r}"]
    return []


def _string_as(key: str) -> Any:
    """A model's shorthand: a bare string read as `{key: the string}`."""

    def read(data: Any) -> Any:
        return {key: data} if isinstance(data, str) else data

    return model_validator(mode="before")(read)


def _check_matcher_dicts(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """Each value of `value` that uses a matcher key is a matcher (`_check_matcher_dict`)."""
    for key, matcher in (value or {}).items():
        _check_matcher_dict(matcher, key)
    return value


class ToolExpect(_Strict):
    """An expected tool call: its name and matchers on some of its arguments (the ones
    not named are not checked)."""

    name: str = Field(min_length=1)
    args: dict[str, Any] | None = None

    _from_name = _string_as("name")
    _matchers = field_validator("args")(_check_matcher_dicts)

    def describe(self) -> str:
        args = ", ".join(f"{k}={_describe_value(v)}" for k, v in (self.args or {}).items())
        return f"{self.name}({args})"


def _check_matcher_dict(value: Any, where: str) -> None:
    """A dict that uses a matcher key must use only matcher keys (a typo is an error,
    never a silent equality check)."""
    if isinstance(value, dict) and any(key in MATCHERS for key in value):
        unknown = [key for key in value if key not in MATCHERS]
        if unknown:
            raise ValueError(f"{where}: unknown matcher {unknown[0]!r} (use {', '.join(MATCHERS)})")
        TextMatch.model_validate(value)


def _describe_value(value: Any) -> str:
    if is_matcher(value):
        return " & ".join(f"{k} {v!r}" for k, v in value.items())
    return repr(value)


class DelegationExpect(_Strict):
    """An expected delegation: the subagent's key, matchers on the prompt it got, its own
    tool calls and its nested delegations, each list with its `order`."""

    agent: str = Field(min_length=1)
    prompt: TextMatch | None = None
    success: bool | None = None
    tools: list[ToolExpect] | None = None
    tools_order: Order = "strict"
    delegations: list[DelegationExpect] | None = None
    order: Order = "strict"

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"agent": data}
        if isinstance(data, dict) and isinstance(data.get("prompt"), str):
            return {**data, "prompt": {"contains": data["prompt"]}}
        return data

    def describe(self) -> str:
        prompt = f" (prompt {_describe_value(self.prompt.model_dump(exclude_none=True))})" if self.prompt else ""
        return f"{self.agent}{prompt}"


class OutputExpect(TextMatch):
    """Matchers on the final answer; `object` checks fields of the validated object when
    the agent has an output schema; `similar_to` passes when the answer's ROUGE-1 F1 with
    that text is at least `similarity` (what ADK's response match measures)."""

    object: dict[str, Any] | None = None
    similar_to: str | None = None
    similarity: float = Field(default=0.8, ge=0.0, le=1.0)

    _shorthand = _string_as("contains")
    _fields = field_validator("object")(_check_matcher_dicts)


class ScorerSpec(_Strict):
    """A scorer by import path (`module:attr`, a `create_scorer` or rubric object), the
    score it must reach, and for a judge how many samples (it passes by majority)."""

    scorer: str
    threshold: float = Field(default=1.0, ge=0.0, le=1.0)
    samples: int = Field(default=1, ge=1, le=15)

    _from_path = _string_as("scorer")

    @field_validator("scorer")
    @classmethod
    def _import_path(cls, value: str) -> str:
        if not re.fullmatch(r"[\w.]+:[\w.]+", value):
            raise ValueError(f"{value!r} is not an import path: name a scorer as module:attr")
        return value


class Decision(_Strict):
    """One answer to a pause: approve, edit (approve with these arguments) or reject (with
    a reason the model sees)."""

    decision: Literal["approve", "edit", "reject"]
    args: dict[str, Any] | None = None
    message: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"decision": data}
        if isinstance(data, dict) and len(data) == 1 and next(iter(data)) in ("approve", "edit", "reject"):
            kind, value = next(iter(data.items()))
            if kind == "edit":
                return {"decision": "edit", "args": value}
            if kind == "reject":
                return {"decision": "reject", "message": value if isinstance(value, str) else None}
            return {"decision": "approve"}
        return data

    @model_validator(mode="after")
    def _edit_has_args(self) -> Decision:
        if self.decision == "edit" and self.args is None:
            raise ValueError("an edit needs its args: {edit: {arg: value}}")
        return self


class Expect(_Strict):
    """What a case expects of its run: the answer, the delegation tree (`delegations`,
    ordered by `order`), the top agent's own tool calls (`tools`), every call of the run
    (`all_tools`), how it ends, what it may cost, and the scorers it must pass."""

    output: OutputExpect | None = None
    delegations: list[DelegationExpect] | None = None
    order: Order = "strict"
    tools: list[ToolExpect] | None = None
    tools_order: Order = "strict"
    all_tools: list[ToolExpect] | None = None
    """Every tool call of the run, any agent, depth first in the order made (a flat
    trajectory, as ADK and agentevals see one)."""
    all_tools_order: Order = "strict"
    finish_reason: str | list[str] | None = None
    max_tokens: int | None = Field(default=None, ge=0)
    max_seconds: float | None = Field(default=None, gt=0)
    max_tool_calls: int | None = Field(default=None, ge=0)
    scorers: list[ScorerSpec] = Field(default_factory=list)


class MemorySetting(_Strict):
    """The thread a case runs on (a fresh one per case by default; a multi-turn case runs
    all its turns on one thread) and its resource."""

    thread: str | None = None
    resource: str = "eval"


class Case(_Strict):
    """One case: its input (a message, or several turns on one thread), what it must show,
    the decisions for its pauses, and its run options."""

    id: str = Field(min_length=1)
    input: str | list[str] = Field(min_length=1)
    expect: Expect = Field(default_factory=Expect)
    approvals: list[Decision] = Field(default_factory=list)
    request_context: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, Any] | None = None
    memory: MemorySetting = Field(default_factory=MemorySetting)
    max_steps: int | None = Field(default=None, ge=1)
    tags: list[str] = Field(default_factory=list)

    @field_validator("input", mode="before")
    @classmethod
    def _turns(cls, value: Any) -> Any:
        if isinstance(value, list):  # turns as {"role": "user", "content": ...} too
            return [item.get("content") if isinstance(item, dict) else item for item in value]
        return value

    @property
    def turns(self) -> list[str]:
        return [self.input] if isinstance(self.input, str) else list(self.input)
