"""What `config=` may hold on a facade call (SPEC §24), validated once per call
(`Run.start` turns it into the run's LangChain `RunnableConfig`)."""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["CallConfig"]


class CallConfig(BaseModel):
    """What `config=` may hold on a facade call (SPEC §24): the keys of a LangChain
    `RunnableConfig` that mean the same as on `graph.ainvoke` (thread, checkpoint and run
    id are the facade's own: `memory=` and `run_id` say them)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    callbacks: Any = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    run_name: str | None = None
    max_concurrency: int | None = Field(default=None, ge=1)

    @classmethod
    def of(cls, value: Any) -> CallConfig:
        if value is None:
            return _NO_CONFIG  # most calls: no validation to pay
        try:
            return cls.model_validate(value or {})
        except ValidationError as exc:
            raise ValueError(
                f"invalid run options: config: {exc}\n(config= takes a RunnableConfig's callbacks, tags, metadata, "
                "run_name and max_concurrency)"
            ) from None

    def runnable_config(self, run_id: uuid.UUID) -> RunnableConfig:
        config: RunnableConfig = {"run_id": run_id, "recursion_limit": 10_000}
        for key in ("callbacks", "tags", "metadata", "run_name", "max_concurrency"):
            value = getattr(self, key)
            if value is not None:
                config[key] = value  # type: ignore[literal-required]
        return config


_NO_CONFIG = CallConfig()
