"""`python -m bench tokens` (issue 51) in parts: the encoding is OpenAI's o200k_base, the
counts split a request by part and find its shared prefix, the fake server answers every
kind of delegation tool with the same prompt, the guard fails on an increase only, and a
rerun replaces its section of bench/RESULTS.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.tokens import compare
from bench.tokens_count import Call, Run, count, encoding, summary
from bench.tokens_report import BEGIN, END, write_section
from bench.tokens_server import RESEARCH, SUPERVISOR, reply, research_prompt


def test_the_encoding_is_o200k_base() -> None:
    enc = encoding()
    assert (enc.name, enc.fallback) == ("o200k_base", False)
    assert enc.encode("hello world") == [24912, 2375]  # o200k_base's ids (cl100k_base: 15339, 1917)


def _body(*messages: dict[str, Any], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"messages": list(messages), "tools": tools or []}


def _tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": "d", "parameters": parameters}}


def test_a_request_is_counted_by_part_and_its_shared_prefix_per_agent() -> None:
    enc = encoding()
    system = {"role": "system", "content": SUPERVISOR}
    user = {"role": "user", "content": "Write a short brief about tidal energy."}
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "facts"}
    tools = [_tool("research", {"type": "object", "properties": {}})]
    first, other, second = count(
        [
            (0, "supervisor", _body(system, user, tools=tools)),
            (0, "research", _body({"role": "system", "content": RESEARCH}, user)),
            (0, "supervisor", _body(system, user, call, result, tools=tools)),
        ],
        enc,
    )
    n = lambda value: len(enc.encode(json.dumps(value, separators=(",", ":"))))  # noqa: E731
    assert first.parts == {"tool schemas": n(tools[0]), "system": n(system), "history": n(user), "tool results": 0}
    assert second.parts == {"tool schemas": n(tools[0]), "system": n(system), "history": n(user) + n(call), "tool results": n(result)}
    assert (first.shared, other.shared) == (0, 0)  # no earlier call of that agent
    assert second.shared == first.total  # the supervisor's first request is a prefix of its second


@pytest.mark.parametrize(
    ("parameters", "args"),
    [
        ({"type": "object", "properties": {"prompt": {"type": "string"}, "max_steps": {"type": "integer"}}, "required": ["prompt"]}, ["prompt"]),
        ({"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}, ["input"]),
        ({"type": "object", "properties": {}}, []),  # a handoff
    ],
)
def test_every_delegation_tool_gets_the_same_prompt(parameters: dict[str, object], args: list[str]) -> None:
    body = _body(
        {"role": "system", "content": SUPERVISOR},
        {"role": "user", "content": "Write a short brief about heat pumps."},
        tools=[_tool("agent-writing", parameters), _tool("agent-research", parameters)],
    )
    (call,) = reply(body, "call_0001")["tool_calls"]
    assert call["function"]["name"] == "agent-research"
    assert json.loads(call["function"]["arguments"]) == dict.fromkeys(args, research_prompt("heat pumps"))


def _run(name: str, research: int) -> Run:
    parts = {"tool schemas": 10, "system": 5, "history": research, "tool results": 0}
    return Run(name, [Call(0, "supervisor", {**parts, "history": 7}, 0), Call(0, "research", parts, 0)], 0.0)


def test_the_guard_fails_on_an_increase_only() -> None:
    base = {name: {s: summary(_run(name, 20).within(1 if s == "one task" else 5)) for s in ("one task", "five turns")} for name in ("ours", "ours_no_inherit")}
    baseline = {"encoding": "o200k_base", "counts": base}
    enc = encoding()
    same = compare(enc, {"ours": _run("ours", 20), "ours_no_inherit": _run("ours_no_inherit", 20)}, baseline)
    assert same.ok and not same.decreases
    lower = compare(enc, {"ours": _run("ours", 15), "ours_no_inherit": _run("ours_no_inherit", 20)}, baseline)
    assert lower.ok and any("ours, one task, research: 35 -> 30 (-5)" in line for line in lower.decreases)
    higher = compare(enc, {"ours": _run("ours", 20), "ours_no_inherit": _run("ours_no_inherit", 21)}, baseline)
    assert not higher.ok
    assert any("ours_no_inherit, five turns, total: 57 -> 58 (+1)" in line for line in higher.increases)
    assert "python -m bench tokens --update" in higher.message()
    other = compare(enc, {}, {"encoding": "cl100k_base", "counts": {}})
    assert not other.ok and "cl100k_base" in other.message()


def test_a_rerun_replaces_its_section_only(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n## Peers\n\nx\n\n## What was tried\n\ny\n")
    write_section(results, f"{BEGIN}\n## Tokens per task\n\nfirst\n{END}\n")
    write_section(results, f"{BEGIN}\n## Tokens per task\n\nsecond\n{END}\n")
    text = results.read_text()
    assert text.count(BEGIN) == 1 and "second" in text and "first" not in text
    assert text.index("## Peers") < text.index("## Tokens per task") < text.index("## What was tried")
