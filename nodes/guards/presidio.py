"""`pii(engine="presidio")`: Microsoft's presidio finds the personal data (its
recognizers, and with a spaCy model its named entities: people, places), the
deterministic detectors still find the secrets, which presidio does not look for.
Needs the `presidio` extra (`pip install 'supervisor-graph[presidio]'`); presidio's
default analyzer loads the spaCy model `en_core_web_lg` (`python -m spacy download
en_core_web_lg`), or hand `pii(analyzer=...)` an `AnalyzerEngine` configured as you like.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from supervisor_graph.nodes.guards.detectors import PIIMatch, detect_pii

__all__ = ["PRESIDIO_ENTITIES", "PresidioAnalyzer"]

# our kinds -> presidio's entity names; any other kind is a presidio entity in lower case
PRESIDIO_ENTITIES = {
    "email": "EMAIL_ADDRESS",
    "phone": "PHONE_NUMBER",
    "credit_card": "CREDIT_CARD",
    "iban": "IBAN_CODE",
    "ip_address": "IP_ADDRESS",
}
_OURS = {entity: kind for kind, entity in PRESIDIO_ENTITIES.items()}


class PresidioAnalyzer:
    """Finds `PIIMatch`es with a presidio `AnalyzerEngine` (built at first use unless given)."""

    def __init__(self, analyzer: Any = None, language: str = "en") -> None:
        try:
            import presidio_analyzer  # noqa: F401
        except ImportError as exc:
            raise ImportError(
                "pii(engine='presidio') needs presidio: pip install 'supervisor-graph[presidio]' "
                "(and a spaCy model for presidio's default analyzer: python -m spacy download en_core_web_lg)"
            ) from exc
        self._analyzer = analyzer
        self.language = language
        self._lock = threading.Lock()

    @property
    def analyzer(self) -> Any:
        with self._lock:
            if self._analyzer is None:
                from presidio_analyzer import AnalyzerEngine

                self._analyzer = AnalyzerEngine()
            return self._analyzer

    def check_kinds(self, kinds: Sequence[str]) -> None:
        """Refuse, at declaration, a kind that is none of ours and (with a given analyzer)
        none of its entities."""
        if not kinds:
            raise ValueError("pii: give at least one kind")
        bad = [k for k in kinds if not isinstance(k, str) or not k.replace("_", "").isalnum()]
        if self._analyzer is not None:
            supported = set(self._analyzer.get_supported_entities(self.language))
            bad += [k for k in kinds if k != "secret" and self.entity(k) not in supported]
        if bad:
            raise ValueError(f"pii(engine='presidio'): unknown kinds {bad!r}")

    @staticmethod
    def entity(kind: str) -> str:
        return PRESIDIO_ENTITIES.get(kind, kind.upper())

    def find(self, text: str, kinds: Sequence[str]) -> list[PIIMatch]:
        found = detect_pii(text, ["secret"]) if "secret" in kinds else []
        entities = [self.entity(k) for k in kinds if k != "secret"]
        if entities:
            for r in self.analyzer.analyze(text=text, entities=entities, language=self.language):
                kind = _OURS.get(r.entity_type, r.entity_type.lower())
                found.append(PIIMatch(kind, r.start, r.end, text[r.start : r.end]))
        kept: list[PIIMatch] = []
        for match in sorted(found, key=lambda m: (m.kind != "secret", m.start - m.end)):  # secrets, then the longest
            if all(match.end <= k.start or match.start >= k.end for k in kept):
                kept.append(match)
        return sorted(kept, key=lambda m: m.start)
