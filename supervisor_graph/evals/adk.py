"""Google ADK evalsets read as cases (SPEC §31): a team moving from `adk eval` keeps its
cases.

An evalset (`{"eval_set_id", "eval_cases": [{"eval_id", "conversation": [...]}]}`) has,
per turn, `user_content`, `final_response` and `intermediate_data.tool_uses`. Each eval
case becomes one case: its turns run on one thread; the tool uses of all turns are
expected as the run's flat trajectory (`all_tools`, strict, arguments equal: ADK's
`tool_trajectory_avg_score` at 1.0, which attributes no call to an agent);
`transfer_to_agent(agent_name=X)` is the delegation call `agent-X`; the last turn's final
response is matched with `similar_to` (ROUGE-1 F1 at least 0.8: ADK's default
`response_match_score`); `session_input.state` becomes the request context. The older
format (a list of `{"query", "expected_tool_use", "reference"}`) is read too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["adk_cases", "is_adk_evalset"]


def is_adk_evalset(data: Any) -> bool:
    if isinstance(data, Mapping):
        return "eval_cases" in data
    return isinstance(data, list) and bool(data) and all(isinstance(x, Mapping) and "query" in x for x in data)


def _text(content: Any) -> str:
    if not isinstance(content, Mapping):
        return "" if content is None else str(content)
    return "".join(str(part.get("text") or "") for part in content.get("parts") or () if isinstance(part, Mapping))


def _tool(name: str, args: Any) -> dict[str, Any]:
    if name == "transfer_to_agent" and isinstance(args, Mapping) and args.get("agent_name"):
        return {"name": f"agent-{args['agent_name']}"}
    return {"name": name, "args": dict(args or {})}


def adk_cases(data: Any) -> dict[str, Any]:
    """The evalset as a case file's data (`{"cases": [...]}`)."""
    if isinstance(data, list):  # the older format: one turn per entry
        return {"cases": [_old_case(i, entry) for i, entry in enumerate(data)]}
    cases = []
    for index, case in enumerate(data.get("eval_cases") or ()):
        turns = case.get("conversation") or []
        tools = [
            _tool(use.get("name", ""), use.get("args"))
            for turn in turns
            for use in ((turn.get("intermediate_data") or {}).get("tool_uses") or ())
        ]
        expect: dict[str, Any] = {"all_tools": tools}
        final = _text(turns[-1].get("final_response")) if turns else ""
        if final:
            expect["output"] = {"similar_to": final}
        out: dict[str, Any] = {
            "id": case.get("eval_id") or f"case-{index + 1}",
            "input": [_text(turn.get("user_content")) for turn in turns],
            "expect": expect,
        }
        state = (case.get("session_input") or {}).get("state")
        if state:
            out["request_context"] = dict(state)
        cases.append(out)
    return {"cases": cases}


def _old_case(index: int, entry: Mapping[str, Any]) -> dict[str, Any]:
    expect: dict[str, Any] = {
        "all_tools": [_tool(use.get("tool_name", ""), use.get("tool_input")) for use in entry.get("expected_tool_use") or ()]
    }
    if entry.get("reference"):
        expect["output"] = {"similar_to": str(entry["reference"])}
    return {"id": f"case-{index + 1}", "input": str(entry.get("query") or ""), "expect": expect}
