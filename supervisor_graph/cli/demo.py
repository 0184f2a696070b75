"""`supervisor-graph demo`: the research-and-write example, offline on a scripted model
unless `--model` names a real one, streamed and answered as `run` does."""

from __future__ import annotations

import argparse
import asyncio

from rich.text import Text

from supervisor_graph.cli.answers import answerer_for
from supervisor_graph.cli.live_view import LiveView
from supervisor_graph.cli.output import make_console
from supervisor_graph.cli.run import stream_run
from supervisor_graph.declaration.errors import CLIError, MissingAPIKeyError
from supervisor_graph.declaration.models import check_credentials, parse_model_string

__all__ = ["cmd_demo"]


def cmd_demo(args: argparse.Namespace) -> int:
    # imported here: the example builds and compiles its agents when imported
    from supervisor_graph.examples.research_write import DEFAULT_PROMPT, PUBLISH_PROMPT, build_agents

    if args.model:
        try:
            parse_model_string(args.model)
            check_credentials(args.model)
        except MissingAPIKeyError as exc:
            needs = str(exc).split("; set it", 1)[0].removeprefix(f"model {args.model!r} ")
            raise CLIError(f"--model {args.model} {needs}; run without --model for the offline demo") from None
        except ValueError as exc:
            raise CLIError(str(exc)) from None
    agent = build_agents(args.model, latency=0.0 if args.model else 0.25)
    console = make_console()
    answerer = answerer_for(args, console)
    # The default request publishes (a tool that needs approval) whenever someone can
    # answer: a person at a terminal, or --approve-all / --decline-all; otherwise (a
    # script, CI) it only researches and writes, so the demo never stops to wait.
    prompt = args.prompt or (PUBLISH_PROMPT if answerer.interactive or answerer.approve_all is not None else DEFAULT_PROMPT)
    source = args.model or "a scripted model, offline"
    console.print(Text.assemble(("research-and-write demo", "bold"), f" on {source}"))
    console.print(Text.assemble(("prompt: ", "bold"), prompt))
    return asyncio.run(stream_run(agent, prompt, {"max_steps": 10}, LiveView(console), answerer))
