"""How `run` and `demo` show a run as it streams: a line per delegation and tool call,
a spinner while the model thinks, then the answer, the token usage and, when the price
table knows its models, the cost in USD (or, with
`--json`, every stream chunk as one JSON line)."""

from __future__ import annotations

import json
import logging
import math
import time

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.text import Text

from supervisor_graph.cli.output import print_error, short
from supervisor_graph.nodes.turn.tools import DECLINED_TEXT
from supervisor_graph.run.chunks import StreamChunk
from supervisor_graph.run.facade import GenerateResult

__all__ = ["LiveView"]


class LiveView:
    """Renders a run's chunks: a line per delegation and tool call, then the answer and
    usage. With `json_lines=True` prints each chunk as one JSON line instead."""

    def __init__(self, console: Console, json_lines: bool = False) -> None:
        self.console = console
        self.json_lines = json_lines
        self.started: dict[str, float] = {}
        self.t0 = time.perf_counter()
        self.status = console.status("starting...") if console.is_terminal and not json_lines else None

    def _line(self, depth: int, *parts: str | tuple[str, str]) -> None:
        self.console.print(Text.assemble("  " * depth, *parts))

    def show(self, chunk: StreamChunk) -> None:
        p = chunk.payload
        if chunk.type == "error":
            self.close()
            print_error(f"{p.get('error')}: {short(p.get('message'), 300)}")
        if self.json_lines:
            print(json.dumps(chunk.model_dump(mode="json"), default=str), flush=True)
            return
        who, depth = chunk.agent_path[-1], len(chunk.agent_path) - 1
        if chunk.type == "step-start":
            self._status(f"{who} is thinking (step {p.get('iteration')})")
        elif chunk.type == "delegation-start":
            self.started[p.get("tool_call_id") or ""] = time.perf_counter()
            self._status(f"{p.get('agent_id')} is working")
            self._line(
                depth, (who, "cyan"), " -> ", (str(p.get("agent_id")), "bold cyan"), f": {short(p.get('prompt'))!r}"
            )
        elif chunk.type == "delegation-complete":
            began = self.started.pop(p.get("tool_call_id") or "", None)
            self._status(f"{who} is reading the result")
            took = f" in {time.perf_counter() - began:.2f}s" if began is not None else ""
            if p.get("success"):
                self._line(
                    depth + 1,
                    (str(p.get("agent_id")), "bold cyan"),
                    (f" answered{took}", "green"),
                    f": {short(p.get('text'))!r}",
                )
            else:
                self._line(
                    depth + 1,
                    (str(p.get("agent_id")), "bold cyan"),
                    (f" failed{took}", "red"),
                    f" ({p.get('finish_reason')})",
                )
        elif "working_memory" in p:
            if chunk.type == "tool-result":
                value = short(json.dumps(p["working_memory"]["value"]))
                self._line(depth, (who, "cyan"), (" updated its working memory", "blue"), f": {value}")
        elif chunk.type == "tool-call" and not str(p.get("tool_name")).startswith("agent-"):
            self._line(
                depth,
                (who, "cyan"),
                " calls tool ",
                (str(p.get("tool_name")), "magenta"),
                f" {short(json.dumps(p.get('args')), 80)}",
            )
        elif chunk.type in ("tool-result", "tool-error") and not str(p.get("tool_name")).startswith("agent-"):
            if chunk.type == "tool-result":
                style, word = "green", "returned"
            elif str(p.get("result")).startswith(DECLINED_TEXT):  # with the person's reason, if any
                style, word = "yellow", "did not run (declined)"
            else:
                style, word = "red", "failed"
            self._line(
                depth + 1, (str(p.get("tool_name")), "magenta"), (f" {word}", style), f": {short(p.get('result'))!r}"
            )
        elif chunk.type in ("tool-call-approval", "tool-call-suspended"):
            what = "waits for approval" if chunk.type == "tool-call-approval" else "is suspended"
            self._line(
                depth,
                (str(p.get("tool_name")), "magenta"),
                (f" {what}", "yellow"),
                f" {short(json.dumps(p.get('args')), 80)}",
            )
        elif chunk.type == "abort":
            self._line(0, ("run aborted", "yellow"), f": {p.get('reason') or 'no reason given'}")

    def finish(self, result: GenerateResult) -> None:
        self.close()
        if self.json_lines:
            return
        console = self.console
        answer = result.text or "(no answer)"
        if result.finish_reason == "suspended" and not result.text:
            pass  # nothing to show yet: the run waits for an answer
        elif console.is_terminal:
            console.print(Panel(Markdown(answer), title="answer", title_align="left", border_style="green"))
        else:
            console.rule("answer", align="left")
            console.print(answer, markup=False, highlight=False)
            console.rule()
        u = result.usage
        costs = _costs(result)
        console.print(
            f"finish: {result.finish_reason} | tokens: {u.input_tokens} in, {u.output_tokens} out, "
            f"{u.total_tokens} total{_usd(costs.get(''))} | {time.perf_counter() - self.t0:.2f}s"
            + (f" | thread: {result.thread_id}" if result.thread_id else ""),
            markup=False,
            highlight=False,
        )
        used = {path: u for path, u in result.usage_by_agent.items() if u.total_tokens}
        if len(used) > 1:  # one agent's line would only repeat the total above
            for path, u in used.items():
                console.print(
                    f"  {path}: {u.input_tokens} in, {u.output_tokens} out, {u.total_tokens} total{_usd(costs.get(path))}",
                    markup=False,
                    highlight=False,
                )

    def _status(self, message: str) -> None:
        if self.status is not None:
            self.status.update(message)
            self.status.start()

    def close(self) -> None:
        if self.status is not None:
            self.status.stop()


def _costs(result: GenerateResult) -> dict[str, float | None]:
    """The run's cost in USD ("") and each agent's, by path (SPEC §33). A model the price
    table lacks leaves its cost unknown: the line then shows none, without the library's
    warning, which would only repeat that (a scripted demo model has no price)."""
    quiet = _Unpriced()
    log = logging.getLogger("supervisor_graph")
    log.addFilter(quiet)
    try:
        return {"": result.cost, **{path: u.cost for path, u in result.usage_by_agent.items()}}
    finally:
        log.removeFilter(quiet)


class _Unpriced(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("no price for ")


def _usd(cost: float | None) -> str:
    """`cost` as a line shows it (nothing when unknown): cents for a dollar or more, else
    enough digits that a cheap call does not read as free."""
    if cost is None:
        return ""
    if cost >= 1 or cost <= 0:
        return f", ${cost:.2f}"
    decimals = max(2, 2 - math.floor(math.log10(cost)))  # three significant digits
    return f", ${cost:.{decimals}f}".rstrip("0")
