"""The `supervisor-graph` command (SPEC §16).

    supervisor-graph demo [--model openai/<name>] [--prompt TEXT] [--approve-all | --decline-all]
    supervisor-graph run TARGET PROMPT [--thread ID [--checkpoint ID]] [--db PATH] [--json]
                         [--max-steps N] [--approve-all | --decline-all]
    supervisor-graph history TARGET --thread ID [--db PATH] [--limit N] [--json]
    supervisor-graph draw TARGET [--png FILE]
    supervisor-graph serve TARGET [--port N] [--host HOST] [--path /agent]
                           [--subagents hidden|attributed] [--resource ID]
                           [--auth-token TOKEN] [--allowed-hosts H1,H2] [--workers N]
                           [--max-body-bytes N] [--max-thread-id-length N] [--read-timeout S]
                           [--on-busy reject|enqueue|interrupt|rollback]
    supervisor-graph versions list|save|publish|show TARGET AGENT_ID [...] [--db PATH]
    supervisor-graph eval TARGET CASES [--repeat K] [--concurrency N] [--json F] [--junit F]
                          [--baseline F] [--url URL]   (docs/evaluations.md)
    supervisor-graph eval --example [--json F] [--junit F]   (the packaged cases on the demo team)

TARGET names an `Agent`: `package.module:attr` or `path/to/file.py:attr`.

When a run pauses (a tool that needs approval, or a tool that called `suspend()`), an
interactive terminal is asked about each pending item (approve / decline / show the
arguments; JSON resume data for a suspended tool) and the run resumes, streaming.
`--approve-all` / `--decline-all` answer every approval without asking (for scripts and
`--json`). Otherwise a run that cannot ask (`--json`, or standard input is not a
terminal) stops at the pause with one line on stderr.

Exit status: 0 the run finished; 1 it failed; 2 a mistake the user can fix (printed as
one line on stderr); 3 the run is paused waiting for an answer nobody could give
(with `--thread` the pause is kept in the thread and can be answered from Python);
130 interrupted with Ctrl-C.

This module holds the argument parser and `main()`; each command lives in a module of
its own (`run`, `history`, `demo`, `draw`, `serve`, `versions`, `eval`). `load_agent`, `EXIT_PAUSED` and
`CLIError` are re-exported here for callers that import them from `cli.main`.
"""

from __future__ import annotations

import argparse
import signal

from supervisor_graph.cli.answers import add_answer_flags
from supervisor_graph.cli.demo import cmd_demo
from supervisor_graph.cli.draw import cmd_draw
from supervisor_graph.cli.eval import add_eval_parser
from supervisor_graph.cli.history import add_history_parser
from supervisor_graph.cli.output import PROG, print_error
from supervisor_graph.cli.run import EXIT_PAUSED, cmd_run
from supervisor_graph.cli.serve import add_serve_parser
from supervisor_graph.cli.target import load_agent
from supervisor_graph.cli.versions import add_versions_parser
from supervisor_graph.declaration.errors import CLIError, MissingAPIKeyError

__all__ = ["EXIT_PAUSED", "CLIError", "load_agent", "main"]


def build_parser() -> argparse.ArgumentParser:
    # imported here, as in `demo`: the example builds and compiles its agents when imported
    from supervisor_graph.examples.research_write import DEFAULT_PROMPT, PUBLISH_PROMPT

    parser = argparse.ArgumentParser(prog=PROG, description="Run, inspect and demo supervisor agents.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{demo,run,history,draw,serve,versions,eval}")

    demo = sub.add_parser("demo", help="run the research-and-write example (offline unless --model)")
    demo.add_argument("--model", help="openai/<name>: use a real model (needs OPENAI_API_KEY or OPENAI_BASE_URL)")
    demo.add_argument(
        "--prompt",
        help=f"what to ask the supervisor (default: {PUBLISH_PROMPT!r} when an approval can be answered, "
        f"{DEFAULT_PROMPT!r} otherwise)",
    )
    add_answer_flags(demo)
    demo.set_defaults(func=cmd_demo)

    run = sub.add_parser("run", help="run an agent on a prompt, streaming its delegations")
    run.add_argument("target", metavar="TARGET", help="module:attr or path/to/file.py:attr naming an Agent")
    run.add_argument("prompt", metavar="PROMPT")
    run.add_argument("--thread", help="continue (or start) this conversation thread")
    run.add_argument(
        "--db", default="supervisor-graph.db", help="sqlite file for --thread when the agent has no memory"
    )
    run.add_argument(
        "--json",
        action="store_true",
        help="print every stream chunk as one JSON line (never asks: a pause exits with status 3 "
        "unless --approve-all / --decline-all)",
    )
    run.add_argument("--max-steps", type=int, help="supervisor iterations allowed")
    run.add_argument("--checkpoint", metavar="ID", help="with --thread: fork from this checkpoint (see `history`)")
    add_answer_flags(run)
    run.set_defaults(func=cmd_run)

    draw = sub.add_parser("draw", help="print an agent's graph as Mermaid")
    draw.add_argument("target", metavar="TARGET", help="module:attr or path/to/file.py:attr naming an Agent")
    draw.add_argument("--png", metavar="FILE", help="render a PNG with a local renderer instead")
    draw.set_defaults(func=cmd_draw)

    add_serve_parser(sub)
    add_history_parser(sub)

    add_versions_parser(sub)
    add_eval_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    previous = None
    if args.command != "serve" and hasattr(signal, "SIGPIPE"):
        # `supervisor-graph run ... | head`: end quietly when the reader goes away, as
        # Unix tools do, instead of a BrokenPipeError traceback (a server keeps Python's
        # default: a closed log pipe must not kill it). Given back afterwards: a process
        # that calls main() in-process (a test suite, an app) would otherwise die at its
        # next write to a closed socket.
        previous = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        return int(args.func(args))
    except CLIError as exc:
        print_error(str(exc))
        return 2
    except MissingAPIKeyError as exc:  # checked before anything runs or is printed
        print_error(f"{type(exc).__name__}: {exc}")
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGPIPE, previous)


if __name__ == "__main__":
    raise SystemExit(main())
