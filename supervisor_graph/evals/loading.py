"""Reading cases: YAML (a list of cases, or `cases:` with file-wide settings), JSONL (one
case a line) and Google ADK evalset JSON (`adk.py`), each mistake reported as one
`EvalFileError` naming the file, the case and the field."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from supervisor_graph.evals.adk import adk_cases, is_adk_evalset
from supervisor_graph.evals.cases import MATCHERS, Case

__all__ = ["FILE_SETTINGS", "EvalFileError", "load_cases", "parse_cases"]

# what a file may set for all its cases (a case's own value wins; request contexts and memory settings merge)
FILE_SETTINGS = ("request_context", "versions", "memory", "max_steps", "approvals", "tags")


class EvalFileError(ValueError):
    """A case file the harness cannot run: names the file, the case and the field."""

    def __init__(self, message: str, *, file: str | None = None, case: str | None = None, field: str | None = None):
        self.file, self.case, self.field, self.reason = file, case, field, message
        where = ": ".join(
            part
            for part in (file, f"case {case!r}" if case is not None else None, field)
            if part
        )
        super().__init__(f"{where}: {message}" if where else message)


def load_cases(path: str | Path) -> list[Case]:
    """The cases of a `.yaml` / `.yml`, `.jsonl` or `.json` (a list of cases, or an ADK
    evalset) file."""
    path = Path(path)
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EvalFileError(f"cannot read it ({exc.strerror or exc})", file=name) from None
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        data: Any = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    data.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise EvalFileError(f"line {number} is not JSON ({exc.msg})", file=name) from None
    elif suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise EvalFileError(f"not JSON (line {exc.lineno}: {exc.msg})", file=name) from None
    elif suffix in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise EvalFileError(f"not YAML ({' '.join(str(exc).split())})", file=name) from None
    else:
        raise EvalFileError("a case file ends in .yaml, .yml, .jsonl or .json", file=name)
    return parse_cases(data, file=name)


def parse_cases(data: Any, *, file: str = "<cases>") -> list[Case]:
    """Cases from already parsed data: a list of case dicts (or `Case` objects), a
    mapping with `cases` and file-wide settings, or an ADK evalset."""
    if is_adk_evalset(data):
        data = adk_cases(data)
    settings: dict[str, Any] = {}
    if isinstance(data, Mapping):
        unknown = sorted(set(data) - {"cases", "name", "description", *FILE_SETTINGS})
        if unknown:
            raise EvalFileError(f"unknown setting {unknown[0]!r} (a file may set {', '.join(FILE_SETTINGS)})", file=file)
        settings = {key: data[key] for key in FILE_SETTINGS if key in data}
        data = data.get("cases")
    if not isinstance(data, list) or not data:
        raise EvalFileError("no cases: give a list of cases, or `cases:` with a list", file=file)
    cases: list[Case] = []
    seen: set[str] = set()
    for index, raw in enumerate(data):
        case = raw if isinstance(raw, Case) else _case(raw, index, settings, file)
        if case.id in seen:
            raise EvalFileError("a second case with this id (ids name cases in reports and baselines)", file=file, case=case.id)
        seen.add(case.id)
        cases.append(case)
    return cases


def _case(raw: Any, index: int, settings: Mapping[str, Any], file: str) -> Case:
    if not isinstance(raw, Mapping):
        raise EvalFileError(f"case {index + 1} is a {type(raw).__name__}, not a mapping", file=file)
    raw = dict(raw)
    raw.setdefault("id", raw.pop("name", None) or f"case-{index + 1}")
    expect = raw.get("expect")
    if isinstance(expect, Mapping) and "approvals" in expect:  # the decisions may sit with the expectations
        expect = dict(expect)
        raw.setdefault("approvals", expect.pop("approvals"))
        raw["expect"] = expect
    for key, value in settings.items():
        if key in ("request_context", "memory") and isinstance(raw.get(key), Mapping) and isinstance(value, Mapping):
            raw[key] = {**value, **raw[key]}
        else:
            raw.setdefault(key, value)
    try:
        return Case.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = _field(error["loc"])
        raise EvalFileError(_message(error), file=file, case=str(raw.get("id")), field=field) from None


def _field(loc: Iterable[Any]) -> str:
    """`expect.delegations[0].prompt` from pydantic's error location (its tagged-union
    and validator steps left out)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "list[str]", "function-before[_shorthand(), TextMatch]") or "[" in str(part):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out


def _message(error: Mapping[str, Any]) -> str:
    kind, loc = error["type"], [p for p in error["loc"] if isinstance(p, str)]
    if kind == "extra_forbidden":
        name = loc[-1] if loc else "?"
        parent = loc[-2] if len(loc) > 1 else ""
        if parent in ("prompt", "output") or parent.startswith("function-before") and "TextMatch" in parent:
            return f"unknown matcher {name!r} (use {', '.join(MATCHERS)})"
        return f"unknown field {name!r}"
    message = str(error["msg"])
    return message.removeprefix("Value error, ")
