"""Token usage per provider and model (and per agent), from the `step-finish` chunk
every model call (at any depth) ends with, and what it cost in USD (SPEC §33: each
provider and model's counts priced by `genai-prices`; None when one has no price).

A run counts only the calls it streams: a run that pauses reports the calls it made
before pausing, the resumed run only its own, so each call is counted once.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import TokenUsage, aggregate_token_usage, token_usage_from_langchain_metadata

from supervisor_graph.nodes.observability.cost import token_usage_cost

__all__ = ["UsageMeter", "usage_and_cost"]


class UsageMeter:
    def __init__(self) -> None:
        self._calls: list[tuple[str, str, TokenUsage]] = []

    def add(self, namespace: str, payload: dict[str, Any], agent_path: tuple[str, ...] = ()) -> None:
        """Count one model call from a `step-finish` payload, made by the agent at `agent_path`."""
        entry = token_usage_from_langchain_metadata(
            payload.get("usage"), provider=payload.get("provider") or None, model=payload.get("model") or None
        )
        if entry is not None:
            self._calls.append((namespace, "/".join(agent_path), entry))

    def total(self) -> list[TokenUsage] | None:
        """One entry per provider+model over every call; None when no call reported usage."""
        return aggregate_token_usage([entry for _, _, entry in self._calls]) or None

    def within(self, namespace: str) -> list[TokenUsage]:
        """Per provider+model over the calls made in the delegation at `namespace` (its
        nested delegations included)."""
        prefix = namespace + "|"
        return aggregate_token_usage([e for ns, _, e in self._calls if ns == namespace or ns.startswith(prefix)])

    def by_agent(self) -> dict[str, list[TokenUsage]]:
        """Per agent path (ids joined by `/`), per provider+model, over each agent's own
        calls: the same calls as `total`, so the entries add up to it."""
        paths: dict[str, list[TokenUsage]] = {}
        for _, path, entry in self._calls:
            paths.setdefault(path, []).append(entry)
        return {path: aggregate_token_usage(entries) for path, entries in paths.items()}

    def cost(self) -> float | None:
        """USD of every call (`total`'s entries priced)."""
        return token_usage_cost(self.total())


def usage_and_cost(entries: list[TokenUsage] | None) -> dict[str, Any]:
    """A run's `RUN_FINISHED.usage` as the metadata A2A and MCP answers carry (SPEC §33):
    `{"usage": {"input_tokens", "output_tokens", "total_tokens"}, "cost": USD or None}`."""
    entries = entries or []
    usage = {key: sum(getattr(e, key) or 0 for e in entries) for key in ("input_tokens", "output_tokens", "total_tokens")}
    return {"usage": usage, "cost": token_usage_cost(entries)}
