"""Cost in money (SPEC §33): what model calls cost in USD, priced from pydantic's
`genai-prices` table (never a price written here) by the provider and model that
answered (`response_metadata["model_provider"]` and `["model_name"]`). Cached input is
priced as the provider prices it: LangChain's `input_token_details["cache_read"]` and
`["cache_creation"]` are the table's cache reads and writes.

Unused is free: nothing here runs on a model call. A run's tokens are kept per agent
and model (`usage_by_model_of_run`, read from the messages `usage_by_agent` is read
from; a delegation's artifact carries its subagent's under `USAGE_BY_MODEL_KEY`) and
priced when a result's `cost` is first read (`RunCosts`), which is also when
`genai_prices` and its table are imported. Only a budget with a `cost` limit prices each
call as it arrives (`call_cost`), and only tracing prices an agent's span as it ends.

A model the table lacks (a local model, a test double, a provider it does not know), or
tokens that name no model (a remote subagent's total), have no price: their cost is
None, never 0, and so is any sum that includes them. One warning per model and process
says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

__all__ = [
    "USAGE_BY_MODEL_KEY",
    "ByModel",
    "RunCosts",
    "add_call",
    "call_cost",
    "model_key",
    "merge_models",
    "price",
    "price_models",
    "sum_costs",
    "token_usage_cost",
    "usage_by_model_of_run",
]

log = logging.getLogger("supervisor_graph")

# "provider:model" (as `init_chat_model` spells a model; a provider never holds a ":",
# a model may) -> that model's counts: input_tokens, output_tokens, and when reported
# cache_read, cache_creation (parts of input_tokens, as LangChain counts them)
ByModel = dict[str, dict[str, int]]

# The artifact key under which a delegation's tool message carries its subagent's tokens
# by agent path (relative, as `USAGE_BY_AGENT_KEY`'s) and model: priced when read.
USAGE_BY_MODEL_KEY = "usage_by_model"

_DETAILS = ("cache_read", "cache_creation")
# what the warning about tokens no model accounts for says
_NO_MODEL = "tokens that name no model"
_NO_MODEL_WHY = "a remote subagent's total, a summary, a custom guard's record_usage, or a model that does not say its name"
# models (keys) this process found no price for: warned about once, not looked up again
_UNPRICED: set[str] = set()


def model_key(message: Any) -> str:
    """`provider:model` of the model that gave `message` (or its JSON, as a server sends
    it; `:` when it names none)."""
    meta = message.get("response_metadata") if isinstance(message, Mapping) else getattr(message, "response_metadata", None)
    meta = meta or {}
    return f"{meta.get('model_provider') or ''}:{meta.get('model_name') or meta.get('model') or ''}"


def add_call(by_model: ByModel, key: str, usage: Mapping[str, Any]) -> None:
    """Add one call's LangChain `usage_metadata` to `by_model[key]`."""
    counts = by_model.get(key)
    if counts is None:
        counts = by_model[key] = {"input_tokens": 0, "output_tokens": 0}
    counts["input_tokens"] += int(usage.get("input_tokens") or 0)
    counts["output_tokens"] += int(usage.get("output_tokens") or 0)
    details = usage.get("input_token_details")
    if details:
        for name in _DETAILS:
            if n := details.get(name):
                counts[name] = counts.get(name, 0) + int(n)


def merge_models(into: ByModel, more: Any) -> None:
    """Add the counts of another `ByModel` (as an artifact stored it) to `into`."""
    if not isinstance(more, Mapping):
        return
    for key, counts in more.items():
        mine = into.setdefault(key, {"input_tokens": 0, "output_tokens": 0})
        for name, n in counts.items():
            mine[name] = mine.get(name, 0) + int(n or 0)


def usage_by_model_of_run(messages: Sequence[BaseMessage], start: int, agent_id: str) -> dict[str, ByModel]:
    """Each agent's tokens since `start` by model, keyed by path as
    `usage_by_agent_of_run` keys them (the same messages, so the same calls)."""
    out: dict[str, ByModel] = {}
    for i in range(start, len(messages)):
        message = messages[i]
        if isinstance(message, AIMessage):
            if message.usage_metadata:
                add_call(out.setdefault(agent_id, {}), model_key(message), message.usage_metadata)
        elif isinstance(message, ToolMessage) and isinstance(message.artifact, dict):
            nested = message.artifact.get(USAGE_BY_MODEL_KEY)
            if isinstance(nested, dict):
                for path, models in nested.items():
                    merge_models(out.setdefault(f"{agent_id}/{path}", {}), models)
    return out


def _unpriced(key: str, why: str) -> None:
    if key not in _UNPRICED:
        _UNPRICED.add(key)
        provider, _, model = key.partition(":")
        what = f"model {model!r}" + (f" of provider {provider!r}" if provider else "") if model else key
        log.warning("no price for %s (%s): its cost is None, and so is any total it is part of", what, why)


