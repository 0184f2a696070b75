"""Model strings (`"openai/gpt-5-mini"`) to LangChain chat models."""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models import BaseChatModel

from supervisor_graph.errors import MissingAPIKeyError

__all__ = ["PROVIDERS", "parse_model_string", "resolve_model_string"]

PROVIDERS = ("openai",)


def parse_model_string(value: str) -> tuple[str, str]:
    """`("openai", "gpt-5-mini")` from `"openai/gpt-5-mini"` or `"openai:gpt-5-mini"`.

    Raises:
        ValueError: the string has no provider, or names one this library does not know.
    """
    for sep in ("/", ":"):
        provider, found, name = value.partition(sep)
        if found and provider and name:
            break
    else:
        raise ValueError(f"model {value!r} must look like 'openai/<model>' (provider/model)")
    if provider not in PROVIDERS:
        raise ValueError(
            f"model {value!r} names unknown provider {provider!r}; use one of {', '.join(PROVIDERS)} "
            "or pass a LangChain BaseChatModel instance"
        )
    return provider, name


def resolve_model_string(value: str, **kwargs: Any) -> BaseChatModel:
    """The chat model a model string names, built at first use.

    `OPENAI_BASE_URL` points it at any OpenAI-compatible server (vLLM, Ollama, LM
    Studio); such servers often need no key.

    Raises:
        MissingAPIKeyError: neither `OPENAI_API_KEY` nor `OPENAI_BASE_URL` is set.
    """
    _, name = parse_model_string(value)
    from langchain_openai import ChatOpenAI

    api_key = os.environ.get("OPENAI_API_KEY")
    base_url = os.environ.get("OPENAI_BASE_URL")
    if not api_key and not base_url:
        raise MissingAPIKeyError(
            f"model {value!r} needs OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible "
            "server); set it in the environment, or pass a BaseChatModel such as "
            "supervisor_graph.testing.ScriptedChatModel"
        )
    return ChatOpenAI(model=name, api_key=api_key or "not-needed", base_url=base_url, **kwargs)  # type: ignore[arg-type]
