"""`supervisor-graph eval TARGET CASES`: run a case file against an agent (or, with
`--url`, against a served one over AG-UI), print the report, write JSON / JUnit XML,
compare with a baseline, and exit 0 (every case passed), 1 (a case failed or errored)
or 2 (the harness could not run: a bad file, an import error).

`supervisor-graph eval --example` runs the cases that ship with the package against the
demo team, from any folder: the file is found with importlib.resources, not a path
relative to where the command runs."""

from __future__ import annotations

import argparse
import asyncio
import json
from contextlib import ExitStack
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from supervisor_graph.cli.output import make_console
from supervisor_graph.cli.target import load_agent
from supervisor_graph.declaration.errors import CLIError
from supervisor_graph.evals import EvalFileError, HarnessError, run
from supervisor_graph.evals.console import print_report
from supervisor_graph.evals.loading import load_cases
from supervisor_graph.evals.remote import RemoteTarget
from supervisor_graph.evals.runner import prepare

__all__ = ["EXAMPLE_CASES", "EXAMPLE_TARGET", "add_eval_parser", "cmd_eval"]

EXAMPLE_TARGET = "supervisor_graph.examples.research_write:agent"
EXAMPLE_CASES = "research_write_cases.yaml"  # in the supervisor_graph.examples package (package data)


def add_eval_parser(sub: Any) -> None:
    parser = sub.add_parser("eval", help="run a case file against an agent and gate on the result (CI)")
    parser.add_argument(
        "target", nargs="?", metavar="TARGET", help="module:attr or path/to/file.py:attr naming the Agent "
        "(with --url it may be left out: it then only checks the subagent keys)"
    )
    parser.add_argument("cases", nargs="?", metavar="CASES", help="the case file: .yaml, .jsonl, or an ADK evalset .json")
    parser.add_argument(
        "--example", action="store_true",
        help=f"run the packaged example cases ({EXAMPLE_CASES}) against the demo team ({EXAMPLE_TARGET}); "
        "one case fails on purpose (exit 1)",
    )
    parser.add_argument("--repeat", type=int, default=1, metavar="K", help="runs per case (pass rate and pass^k)")
    parser.add_argument("--concurrency", type=int, default=4, metavar="N", help="runs at once (default 4)")
    parser.add_argument("--min-pass-rate", type=float, default=1.0, metavar="R", help="with --repeat: a case passes at this pass rate (default 1.0)")
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON (a later --baseline)")
    parser.add_argument("--junit", metavar="FILE", help="write the report as JUnit XML")
    parser.add_argument("--baseline", metavar="FILE", help="a previous --json report: say what got better and worse")
    parser.add_argument("--url", metavar="URL", help="run against an AG-UI endpoint (serve --subagents attributed shows the tree)")
    parser.set_defaults(func=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    if args.example:
        if args.target is not None or args.cases is not None or args.url:
            raise CLIError("--example runs the packaged cases against the demo team: give no TARGET, CASES or --url")
        with ExitStack() as stack:  # a zipped install extracts the file for as long as the run lasts
            path = stack.enter_context(as_file(files("supervisor_graph.examples").joinpath(EXAMPLE_CASES)))
            return _run_eval(args, EXAMPLE_TARGET, str(path))
    target_name, cases_path = args.target, args.cases
    if cases_path is None and args.url:  # `eval cases.jsonl --url URL`: argparse gives the one name to TARGET
        target_name, cases_path = None, target_name
    if cases_path is None or (target_name is None and not args.url):
        raise CLIError("give TARGET and CASES (module:attr cases.yaml), CASES alone with --url, or --example")
    return _run_eval(args, target_name, cases_path)


def _run_eval(args: argparse.Namespace, target_name: str | None, cases_path: str) -> int:
    if args.repeat < 1 or args.concurrency < 1 or not 0.0 <= args.min_pass_rate <= 1.0:
        raise CLIError("--repeat and --concurrency must be at least 1, --min-pass-rate in [0, 1]")
    baseline: dict[str, Any] | None = None
    if args.baseline:
        try:
            baseline = json.loads(Path(args.baseline).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CLIError(f"baseline {args.baseline!r} cannot be read as a report: {exc}") from None
    try:
        cases = load_cases(cases_path)  # the file first: its mistakes are found before the agent is imported
    except EvalFileError as exc:
        raise CLIError(str(exc)) from None
    agent: Any = load_agent(target_name) if target_name else None
    if args.url:
        agent = RemoteTarget(args.url, agent=agent)
    try:  # every mistake in the file, the agent or the scorers, before the progress bar starts
        agent, cases, _, _ = prepare(agent, cases, str(cases_path))
    except (EvalFileError, HarnessError) as exc:
        raise CLIError(str(exc)) from None
    console = make_console()
    progress = Progress(
        TextColumn("eval"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}"),
        console=Console(stderr=True), transient=True,
    )
    with progress:
        task = progress.add_task("", total=len(cases) * args.repeat)

        def done(outcome: Any) -> None:
            progress.update(task, advance=1, description=f"{outcome.case_id}: {outcome.status}")

        try:
            report = asyncio.run(
                run(agent, cases, repeat=args.repeat, concurrency=args.concurrency, min_pass_rate=args.min_pass_rate,
                    baseline=baseline, file=str(cases_path), on_result=done)
            )
        except (EvalFileError, HarnessError) as exc:
            raise CLIError(str(exc)) from None
    print_report(report, console)
    if args.json:
        report.write_json(args.json)
    if args.junit:
        report.write_junit(args.junit)
    return report.exit_code
