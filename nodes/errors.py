"""Errors raised inside graph nodes, and keeping provider error text out of storage.

LangGraph stores a failing task's exception in the checkpoint writes (`__error__`, as its
`repr`), and provider errors can hold secrets (`Incorrect API key provided: sk-...`). A
failed model call is therefore raised as `ModelCallError`, whose text names only the
agent and the error's type; the provider's exception rides along in memory (`original`,
also the `__cause__`) for in-process hooks and a DEBUG log, and is never pickled.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from supervisor_graph.checkpointers.errors import SupervisorGraphError

if TYPE_CHECKING:
    from langgraph.types import RetryPolicy

__all__ = ["ModelCallError", "SupervisorGraphError", "log_failure", "original_error", "retry_delay", "unwrapping_retry_on"]


class ModelCallError(SupervisorGraphError):
    """An agent's model call failed. Its message is safe to store and show; the
    provider's own exception is `original` (in this process only)."""

    def __init__(self, agent_id: str, original: BaseException | None = None, error_type: str | None = None) -> None:
        self.agent_id = agent_id
        self.error_type = error_type or type(original).__name__
        self.original = original
        super().__init__(
            f"the model of agent {agent_id!r} failed ({self.error_type}); "
            "the provider's message is kept out of checkpoints and streams (see logs at DEBUG level)"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.agent_id, None, self.error_type))


def original_error(exc: BaseException) -> BaseException:
    """The provider's exception behind a `ModelCallError`, or `exc` itself."""
    if isinstance(exc, ModelCallError) and exc.original is not None:
        return exc.original
    return exc


RetryOn = type[Exception] | Sequence[type[Exception]] | Callable[[Exception], bool]


def retry_delay(policy: RetryPolicy, attempt: int) -> float:
    """Seconds to wait after the `attempt`-th failed try under `policy` (its backoff and jitter)."""
    delay = min(policy.max_interval, policy.initial_interval * policy.backoff_factor ** (attempt - 1))
    return delay + (random.uniform(0, 1) if policy.jitter else 0)


def unwrapping_retry_on(retry_on: RetryOn) -> Callable[[Exception], bool]:
    """A `RetryPolicy.retry_on` that judges the provider's exception, not its wrapper."""

    def judge(exc: Exception) -> bool:
        inner = original_error(exc)
        if not isinstance(inner, Exception):
            return False
        if isinstance(retry_on, type):
            return isinstance(inner, retry_on)
        if isinstance(retry_on, Sequence):
            return isinstance(inner, tuple(retry_on))
        return bool(retry_on(inner))

    return judge


def log_failure(logger: logging.Logger, level: int, message: str, exc: BaseException, *args: Any) -> None:
    """Log a failure at `level` with the error's type only; its text and traceback (which
    may quote a provider's secrets) go to DEBUG."""
    error = original_error(exc)
    logger.log(level, message + ": %s", *args, type(error).__name__)
    logger.debug(message, *args, exc_info=error)
