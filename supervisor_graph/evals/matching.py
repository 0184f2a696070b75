"""Checking a trajectory tree against a case's expectations, level by level, each
difference spelled out with its agent path (SPEC §31).

Order modes (agentevals' four, plus `in_order`), on one level's list of expected items
against what the agent did there:
- `strict`: exactly these, in this order (calls made in one model turn, in parallel, may
  come in any order among themselves, as agentevals' strict match allows);
- `in_order`: these, in this order, others allowed between them;
- `unordered`: exactly these, in any order;
- `subset`: nothing beyond these (some may be missing);
- `superset`: at least these, in any order (others allowed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from supervisor_graph.evals.cases import DelegationExpect, Expect, ToolExpect, value_problems
from supervisor_graph.evals.trajectory import AgentRun, ToolUse

__all__ = ["Difference", "compare_tree", "match_level"]


@dataclass(frozen=True)
class Difference:
    """One way a case's run differs from what it expects. `kind`: `missing`, `extra`,
    `order`, `prompt`, `args`, `success`, `output`, `object`, `finish_reason`, `tokens`,
    `time`, `tool_calls`, `scorer`, `approval`."""

    path: str
    kind: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def compare_tree(expect: Expect, root: AgentRun) -> list[Difference]:
    """Every difference between the expected delegations / tool calls and `root`'s."""
    path = root.agent_id
    found: list[Difference] = []
    if expect.delegations is not None:
        found += match_level(expect.delegations, root.delegations, expect.order, path)
    if expect.tools is not None:
        found += match_level(expect.tools, root.tools, expect.tools_order, path)
    if expect.all_tools is not None:
        found += match_level(expect.all_tools, list(root.all_tools()), expect.all_tools_order, path + " (all agents)")
    return found


def _describe(item: Any) -> str:
    if isinstance(item, AgentRun):
        prompt = item.prompt if len(item.prompt) <= 60 else item.prompt[:59] + "…"
        return f"delegation to {item.key} (prompt {prompt!r})"
    if isinstance(item, ToolUse):
        args = ", ".join(f"{k}={v!r}" for k, v in item.args.items())
        return f"tool call {item.name}({args if len(args) <= 60 else args[:59] + '…'})"
    if isinstance(item, DelegationExpect):
        return f"delegation to {item.describe()}"
    return f"tool call {item.describe()}"


def _pair(expected: Any, actual: Any, path: str) -> list[Difference] | None:
    """What differs between an expected item and an actual one of the same agent or tool
    (None when they are of different agents or tools: no pair at all)."""
    if isinstance(expected, ToolExpect):
        if not isinstance(actual, ToolUse) or actual.name != expected.name:
            return None
        return [
            Difference(path, "args", problem)
            for key, matcher in (expected.args or {}).items()
            for problem in value_problems(matcher, actual.args.get(key), f"tool call {actual.name}: argument {key}")
        ]
    if not isinstance(actual, AgentRun) or actual.key != expected.agent:
        return None
    found = [
        Difference(path, "prompt", f"delegation to {actual.key}: {problem}")
        for problem in (expected.prompt.problems(actual.prompt, "prompt") if expected.prompt else [])
    ]
    if expected.success is not None and actual.success != expected.success:
        found.append(Difference(path, "success", f"delegation to {actual.key} {'failed' if expected.success else 'succeeded'}"))
    inner = f"{path}/{actual.agent_id}"
    if expected.tools is not None:
        found += match_level(expected.tools, actual.tools, expected.tools_order, inner)
    if expected.delegations is not None:
        found += match_level(expected.delegations, actual.delegations, expected.order, inner)
    return found


def _bipartite(rows: Sequence[int], cols: Sequence[int], ok: Callable[[int, int], bool]) -> dict[int, int]:
    """A maximum matching row -> col among `ok` pairs (Kuhn's augmenting paths)."""
    owner: dict[int, int] = {}

    def augment(row: int, seen: set[int]) -> bool:
        for col in cols:
            if col in seen or not ok(row, col):
                continue
            seen.add(col)
            if col not in owner or augment(owner[col], seen):
                owner[col] = row
                return True
        return False

    for row in rows:
        augment(row, set())
    return {row: col for col, row in owner.items()}


def _in_order(n: int, m: int, ok: Callable[[int, int], bool]) -> dict[int, int]:
    """The longest run of pairs in the same order on both sides (LCS)."""
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            best[i][j] = max(best[i + 1][j], best[i][j + 1], best[i + 1][j + 1] + 1 if ok(i, j) else 0)
    pairs, i, j = {}, 0, 0
    while i < n and j < m:
        if ok(i, j) and best[i][j] == best[i + 1][j + 1] + 1:
            pairs[i] = j
            i, j = i + 1, j + 1
        elif best[i + 1][j] >= best[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _turn_order(expected: Sequence[Any], actual: Sequence[Any], full: Callable[[int, int], bool]) -> list[int]:
    """`actual`'s indexes with the calls of one model turn (made in parallel) put in the
    order the expectation lists them."""
    order: list[int] = []
    start = 0
    while start < len(actual):
        end = start
        while end < len(actual) and getattr(actual[end], "turn", 0) == getattr(actual[start], "turn", 0):
            end += 1
        rank = {j: min((i for i in range(len(expected)) if full(i, j)), default=len(expected)) for j in range(start, end)}
        order += sorted(range(start, end), key=lambda j: rank[j])
        start = end
    return order


def match_level(expected: Sequence[Any], actual: Sequence[Any], mode: str, path: str) -> list[Difference]:
    """The differences on one level: `expected` items against `actual` ones under `mode`."""
    problems = [[_pair(e, a, path) for a in actual] for e in expected]

    def full(i: int, j: int) -> bool:
        return problems[i][j] == []

    rows, cols = range(len(expected)), range(len(actual))
    found: list[Difference] = []
    if mode in ("strict", "in_order"):
        order = _turn_order(expected, actual, full)
        pairs = {i: order[j] for i, j in _in_order(len(expected), len(order), lambda i, j: full(i, order[j])).items()}
    else:
        pairs = _bipartite(rows, cols, full)
    left_e = [i for i in rows if i not in pairs]
    left_a = [j for j in cols if j not in pairs.values()]
    if mode in ("strict", "in_order"):  # right item, wrong place
        moved = _bipartite(left_e, left_a, full)
        for i, j in moved.items():
            found.append(
                Difference(path, "order", f"{_describe(actual[j])} is out of order: expected as item {i + 1} of {len(expected)}, made as call {j + 1} of {len(actual)}")
            )
        left_e = [i for i in left_e if i not in moved]
        left_a = [j for j in left_a if j not in moved.values()]
    near = _bipartite(left_e, left_a, lambda i, j: problems[i][j] is not None)  # same agent / tool, something differs
    for i, j in near.items():
        found += problems[i][j] or []
    left_e = [i for i in left_e if i not in near]
    left_a = [j for j in left_a if j not in near.values()]
    if mode != "subset":
        found += [Difference(path, "missing", f"missing {_describe(expected[i])} (order {mode})") for i in left_e]
    if mode in ("strict", "unordered", "subset"):
        found += [Difference(path, "extra", f"extra {_describe(actual[j])} (order {mode})") for j in left_a]
    return found
