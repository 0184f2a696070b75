"""Task-completion scorers (SPEC §11): `create_scorer(...)` and an LLM-judge rubric.

Example:
    >>> scorer = create_scorer(id="has-sources", name="Cites sources").generate_score(
    ...     lambda ctx: 1.0 if "http" in ctx.run.output else 0.0)
    >>> scorer.id, scorer.name
    ('has-sources', 'Cites sources')
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from supervisor_graph.declaration.models import parse_model_string, resolve_model_string
from supervisor_graph.nodes.gates.task_complete import Score, ScoringContext, TaskCompleteOptions, TaskCompleteResult
from supervisor_graph.nodes.spec import maybe_await

__all__ = [
    "CriterionVerdict",
    "FunctionScorer",
    "RubricScorer",
    "Score",
    "ScoringContext",
    "TaskCompleteOptions",
    "TaskCompleteResult",
    "create_rubric_scorer",
    "create_scorer",
]


class FunctionScorer:
    """A scorer backed by a function of the scoring context (sync or async) returning a
    float in [0, 1], `(score, reason)`, or `{"score": ..., "reason": ...}`."""

    def __init__(self, id: str, name: str | None = None, description: str | None = None) -> None:
        if not id:
            raise ValueError("create_scorer: id must be non-empty")
        self.id = id
        self.name = name or id
        self.description = description
        self._fn: Callable[[ScoringContext], Any] | None = None

    def generate_score(self, fn: Callable[[ScoringContext], Any]) -> FunctionScorer:
        self._fn = fn
        return self

    async def score(self, context: ScoringContext) -> Score:
        if self._fn is None:
            raise RuntimeError(f"scorer {self.id!r} has no score function: call .generate_score(fn)")
        value = await maybe_await(self._fn(context))
        reason: str | None = None
        if isinstance(value, tuple):
            value, reason = value
        elif isinstance(value, Mapping):
            reason = value.get("reason")
            value = value.get("score")
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
            raise ValueError(f"scorer {self.id!r} returned {value!r}; a score must be a number in [0, 1]")
        return Score(scorer_id=self.id, name=self.name, score=float(value), reason=reason)


def create_scorer(*, id: str, name: str | None = None, description: str | None = None) -> FunctionScorer:
    """A scorer; give it its function with `.generate_score(fn)`."""
    return FunctionScorer(id=id, name=name, description=description)


class CriterionVerdict(BaseModel):
    """The judge's structured answer for one criterion."""

    met: bool = Field(description="Whether the answer fully meets the criterion.")
    reason: str = Field(description="One sentence on why.")


_JUDGE = (
    "You grade an assistant's answer against one criterion. Be strict: the criterion is met only "
    "if the answer fully satisfies it. Reply with the structured verdict only."
)


class RubricScorer:
    """LLM-as-judge: a separate model grades the answer against each criterion with
    structured output; the score is the share of criteria met, and unmet criteria
    (with the judge's reasons) become the feedback."""

    def __init__(self, model: BaseChatModel | str, criteria: Sequence[Mapping[str, str]], id: str, name: str) -> None:
        if not criteria:
            raise ValueError("create_rubric_scorer: give at least one criterion ({'description': ...})")
        self.id, self.name = id, name
        self.criteria = [str(c["description"]) for c in criteria]
        if isinstance(model, str):
            parse_model_string(model)  # a bad string or a missing package is an error here; the key is needed at first use
            self.model_string: str | None = model
            self._judge_model: BaseChatModel | None = None
        elif isinstance(model, BaseChatModel):
            self.model_string, self._judge_model = None, model
        else:
            raise TypeError(
                f"create_rubric_scorer: model must be a model string ('provider/model', e.g. 'openai/gpt-5-mini') or a LangChain "
                f"BaseChatModel, not {type(model).__name__}"
            )
        self._judge: Any = None

    @property
    def judge(self) -> Any:
        """The judge model with structured output (built at first use)."""
        if self._judge is None:
            model = self._judge_model or resolve_model_string(self.model_string or "")
            self._judge = model.with_structured_output(CriterionVerdict)
        return self._judge

    async def _verdict(self, context: ScoringContext, criterion: str) -> CriterionVerdict | str:
        prompt = f"Request:\n{context.run.input}\n\nAnswer:\n{context.run.output}\n\nCriterion:\n{criterion}"
        try:
            verdict = await self.judge.ainvoke([SystemMessage(_JUDGE), HumanMessage(prompt)])
        except Exception as exc:  # noqa: BLE001 - a broken judge fails the criterion, with a reason
            return f"the judge's verdict could not be read ({type(exc).__name__})"
        if isinstance(verdict, CriterionVerdict):
            return verdict
        if isinstance(verdict, Mapping):
            try:
                return CriterionVerdict.model_validate(verdict)
            except ValueError:
                pass
        return "the judge returned no valid verdict"

    async def score(self, context: ScoringContext) -> Score:
        verdicts = await asyncio.gather(*(self._verdict(context, c) for c in self.criteria))
        unmet = []
        met = 0
        for criterion, verdict in zip(self.criteria, verdicts, strict=True):
            if isinstance(verdict, CriterionVerdict) and verdict.met:
                met += 1
            else:
                why = verdict.reason if isinstance(verdict, CriterionVerdict) else verdict
                unmet.append(f"{criterion} ({why})")
        reason = "Unmet criteria: " + "; ".join(unmet) if unmet else "All criteria met."
        return Score(scorer_id=self.id, name=self.name, score=met / len(self.criteria), reason=reason)


def create_rubric_scorer(
    *, model: BaseChatModel | str, criteria: Sequence[Mapping[str, str]], id: str = "rubric", name: str = "Rubric"
) -> RubricScorer:
    """An LLM-judge scorer grading each of `criteria` (`[{"description": ...}, ...]`);
    `model` is a model string (`"openai/gpt-5-mini"`) or a LangChain chat model."""
    return RubricScorer(model=model, criteria=criteria, id=id, name=name)
