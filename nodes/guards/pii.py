"""The `pii` guard (SPEC §30): finds personal data and secrets in the text crossing a
boundary and redacts, masks, hashes or blocks it.

    >>> from supervisor_graph.nodes.guards.core import GuardContext
    >>> guard = pii(strategy="mask", at="output")
    >>> guard.check.check(GuardContext(boundary="output", text="Card 4111-1111-1111-1111."))
    Redact(kind='redact', text='Card ****-****-****-1111.')

Text that is JSON (always so at `tool_args`, often at `tool_result`) is redacted value by
value, so it stays valid JSON. The default detectors are deterministic (`detectors`);
`engine="presidio"` asks Microsoft's presidio instead, for the kinds it knows (the
`presidio` extra; `presidio.py`, imported only when that engine is asked for).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from supervisor_graph.nodes.guards.core import BOUNDARIES, GuardContext, Guardrail, allow, block, redact
from supervisor_graph.nodes.guards.detectors import PII_KINDS, PIIMatch, detect_pii, hold_from

__all__ = ["PIIGuard", "pii"]

Strategy = Literal["redact", "mask", "hash", "block"]
_STRATEGIES = ("redact", "mask", "hash", "block")


def _masked(value: str) -> str:
    """Every letter and digit but the last four as `*`; separators stay (`****-****-****-1111`)."""
    keep = 4
    out = []
    for ch in reversed(value):
        if ch.isalnum():
            out.append(ch if keep > 0 else "*")
            keep -= 1
        else:
            out.append(ch)
    return "".join(reversed(out))


class PIIGuard:
    """The check behind `pii(...)`: an object with `check(ctx)`, so `Guardrail` holds it."""

    def __init__(self, kinds: Sequence[str], strategy: str, name: str, salt: str, analyzer: Any) -> None:
        self.kinds = tuple(kinds)
        self.strategy = strategy
        self.name = name
        self.salt = salt
        self._analyzer = analyzer

    # -- finding ------------------------------------------------------------------------

    def find(self, text: str) -> list[PIIMatch]:
        """What this guard finds in `text` (its kinds, its engine)."""
        if self._analyzer is None:
            return detect_pii(text, self.kinds)
        return self._analyzer.find(text, self.kinds)

    # -- replacing ----------------------------------------------------------------------

    def replacement(self, match: PIIMatch) -> str:
        if self.strategy == "mask":
            return _masked(match.value)
        if self.strategy == "hash":
            digest = hashlib.sha256((self.salt + match.value).encode()).hexdigest()[:8]
            return f"<{match.kind}:{digest}>"
        return f"[REDACTED_{match.kind.upper()}]"

    def _replace(self, text: str, found: list[PIIMatch]) -> str:
        parts, at = [], 0
        for match in found:
            parts += [text[at : match.start], self.replacement(match)]
            at = match.end
        parts.append(text[at:])
        return "".join(parts)

    def _walk(self, value: Any, kinds: set[str]) -> Any:
        """A JSON value with every string (and number that is a card or phone number) scrubbed."""
        if isinstance(value, str):
            found = self.find(value)
            kinds.update(m.kind for m in found)
            return self._replace(value, found) if found else value
        if isinstance(value, bool) or value is None or isinstance(value, float):
            return value
        if isinstance(value, int):
            text = str(value)
            found = self.find(text)
            if not found:
                return value
            kinds.update(m.kind for m in found)
            return self._replace(text, found)  # a string now: the number itself must not cross
        if isinstance(value, list):
            return [self._walk(item, kinds) for item in value]
        if isinstance(value, dict):
            return {self._walk(k, kinds): self._walk(v, kinds) for k, v in value.items()}
        return value

    def scrub(self, text: str, *, as_json: bool = False) -> tuple[str, list[str]]:
        """`text` with what was found replaced, and the kinds found (in order, once each).
        JSON text (`as_json`, or text that parses as an object or array) stays JSON."""
        if as_json or text.lstrip()[:1] in ("{", "["):
            try:
                data = json.loads(text)
            except ValueError:
                pass
            else:
                kinds: set[str] = set()
                scrubbed = self._walk(data, kinds)
                if not kinds:
                    return text, []
                return json.dumps(scrubbed, ensure_ascii=False), [k for k in PII_KINDS + _extra(kinds) if k in kinds]
        found = self.find(text)
        if not found:
            return text, []
        return self._replace(text, found), list(dict.fromkeys(m.kind for m in found))

    # -- a streamed answer (mode="streaming") ------------------------------------------------

    def hold_from(self, text: str, end: int | None = None) -> int:
        """Where the end of a streamed `text` that more text could still make (part of) a
        value starts (the last such place at or before `end`): the stream holds it back
        until the next window decides it."""
        return hold_from(text, self.kinds, end)

    def scrub_window(self, ctx: GuardContext) -> tuple[str, list[str]]:
        """A streamed window: what is found in `ctx.before + ctx.text` (the text already sent
        is context for the detectors' look-behinds), replaced inside `ctx.text` only, and
        only before `ctx.held_from`: the end held back comes back as it is, and the next
        window sees what it holds whole."""
        whole, start = ctx.before + ctx.text, len(ctx.before)
        end = len(whole) if ctx.held_from is None else start + max(0, ctx.held_from)
        found = [m for m in self.find(whole) if m.end > start and m.start < end]
        if not found:
            return ctx.text, []
        parts, at = [], start
        for match in found:  # none reaches before `start`: the stream cut there, where none can
            parts += [whole[at : max(at, match.start)], self.replacement(match)]
            at = max(at, match.end)
        parts.append(whole[at:])
        return "".join(parts), list(dict.fromkeys(m.kind for m in found))

    # -- the guard ------------------------------------------------------------------------

    def check(self, ctx: GuardContext) -> Any:
        if ctx.held_from is not None or ctx.before:
            scrubbed, kinds = self.scrub_window(ctx)
        else:
            scrubbed, kinds = self.scrub(ctx.text, as_json=ctx.boundary == "tool_args")
        if not kinds:
            return allow()
        if self.strategy == "block":
            return block(f"{self.name}: found {', '.join(kinds)} at {ctx.boundary}")
        return redact(scrubbed)


class _AsyncPIIGuard(PIIGuard):
    """presidio's analysis is CPU work of its own: it runs off the event loop."""

    async def check(self, ctx: GuardContext) -> Any:  # type: ignore[override]
        return await asyncio.to_thread(PIIGuard.check, self, ctx)


def _extra(kinds: set[str]) -> tuple[str, ...]:
    return tuple(sorted(k for k in kinds if k not in PII_KINDS))  # kinds only presidio knows


def pii(
    kinds: str | Iterable[str] = PII_KINDS,
    *,
    strategy: Strategy = "redact",
    at: str | Iterable[str] = BOUNDARIES,
    name: str = "pii",
    engine: Literal["regex", "presidio"] = "regex",
    analyzer: Any = None,
    salt: str = "",
    **settings: Any,
) -> Guardrail:
    """A guard for personal data and secrets.

    Args:
        kinds: what to look for: any of `email`, `phone`, `credit_card` (13-19 digits
            passing the Luhn check), `iban` (passing mod 97), `ip_address` (v4 and v6;
            not a version string), `secret` (API keys by their prefixes — `sk-`,
            `sk-ant-`, `ghp_`, `gho_`, `github_pat_`, `glpat-`, `xox[bap]-`, `AKIA`,
            `AIza`, Stripe's — private key blocks, JWTs, and long high-entropy tokens);
            all of them by default. With `engine="presidio"`, presidio's entity names in
            lower case (`person`, `location`, ...) too.
        strategy: `redact` (`[REDACTED_EMAIL]`), `mask` (all but the last four
            characters, `****-****-****-1111`), `hash` (a short stable hash,
            `<email:3f2a1b9c>`, salted with `salt`) or `block` (a tripwire whose reason
            names the kinds found, never the values).
        at: the boundaries it watches; every one by default (what the user sends, what
            crosses a delegation both ways, tool arguments and results, the answer).
        engine: `regex` (the deterministic detectors, no model) or `presidio`
            (`pip install 'supervisor-graph[presidio]'`; `analyzer=` takes a configured
            `presidio_analyzer.AnalyzerEngine`, otherwise presidio's default one, which
            loads the spaCy model `en_core_web_lg`). Secrets are always found by the
            deterministic detectors.
        settings: `Guardrail`'s (`mode`, `window_tokens`, `on_error`, ...). With
            `mode="streaming"` (at `output`) the stream holds back exactly the end that
            could still grow into a value (`hold_from`), so any `window_tokens` and
            `overlap_tokens` are safe; presidio cannot stream and is refused.
    """
    wanted = [kinds] if isinstance(kinds, str) else list(kinds)
    if strategy not in _STRATEGIES:
        raise ValueError(f"pii: strategy must be one of {', '.join(_STRATEGIES)}, not {strategy!r}")
    if engine == "presidio":
        if settings.get("mode") == "streaming":
            raise ValueError(
                "pii(engine='presidio') cannot check a streamed answer safely: a name or a place its language model "
                "finds has no form that tells how much of the stream to hold back. Use mode='blocking' (the answer "
                "is checked whole before it is sent), or engine='regex' for the kinds it knows"
            )
        from supervisor_graph.nodes.guards.presidio import PresidioAnalyzer

        found_by: Any = PresidioAnalyzer(analyzer)
        found_by.check_kinds(wanted)
        check: PIIGuard = _AsyncPIIGuard(wanted, strategy, name, salt, found_by)
    elif engine == "regex":
        unknown = [k for k in wanted if k not in PII_KINDS]
        if unknown or not wanted:
            raise ValueError(f"pii: kinds must be one or more of {', '.join(PII_KINDS)}; got {unknown or wanted!r}")
        check = PIIGuard(wanted, strategy, name, salt, None)
    else:
        raise ValueError(f"pii: engine must be 'regex' or 'presidio', not {engine!r}")
    return Guardrail(check=check, at=at, name=name, **settings)  # type: ignore[arg-type]
