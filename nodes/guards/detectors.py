"""Deterministic PII and secret detectors for the `pii` guard (SPEC §30): regular
expressions, each with the check that tells a real value from a look-alike (the Luhn
check for card numbers, mod 97 for IBANs, `ipaddress` for IP addresses, entropy and
letter runs for unlabelled secrets). No model, no download.

    >>> [(m.kind, m.value) for m in detect_pii("Mail jo@example.com, card 4111 1111 1111 1111")]
    [('email', 'jo@example.com'), ('credit_card', '4111 1111 1111 1111')]
    >>> detect_pii("order 4111 1111 1111 1112, build 1.2.3.4 of v1.2.3.4")  # Luhn fails; a version
    []
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["PII_KINDS", "PIIMatch", "detect_pii", "hold_from", "iban_valid", "luhn_valid"]

PII_KINDS: tuple[str, ...] = ("email", "phone", "credit_card", "iban", "ip_address", "secret")
"""What the deterministic detectors find: `pii(kinds=...)` takes any of them."""


@dataclass(frozen=True)
class PIIMatch:
    """One value found in a text: its `kind` (one of `PII_KINDS`) and where it is."""

    kind: str
    start: int
    end: int
    value: str


# -- the checks ---------------------------------------------------------------------------


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum of a card number (digits only)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_valid(iban: str) -> bool:
    """ISO 13616: 15-34 characters, and mod 97 of the rearranged number is 1."""
    iban = iban.replace(" ", "").upper()
    if not 15 <= len(iban) <= 34 or not iban[:2].isalpha() or not iban[2:4].isdigit() or not iban.isalnum():
        return False
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1


def _entropy(token: str) -> float:
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in Counter(token).values())


_WORD = re.compile(r"[A-Z]?[a-z]{3,}")


def _looks_random(token: str) -> bool:
    """A long token of mixed case and digits, with high entropy and few word-like runs
    of letters: a key, not a CamelCase name, a path or a word."""
    if not (any(c.islower() for c in token) and any(c.isupper() for c in token) and any(c.isdigit() for c in token)):
        return False  # hex digests, UUIDs and ids in one case stay
    if _entropy(token) < 3.5:
        return False
    wordy = sum(len(word) for word in _WORD.findall(token))  # `User`, `settings`: parts of names
    return wordy <= 0.5 * len(token)


# -- the expressions ------------------------------------------------------------------------

_EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}(?![\w-])")
# (each expression consumes its first character before it looks behind it: an expression that
# starts with a character class lets the engine skip ahead to where it can match)
_PHONE = re.compile(
    r"\+(?<![\w+]\+)\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}(?![\w])"  # international: +44 20 7946 0958
    r"|\((?<![\w(]\()\d{3}\) ?\d{3}[ .-]\d{4}(?![\w])"  # North American: (555) 123-4567
    r"|\d(?<![\w(]\d)\d{2}[ .-]\d{3}[ .-]\d{4}(?![\w])"  # and 555-123-4567
)
_CARD = re.compile(r"[2-6](?<![\w.-][2-6])\d{3}(?:[ -]?\d){9,15}(?![\w-])")
_IBAN = re.compile(r"[A-Z](?<!\w[A-Z])[A-Z]\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![\w])")
# candidates, checked in Python (an octet is at most 255, without a leading zero; `ipaddress` for v6)
_IPV4 = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}")
_IPV6 = re.compile(r":[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*")  # from its first colon: the hex digits before it are added
_HEX = frozenset("0123456789abcdefABCDEF")
_VERSION_BEFORE = re.compile(r"(?:\bv|\bversion|\bver\.?|\brelease|\bbuild|\bfirmware)\s*$", re.IGNORECASE)
_SECRET = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY-----|[A-Za-z0-9+/=\s\\n]*)"
    r"|(?<![\w-])(?:"
    r"sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|xox[abpors]-[A-Za-z0-9-]{10,}"  # Slack
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key ids
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"  # JWTs
    r")(?![\w-])"
)
_TOKEN = re.compile(r"(?<![\w+/=-])[A-Za-z0-9+/_-]{20,}={0,2}(?![\w+/=-])")
# what a text must hold for a prefixed secret (substring searches: much faster than one expression)
_SECRET_HINTS = ("sk-", "_live_", "_test_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox",
                 "AKIA", "ASIA", "AIza", "eyJ", "PRIVATE KEY")  # fmt: skip


def _has_digit(text: str) -> bool:
    return any(d in text for d in "0123456789")

# when two matches overlap, the kind listed first wins (an IBAN's digits are no card number)
_PRIORITY = {"secret": 0, "iban": 1, "credit_card": 2, "email": 3, "ip_address": 4, "phone": 5, "entropy": 6}


def _emails(text: str) -> Iterator[PIIMatch]:
    for m in _EMAIL.finditer(text):
        yield PIIMatch("email", m.start(), m.end(), m.group())


def _phones(text: str) -> Iterator[PIIMatch]:
    for m in _PHONE.finditer(text):
        digits = sum(ch.isdigit() for ch in m.group())
        if 7 <= digits <= 15:
            yield PIIMatch("phone", m.start(), m.end(), m.group())


def _cards(text: str) -> Iterator[PIIMatch]:
    for m in _CARD.finditer(text):
        digits = re.sub(r"[ -]", "", m.group())
        if 13 <= len(digits) <= 19 and luhn_valid(digits):
            yield PIIMatch("credit_card", m.start(), m.end(), m.group())


def _ibans(text: str) -> Iterator[PIIMatch]:
    for m in _IBAN.finditer(text):
        value = m.group()
        while value:  # a capitalised word after the number may have joined it: drop groups until it checks
            if iban_valid(value):
                yield PIIMatch("iban", m.start(), m.start() + len(value), value)
                break
            cut = value.rfind(" ")
            value = value[:cut] if cut > 4 else ""


def _ips(text: str) -> Iterator[PIIMatch]:
    if "." in text and _has_digit(text):
        for m in _IPV4.finditer(text):
            start, end, value = m.start(), m.end(), m.group()
            before, after = text[start - 1 : start], text[end : end + 2]
            if (before and (before.isalnum() or before in "._")) or (after[:1].isalnum() or after[:1] == "_"):
                continue
            if after[:1] == "." and after[1:2].isdigit():
                continue  # 1.2.3.4.5
            if any(int(o) > 255 or (len(o) > 1 and o[0] == "0") for o in value.split(".")):
                continue
            if not _VERSION_BEFORE.search(text, max(0, start - 12), start):
                yield PIIMatch("ip_address", start, end, value)
    if "::" not in text and text.count(":") < 7:
        return  # an IPv6 address has `::` or seven colons
    for m in _IPV6.finditer(text):
        start = m.start()
        while start > 0 and start > m.start() - 4 and text[start - 1] in _HEX:
            start -= 1
        value = text[start : m.end()].rstrip(".")
        before, after = text[start - 1 : start], text[start + len(value) : start + len(value) + 1]
        if (before and (before.isalnum() or before in "_.")) or (after and (after.isalnum() or after == "_")):
            continue
        if value.count(":") < 2 or not any(ch not in ":" for ch in value):
            continue
        try:
            ipaddress.IPv6Address(value)
        except ValueError:
            continue  # a time of day, a MAC address, `a::b` in code
        yield PIIMatch("ip_address", start, start + len(value), value)


def _secrets(text: str) -> Iterator[PIIMatch]:
    if not any(hint in text for hint in _SECRET_HINTS):
        return
    for m in _SECRET.finditer(text):
        yield PIIMatch("secret", m.start(), m.end(), m.group())


def _entropy_secrets(text: str) -> Iterator[PIIMatch]:
    if max(map(len, text.split()), default=0) < 20:
        return
    for m in _TOKEN.finditer(text):
        if _looks_random(m.group().rstrip("=")):
            yield PIIMatch("entropy", m.start(), m.end(), m.group())


_DETECTORS = {
    "email": (_emails,),
    "phone": (_phones,),
    "credit_card": (_cards,),
    "iban": (_ibans,),
    "ip_address": (_ips,),
    "secret": (_secrets, _entropy_secrets),
}
# what a text must hold for a detector to have anything to find (skips most of them on most texts)
_NEEDS = {"email": "@", "phone": "digit", "credit_card": "digit", "iban": "digit", "ip_address": None, "secret": None}


def detect_pii(text: str, kinds: Iterable[str] = PII_KINDS) -> list[PIIMatch]:
    """The values of `kinds` found in `text`, in order, none overlapping (where two
    detectors claim the same characters, the more specific one wins: a secret, an IBAN,
    a card number, an email, an IP address, a phone number)."""
    found: list[PIIMatch] = []
    digits: bool | None = None
    for kind in kinds:
        needs = _NEEDS.get(kind)
        if kind not in _DETECTORS:
            raise ValueError(f"unknown PII kind {kind!r}; the kinds are {', '.join(PII_KINDS)}")
        if needs == "digit":
            if digits is None:
                digits = _has_digit(text)
            if not digits:
                continue
        elif needs is not None and needs not in text:
            continue
        for detector in _DETECTORS[kind]:
            found.extend(detector(text))
    if not found:
        return []
    kept: list[PIIMatch] = []
    for match in sorted(found, key=lambda m: (_PRIORITY[m.kind], m.start - m.end)):
        if all(match.end <= k.start or match.start >= k.end for k in kept):
            kept.append(match)
    return sorted(
        (PIIMatch("secret", m.start, m.end, m.value) if m.kind == "entropy" else m for m in kept), key=lambda m: m.start
    )


# -- streaming: what more text could still change --------------------------------------------
#
# A streamed answer is sent as it is decided (SPEC §30). Every match of a kind is made only of
# that kind's characters (below; `\d` is any Unicode decimal digit) and looks at most one
# character past its end (an IPv4 address two, the second only after a `.`, one of its own).
# So no match of any extension of a text can contain both sides of a position where, for
# every kind, the characters on its two sides are not both that kind's: the text before such
# a position is decided whatever follows. A private key block may hold any character: from
# its header (or the start of one) to its footer, everything waits.

_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_CHARS: dict[str, tuple[frozenset[str], bool]] = {  # (the characters of a match, Unicode digits too)
    "email": (_ASCII_ALNUM | frozenset("._%+-@"), False),
    "phone": (frozenset("0123456789 +().-"), True),
    "credit_card": (frozenset("0123456789 -"), True),
    "iban": (frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "), True),
    "ip_address": (_HEX | frozenset(":."), False),
    "secret": (_ASCII_ALNUM | frozenset("+/=_.-"), False),
}
_PEM_HEADER = re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----")
_PEM_FOOTER = re.compile(r"-----END[A-Z0-9 ]*PRIVATE KEY-----")
# the start of a header that the next characters could complete
_PEM_HEADER_START = re.compile(r"(?:-{1,5}|-----(?:B|BE|BEG|BEGI|BEGIN[A-Z0-9 ]*(?:PRIVATE KEY-{0,4})?))\Z")


def _of_kind(kind: str, ch: str) -> bool:
    chars, digits = _CHARS[kind]
    return ch in chars or (digits and ch.isdecimal())


def _key_blocks(text: str) -> list[tuple[int, int]]:
    """The private key blocks of `text`, header to footer; one without its footer (or the
    start of a header at the end) reaches past the end (`math.inf` would do; len + 1 is enough)."""
    blocks: list[tuple[int, int]] = []
    at = 0
    while (header := _PEM_HEADER.search(text, at)) is not None:
        footer = _PEM_FOOTER.search(text, header.end())
        if footer is None:
            return [*blocks, (header.start(), len(text) + 1)]
        blocks.append((header.start(), footer.end()))
        at = footer.end()
    partial = _PEM_HEADER_START.search(text, at)
    return [*blocks, (partial.start(), len(text) + 1)] if partial is not None else blocks


def hold_from(text: str, kinds: Iterable[str] = PII_KINDS, end: int | None = None) -> int:
    """Where the undecided end of a streamed `text` starts: no value of `kinds` found in any
    continuation of `text` reaches across this index, and the values found before it stay
    exactly what `detect_pii` finds there whatever follows. What is after it must be held
    back until more text (or the end of the stream) decides it. With `end`, the last such
    index at or before `end` (where another guard needs the stream cut earlier).

        >>> text = "Mail jo@example.co"
        >>> text[:hold_from(text, ["email"])]  # "jo@example.co" may go on: ".com", ".co.uk"
        'Mail '
        >>> hold_from("Mail jo@example.com, thanks! ", ["email"])  # nothing more can change it
        29
    """
    kinds = [k for k in kinds if k in _CHARS]
    blocks = _key_blocks(text) if "secret" in kinds else []
    cut, moved = len(text) if end is None else max(0, min(end, len(text))), True
    while moved:
        moved = False
        for start, end in blocks:
            if start < cut < end:
                cut, moved = start, True
        for kind in kinds:
            if cut > 0 and _of_kind(kind, text[cut - 1]) and (cut == len(text) or _of_kind(kind, text[cut])):
                cut -= 1  # inside a run of this kind's characters (or at its open end): go to its start
                while cut > 0 and _of_kind(kind, text[cut - 1]):
                    cut -= 1
                moved = True
    return cut