def price(key: str, counts: Mapping[str, int]) -> float | None:
    """USD for `counts` of model `key` (`provider:model`), None when the table has no price."""
    if key in _UNPRICED:
        return None
    provider, _, model = key.partition(":")
    if not model:
        _unpriced(_NO_MODEL, _NO_MODEL_WHY)
        return None
    try:
        from genai_prices import Usage as PricedUsage
        from genai_prices import calc_price
    except ImportError:  # pragma: no cover - a dependency; an install without it reports no cost
        _unpriced(key, "genai-prices is not installed")
        return None
    usage = PricedUsage(
        input_tokens=counts.get("input_tokens", 0),
        output_tokens=counts.get("output_tokens", 0),
        cache_read_tokens=counts.get("cache_read") or None,
        cache_write_tokens=counts.get("cache_creation") or None,
    )
    try:
        calculated = calc_price(usage, model, provider_id=provider or None)
    except (LookupError, ValueError) as exc:
        _unpriced(key, f"genai-prices: {exc}")
        return None
    return float(calculated.total_price)


def price_models(by_model: Mapping[str, Mapping[str, int]]) -> float | None:
    """USD for every model's counts, None when one of them has no price."""
    total = 0.0
    for key, counts in by_model.items():
        cost = price(key, counts)
        if cost is None:
            return None
        total += cost
    return total


def sum_costs(costs: Iterable[float | None]) -> float | None:
    """The sum of costs, None when one of them is unknown."""
    total = 0.0
    for cost in costs:
        if cost is None:
            return None
        total += cost
    return total


def call_cost(usage: Mapping[str, Any] | None, message: Any = None) -> float | None:
    """USD of one model call (its `usage_metadata`, the message that names its model)."""
    if not usage:
        return 0.0
    by_model: ByModel = {}
    key = model_key(message) if message is not None else ":"
    add_call(by_model, key, usage)
    return price(key, by_model[key])


def _get(entry: Any, snake: str, camel: str) -> Any:
    if isinstance(entry, Mapping):
        return entry.get(snake, entry.get(camel))
    return getattr(entry, snake, None)


def token_usage_cost(entries: Iterable[Any] | None) -> float | None:
    """USD of AG-UI `TokenUsage` entries (one per provider and model, as models or JSON)."""
    by_model: ByModel = {}
    for entry in entries or ():
        key = f"{_get(entry, 'provider', 'provider') or ''}:{_get(entry, 'model', 'model') or ''}"
        usage = {
            "input_tokens": _get(entry, "input_tokens", "inputTokens"),
            "output_tokens": _get(entry, "output_tokens", "outputTokens"),
            "input_token_details": {
                "cache_read": _get(entry, "cached_input_tokens", "cachedInputTokens"),
                "cache_creation": _get(entry, "cache_write_input_tokens", "cacheWriteInputTokens"),
            },
        }
        add_call(by_model, key, usage)
    return price_models(by_model)


class RunCosts:
    """The cost of each agent of a run (the paths of its `usage_by_agent`), priced when
    first asked: `of(path)` for one entry, `total()` for the run (the entries' sum).
    `by_model`: those paths' tokens by model, or what reads them (then only when asked);
    `answers`: model answers in no message (a guard's judge), by path."""

    def __init__(
        self,
        by_agent: Mapping[str, Mapping[str, Any]],
        by_model: Mapping[str, ByModel] | Callable[[], dict[str, ByModel]],
        answers: Sequence[tuple[str, Any]] = (),
    ) -> None:
        self._by_agent, self._by_model, self._answers = by_agent, by_model, answers
        self._costs: dict[str, float | None] | None = None

    def _priced(self) -> dict[str, float | None]:
        if self._costs is None:
            stored = self._by_model() if callable(self._by_model) else self._by_model
            by_model = {path: {key: dict(c) for key, c in models.items()} for path, models in stored.items()}
            for path, answer in self._answers:
                if answer.usage_metadata:
                    add_call(by_model.setdefault(path, {}), model_key(answer), answer.usage_metadata)
            self._costs = {path: _path_cost(counts, by_model.get(path, {})) for path, counts in self._by_agent.items()}
        return self._costs

    def of(self, path: str) -> float | None:
        return self._priced().get(path)

    def total(self) -> float | None:
        return sum_costs(self._priced().values())


def _path_cost(counts: Mapping[str, Any], by_model: ByModel) -> float | None:
    """One agent's cost: its calls by model priced, None when a model has no price or when
    the models do not account for all its tokens (a remote subagent's total, a custom
    guard's tokens: they name no model)."""
    known = sum(c.get("input_tokens", 0) + c.get("output_tokens", 0) for c in by_model.values())
    if known < int(counts.get("input_tokens") or 0) + int(counts.get("output_tokens") or 0):
        _unpriced(_NO_MODEL, _NO_MODEL_WHY)
        return None
    return price_models(by_model)
