"""The report in a terminal: a table of cases (result, pass rate and pass^k with
repeats, tokens, cost, time, finish reason, the differences) and the totals, with rich.

A case id is never wrapped or cut: it is what a reader greps a CI log for and pastes
into a case file. Piped (a CI log, a file), the table is as wide as its content, as
every other long line the CLI prints stays whole when piped; in a terminal it is at
least as wide as its ids and longest words, the terminal wrapping it if it is narrower."""

from __future__ import annotations

from rich.console import Console
from rich.measure import Measurement
from rich.segment import Segments
from rich.table import Table
from rich.text import Text

from supervisor_graph.evals.report import EvalReport, usd
from supervisor_graph.nodes.observability.cost import sum_costs

__all__ = ["print_report"]

_STYLE = {"passed": "green", "failed": "red", "errored": "bold magenta"}


def print_report(report: EvalReport, console: Console) -> None:
    table = Table(title=f"{report.agent} on {report.file}", show_lines=True, expand=False)
    table.add_column("case", no_wrap=True, min_width=max((len(case.id) for case in report.cases), default=4))
    table.add_column("result")
    if report.repeat > 1:
        table.add_column("pass rate", justify="right")
        table.add_column(f"pass^{report.repeat}", justify="right")
    table.add_column("tokens", justify="right")
    table.add_column("cost", justify="right")
    table.add_column("time", justify="right")
    table.add_column("finish")
    table.add_column("differences", overflow="fold")
    for case in report.cases:
        run = case.runs[-1]
        cells: list[str | Text] = [case.id, Text(case.status, style=_STYLE[case.status])]
        if report.repeat > 1:
            cells += [f"{case.pass_rate:.2f}", f"{case.pass_k:.2f}"]
        tokens = sum(r.tokens for r in case.runs) // max(len(case.runs), 1)
        seconds = sum(r.seconds for r in case.runs) / max(len(case.runs), 1)
        cost = sum_costs(r.cost for r in case.runs)
        cells += [str(tokens), usd(cost / max(len(case.runs), 1) if cost is not None else None), f"{seconds:.2f} s", str(run.finish_reason or "-"), case.summary() if case.status != "passed" else ""]
        table.add_row(*cells)
    _print_whole(console, table)
    console.print(report.totals_line(), markup=False, highlight=False)
    if report.baseline is not None:
        diff = report.baseline
        for label, lines, style in (("better", diff.better, "green"), ("worse", diff.worse, "red")):
            for line in lines:
                console.print(Text(f"{label}: ", style=style) + Text(line))
        if diff.new:
            console.print(f"new since the baseline: {', '.join(diff.new)}", markup=False, highlight=False)
        if diff.removed:
            console.print(f"gone since the baseline: {', '.join(diff.removed)}", markup=False, highlight=False)
        if not (diff.better or diff.worse):
            console.print("no case got better or worse than the baseline", markup=False, highlight=False)


def _print_whole(console: Console, table: Table) -> None:
    unbounded = console.options.update_width(1_000_000)
    measured = Measurement.get(console, unbounded, table)
    width = measured.maximum if not console.is_terminal else max(console.width, measured.minimum)
    if width <= console.width:
        console.print(table)
        return
    # console.print caps the width at the console's: render at the width the table needs
    # and write the lines uncropped
    lines = console.render_lines(table, console.options.update_width(width), pad=False, new_lines=True)
    console.print(Segments([segment for line in lines for segment in line]), crop=False, end="")
