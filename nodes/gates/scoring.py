"""The task-completion gate's contracts (SPEC §11): the `is_task_complete` option, what a
scorer receives and returns, and what `on_complete` gets.

They live apart from the gate's node so that the option's validation, registered here
with `capability_option`, imports neither the node nor everything a node needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict, Field

from supervisor_graph.nodes.options import capability_option
from supervisor_graph.nodes.scope.context import RequestContext

__all__ = [
    "RunView",
    "Score",
    "Scorer",
    "ScoringContext",
    "TaskCompleteOptions",
    "TaskCompleteResult",
]


class RunView(BaseModel):
    """The run a scorer judges: `input` (the user's request) and `output` (the answer)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    input: str
    output: str
    messages: list[BaseMessage] = Field(default_factory=list)
    output_object: Any = None
    """The validated answer when the agent has an output schema (SPEC §28), so a scorer
    can check fields; a model instance for a pydantic model, a dict otherwise."""


class ScoringContext(BaseModel):
    """What a scorer's function receives: the run so far (`run.output`, ...), the iteration and the request context."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run: RunView
    iteration: int
    request_context: RequestContext


class Score(BaseModel):
    """One scorer's verdict: `score` in [0, 1] and why."""

    scorer_id: str
    name: str
    score: float = Field(ge=0.0, le=1.0)
    reason: str | None = None
    passed: bool = False


@runtime_checkable
class Scorer(Protocol):
    id: str
    name: str

    async def score(self, context: ScoringContext) -> Score: ...


class TaskCompleteResult(BaseModel):
    """What `on_complete` receives."""

    complete: bool
    scores: list[Score]
    feedback: list[str]


class TaskCompleteOptions(BaseModel):
    """`is_task_complete={...}`."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    scorers: list[Any] = Field(min_length=1)
    strategy: Literal["all", "any"] = "all"
    threshold: float = Field(default=1.0, ge=0.0, le=1.0, strict=True)  # strict: no booleans
    on_complete: Callable[..., Any] | None = None

    def model_post_init(self, _context: Any) -> None:
        for scorer in self.scorers:
            if not isinstance(scorer, Scorer):
                raise ValueError(
                    f"is_task_complete.scorers: {scorer!r} is not a scorer; build one with "
                    "create_scorer(...).generate_score(fn) or create_rubric_scorer(...)"
                )


def _task_complete(value: Any, _where: str) -> TaskCompleteOptions:
    return value if isinstance(value, TaskCompleteOptions) else TaskCompleteOptions.model_validate(value)


capability_option("is_task_complete", _task_complete)
