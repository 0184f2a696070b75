"""Token usage per provider and model, from the `step-finish` chunk every model call
(at any depth) ends with.

A run counts only the calls it streams: a run that pauses reports the calls it made
before pausing, the resumed run only its own, so each call is counted once.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import TokenUsage, aggregate_token_usage, token_usage_from_langchain_metadata

__all__ = ["UsageMeter"]


class UsageMeter:
    def __init__(self) -> None:
        self._calls: list[tuple[str, TokenUsage]] = []

    def add(self, namespace: str, payload: dict[str, Any]) -> None:
        """Count one model call from a `step-finish` payload."""
        entry = token_usage_from_langchain_metadata(
            payload.get("usage"), provider=payload.get("provider") or None, model=payload.get("model") or None
        )
        if entry is not None:
            self._calls.append((namespace, entry))

    def total(self) -> list[TokenUsage] | None:
        """One entry per provider+model over every call; None when no call reported usage."""
        return aggregate_token_usage([entry for _, entry in self._calls]) or None

    def within(self, namespace: str) -> list[TokenUsage]:
        """Per provider+model over the calls made in the delegation at `namespace` (its
        nested delegations included)."""
        prefix = namespace + "|"
        return aggregate_token_usage([e for ns, e in self._calls if ns == namespace or ns.startswith(prefix)])
