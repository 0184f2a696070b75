"""The providers a model string may name (SPEC §26): every one LangChain's `init_chat_model`
knows (`langchain.chat_models.base._BUILTIN_PROVIDERS`; tests/supervisor_graph/
test_providers.py checks this table against the installed `langchain`), with what this
library checks before any graph runs: the integration package (a `ValueError` naming the
`pip install` line) and the credentials (`MissingAPIKeyError` naming the variable).

The table is ours, not `langchain`'s, so that model strings need no `langchain` at run
time, and because `init_chat_model` knows neither the variables nor the streamed-usage
and per-event-loop settings a provider needs.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from supervisor_graph.declaration.errors import MissingAPIKeyError

__all__ = ["PROVIDERS", "Provider", "build_chat", "check_package", "check_provider_credentials", "chat_class", "provider"]


def _aws_chain() -> bool:
    """boto3's credential chain (a profile, SSO, a container or instance role, ...)."""
    import botocore.session  # langchain-aws depends on boto3

    return botocore.session.Session().get_credentials() is not None


def _google_chain() -> bool:
    """Application Default Credentials (`gcloud auth application-default login`, a
    service account, the metadata server)."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        google.auth.default()
    except DefaultCredentialsError:
        return False
    return True


@dataclass(frozen=True)
class Provider:
    """One provider: where its chat model lives and what it needs to run."""

    name: str
    module: str
    cls: str
    keys: tuple[str, ...] = ()
    """Variables any one of which holds its credentials (none: it needs no key)."""
    alternatives: tuple[str, ...] = ()
    """Variables that stand in for a key: a base URL of a local, keyless server, or a mode
    whose credentials come from elsewhere."""
    chain: Callable[[], bool] | None = None
    """Credentials the provider's SDK finds without a variable (a profile, a role);
    asked only when no variable is set."""
    note: str = ""
    """How else to give the credentials, for the error message."""
    placeholder_key: bool = False
    """Send a placeholder key when only a base URL is set (the SDK refuses none)."""
    creator: str = "call"
    """How the chat model is built from `model=`: `call`, `model_id` (`cls(model_id=...)`),
    `from_model_id` (`cls.from_model_id(model_id=...)`) or `langsmith` (the LangSmith
    gateway's ChatOpenAI)."""

    @property
    def package(self) -> str:
        """The integration's distribution name (`langchain-anthropic`)."""
        return self.module.split(".", 1)[0].replace("_", "-")

    @property
    def pip_line(self) -> str:
        return f"pip install {self.package}"


_AWS = ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK")
_AWS_NOTE = "or any credentials boto3 finds: ~/.aws, SSO, a container or instance role"
_GOOGLE_NOTE = "or Application Default Credentials: gcloud auth application-default login"

_TABLE = (
    Provider("anthropic", "langchain_anthropic", "ChatAnthropic", ("ANTHROPIC_API_KEY",),
             ("ANTHROPIC_API_URL", "ANTHROPIC_BASE_URL"), note="or ANTHROPIC_BASE_URL for a keyless local server",
             placeholder_key=True),
    Provider("anthropic_bedrock", "langchain_aws", "ChatAnthropicBedrock", _AWS, chain=_aws_chain, note=_AWS_NOTE),
    # Azure AI Foundry: a key or DefaultAzureCredential, which no variable shows; its SDK checks at the first call
    Provider("azure_ai", "langchain_azure_ai.chat_models", "AzureAIOpenAIApiChatModel"),
    Provider("azure_openai", "langchain_openai", "AzureChatOpenAI", ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN")),
    Provider("baseten", "langchain_baseten", "ChatBaseten", ("BASETEN_API_KEY",)),
    Provider("bedrock", "langchain_aws", "ChatBedrock", _AWS, chain=_aws_chain, note=_AWS_NOTE),
    Provider("bedrock_converse", "langchain_aws", "ChatBedrockConverse", _AWS, chain=_aws_chain, note=_AWS_NOTE),
    Provider("bedrock_mantle_anthropic", "langchain_aws", "ChatAnthropicMantle", _AWS, chain=_aws_chain, note=_AWS_NOTE),
    Provider("bedrock_mantle_openai", "langchain_aws", "ChatOpenAIMantle", _AWS, chain=_aws_chain, note=_AWS_NOTE),
    Provider("cohere", "langchain_cohere", "ChatCohere", ("COHERE_API_KEY", "CO_API_KEY")),
    Provider("deepseek", "langchain_deepseek", "ChatDeepSeek", ("DEEPSEEK_API_KEY",), ("DEEPSEEK_API_BASE",),
             placeholder_key=True),
    Provider("fireworks", "langchain_fireworks", "ChatFireworks", ("FIREWORKS_API_KEY",)),
    Provider("google_anthropic_vertex", "langchain_google_vertexai.model_garden", "ChatAnthropicVertex",
             ("GOOGLE_APPLICATION_CREDENTIALS",), chain=_google_chain, note=_GOOGLE_NOTE),
    Provider("google_genai", "langchain_google_genai", "ChatGoogleGenerativeAI", ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
             ("GOOGLE_GENAI_USE_VERTEXAI",), note="or GOOGLE_GENAI_USE_VERTEXAI=true for Vertex AI"),
    Provider("google_vertexai", "langchain_google_vertexai", "ChatVertexAI", ("GOOGLE_APPLICATION_CREDENTIALS",),
             chain=_google_chain, note=_GOOGLE_NOTE),
    Provider("groq", "langchain_groq", "ChatGroq", ("GROQ_API_KEY",)),
    # a token only for gated models and the Inference API; local pipelines need none
    Provider("huggingface", "langchain_huggingface", "ChatHuggingFace", creator="from_model_id"),
    Provider("ibm", "langchain_ibm", "ChatWatsonx", ("WATSONX_APIKEY", "WATSONX_API_KEY", "WATSONX_TOKEN", "WATSONX_PASSWORD"),
             creator="model_id"),
    Provider("langsmith", "langchain_openai", "ChatOpenAI", ("LANGSMITH_GATEWAY_API_KEY", "LANGSMITH_API_KEY"),
             creator="langsmith"),
    # LiteLLM routes to any provider and reads that provider's own variable
    Provider("litellm", "langchain_litellm", "ChatLiteLLM"),
    Provider("meta", "langchain_meta", "ChatMetaModel", ("LLAMA_API_KEY", "META_API_KEY")),
    Provider("mistralai", "langchain_mistralai", "ChatMistralAI", ("MISTRAL_API_KEY",)),
    Provider("nvidia", "langchain_nvidia_ai_endpoints", "ChatNVIDIA", ("NVIDIA_API_KEY", "NGC_API_KEY"), ("NVIDIA_BASE_URL",),
             note="or NVIDIA_BASE_URL for a local NIM"),
    Provider("ollama", "langchain_ollama", "ChatOllama"),  # a local server: no key (OLLAMA_HOST says where)
    Provider("openai", "langchain_openai", "ChatOpenAI", ("OPENAI_API_KEY",), ("OPENAI_BASE_URL",),
             note="or OPENAI_BASE_URL for an OpenAI-compatible server"),
    Provider("openrouter", "langchain_openrouter", "ChatOpenRouter", ("OPENROUTER_API_KEY",)),
    Provider("perplexity", "langchain_perplexity", "ChatPerplexity", ("PPLX_API_KEY", "PERPLEXITY_API_KEY")),
    Provider("together", "langchain_together", "ChatTogether", ("TOGETHER_API_KEY",)),
    Provider("upstage", "langchain_upstage", "ChatUpstage", ("UPSTAGE_API_KEY",)),
    Provider("xai", "langchain_xai", "ChatXAI", ("XAI_API_KEY",)),
)
_BY_NAME = {p.name: p for p in _TABLE}

PROVIDERS = tuple(_BY_NAME)
"""Every provider name a model string may start with."""

_INSTALLED: set[str] = set()
_CHAINS_FOUND: set[str] = set()  # a credential chain that answered once is not asked again


def provider(name: str) -> Provider:
    """The provider called `name` (`KeyError` for an unknown one)."""
    return _BY_NAME[name]


def check_package(p: Provider, value: str) -> None:
    """`ValueError` with the `pip install` line when `p`'s integration is not installed."""
    if p.name in _INSTALLED:
        return
    root = p.module.split(".", 1)[0]
    if importlib.util.find_spec(root) is not None or (
        p.name == "ollama" and importlib.util.find_spec("langchain_community") is not None  # init_chat_model's fallback
    ):
        _INSTALLED.add(p.name)  # checked at every run's start: found once is enough
        return
    raise ValueError(f"model {value!r} needs the {p.package} package: {p.pip_line}")


def check_provider_credentials(p: Provider, value: str) -> None:
    """`MissingAPIKeyError` naming `p`'s variable when no credentials are found."""
    if not p.keys or any(_set(var) for var in (*p.keys, *p.alternatives)):
        return
    if p.chain is not None and p.name in _CHAINS_FOUND:
        return
    if p.chain is not None:
        try:
            found = p.chain()
        except Exception:  # noqa: BLE001 - a chain that cannot answer finds nothing
            found = False
        if found:
            _CHAINS_FOUND.add(p.name)
            return
    others = [*p.keys[1:], *([p.note.removeprefix("or ")] if p.note else [])]
    named = p.keys[0] + (f" (or {', '.join(others)})" if others else "")
    raise MissingAPIKeyError(
        f"model {value!r} needs {named}; set it in the environment, or pass a BaseChatModel such as "
        "supervisor_graph.testing.ScriptedChatModel"
    )


def _set(var: str) -> bool:
    """A variable with a value (`GOOGLE_GENAI_USE_VERTEXAI=false` is not one)."""
    return os.environ.get(var, "").strip().lower() not in ("", "0", "false", "no")


def chat_class(p: Provider) -> Any:
    """The integration's chat model class (imported at first use)."""
    try:
        module = importlib.import_module(p.module)
    except ImportError:
        if p.name != "ollama":
            raise
        module = importlib.import_module("langchain_community.chat_models")  # init_chat_model's fallback
    return getattr(module, p.cls)


def build_chat(p: Provider, model: str, settings: dict[str, Any], loop_bound: bool) -> Any:
    """`p`'s chat model for `model`: streamed usage asked for where the integration has
    the setting, a placeholder key for a keyless local server, and, when `loop_bound`,
    HTTP connections of its own (integrations that share one cached client between
    instances would otherwise tie every loop to the first one's connections)."""
    cls = chat_class(p)
    fields = getattr(cls, "model_fields", {})
    kwargs = dict(settings)
    if "stream_usage" in fields:
        kwargs.setdefault("stream_usage", True)
    if p.placeholder_key and not any(os.environ.get(var) for var in p.keys) and "api_key" not in kwargs:
        kwargs["api_key"] = "not-needed"  # a base URL without a key: a local server
    if loop_bound and "http_async_client" in fields and "http_async_client" not in kwargs:
        from openai import DefaultAsyncHttpxClient  # the ChatOpenAI family (Azure, DeepSeek, xAI, ...)

        kwargs["http_async_client"] = DefaultAsyncHttpxClient()
    if p.creator == "model_id":
        chat = cls(model_id=model, **kwargs)
    elif p.creator == "from_model_id":
        chat = cls.from_model_id(model_id=model, **kwargs)
    elif p.creator == "langsmith":
        chat = _langsmith_gateway(cls, model, kwargs)
    else:
        chat = cls(model=model, **kwargs)
    return _own_anthropic_connections(chat) if loop_bound else chat


def _langsmith_gateway(cls: Any, model: str, kwargs: dict[str, Any]) -> Any:
    """ChatOpenAI through the LangSmith gateway, as `init_chat_model("langsmith:...")` builds it."""
    from langchain_core.utils._gateway import _apply_gateway_config

    values = {"model": model, **kwargs}
    _apply_gateway_config(
        values,
        cls,
        base_url_field="openai_api_base",
        api_key_field="openai_api_key",
        provider_path="v1",
        api_key_env=("LANGSMITH_GATEWAY_API_KEY", "LANGSMITH_API_KEY"),
        default_base_url="https://gateway.smith.langchain.com/v1",
    )
    values["use_responses_api"] = True
    return cls(**values)


def _own_anthropic_connections(chat: Any) -> Any:
    """langchain-anthropic caches one async HTTP client per base URL for all instances
    (`_get_default_async_httpx_client`); give this one an Anthropic client of its own."""
    try:
        from langchain_anthropic import ChatAnthropic
    except ImportError:
        return chat
    if isinstance(chat, ChatAnthropic):
        import anthropic

        proxy = getattr(chat, "anthropic_proxy", None)
        # a plain client (the SDK's own default closes itself on whatever loop runs when it
        # is collected, which fails for a client of a closed loop)
        http_client = anthropic.DefaultAsyncHttpxClient(**({"proxy": proxy} if proxy else {}))
        # `_async_client` is a cached_property: the instance's own value wins
        chat.__dict__["_async_client"] = anthropic.AsyncClient(**chat._client_params, http_client=http_client)
    return chat
