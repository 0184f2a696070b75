"""`supervisor-graph run TARGET PROMPT`, and the loop it shares with `demo`: stream the
run through a `LiveView`, answer each pause with an `Answerer` and resume, and turn
the outcome into the exit status (`EXIT_PAUSED` when nobody could answer)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text

from supervisor_graph.agent import Agent
from supervisor_graph.cli.answers import Answerer, answerer_for, answers_for
from supervisor_graph.cli.live_view import LiveView
from supervisor_graph.cli.output import PROG, make_console, one_line, print_error
from supervisor_graph.cli.target import load_agent
from supervisor_graph.declaration.errors import CLIError, MissingAPIKeyError, SupervisorGraphError
from supervisor_graph.declaration.models import check_credentials, model_strings
from supervisor_graph.memory.memory import Memory
from supervisor_graph.run.facade import AgentStream, GenerateResult
from supervisor_graph.run.resume import check_answer, resume

__all__ = ["EXIT_PAUSED", "cmd_run", "stream_run", "with_storage"]

EXIT_PAUSED = 3


async def _consume(stream: AgentStream, view: LiveView) -> GenerateResult | int:
    """Show a stream's chunks; its result, or the exit status when it failed."""
    async for chunk in stream.full_stream:
        view.show(chunk)
    try:
        return await stream.result()
    except MissingAPIKeyError:  # already shown by the stream's error chunk
        return 2
    except Exception:  # noqa: BLE001 - likewise
        return 1


async def stream_run(
    agent: Agent,
    prompt: str,
    options: dict[str, Any],
    view: LiveView,
    answerer: Answerer,
    close: Memory | None = None,
) -> int:
    """Stream one run through `view`, answering its pauses with `answerer`; the exit status."""
    answerer.check = answerer.check or partial(check_answer, agent)  # edited args asked again until valid
    try:
        try:
            stream = await agent.stream(prompt, **options)
        except (SupervisorGraphError, ValueError, TypeError) as exc:  # refused before it started
            print_error(one_line(exc))
            return 2
        while True:
            outcome = await _consume(stream, view)
            if isinstance(outcome, int):
                return outcome
            result = outcome
            if result.finish_reason != "suspended":  # client_tool items are the caller's, not the terminal's
                break
            view.close()
            approvals: dict[str, Any] = {}  # kept when resume data has to be asked again
            while True:
                try:
                    answers = answers_for(result, answerer, approvals)
                except EOFError:
                    answers = None
                if answers is None:
                    view.finish(result)
                    print(f"{PROG}: paused: {_paused_message(result, options)}", file=sys.stderr)
                    return EXIT_PAUSED
                try:
                    stream = await resume(agent, answers, run_id=result.run_id, streaming=True, **options)  # type: ignore[assignment]
                    break
                except SupervisorGraphError as exc:  # e.g. the pause was answered elsewhere
                    print_error(one_line(exc))
                    return 1
                except ValueError as exc:  # e.g. resume data not matching the tool's resume schema
                    if not answerer.interactive:
                        print_error(one_line(exc))
                        return 2
                    view.console.print(f"  {exc}", markup=False, highlight=False)
                    kinds = {item.interrupt_id: item.kind for item in result.suspended}
                    approvals = {key: value for key, value in answers.items() if kinds.get(key) == "approval"}
    finally:
        view.close()
        if close is not None:
            await close.aclose()
    view.finish(result)
    return 0


def _paused_message(result: GenerateResult, options: dict[str, Any]) -> str:
    items = ", ".join(f"{item.tool_name} ({item.kind}, interrupt {item.interrupt_id})" for item in result.suspended)
    where = (
        f"; it stays paused in thread {options['memory']['thread']!r}"
        if options.get("memory")
        else "; it is lost when this process ends"
    )
    return f"waiting for {items}{where}; run it in a terminal to answer, or pass --approve-all / --decline-all"


def cmd_run(args: argparse.Namespace) -> int:
    agent = load_agent(args.target)
    options: dict[str, Any] = {}
    if args.max_steps is not None:
        if args.max_steps < 1:
            raise CLIError(f"--max-steps must be at least 1, not {args.max_steps}")
        options["max_steps"] = args.max_steps
    opened: Memory | None = None
    if args.checkpoint and not args.thread:
        raise CLIError("--checkpoint forks a thread: pass --thread too")
    if args.thread:
        agent, opened = with_storage(agent, args.db)
        options["memory"] = {"thread": args.thread}
        if args.checkpoint:
            options["memory"]["checkpoint"] = args.checkpoint
    for value in model_strings(agent):
        check_credentials(value)  # before anything is printed
    console = make_console()
    if not args.json:
        console.print(Text.assemble((agent.id, "bold cyan"), ": ", args.prompt))
    view = LiveView(console, json_lines=args.json)
    return asyncio.run(stream_run(agent, args.prompt, options, view, answerer_for(args, console), close=opened))


def with_storage(agent: Agent, db: str) -> tuple[Agent, Memory | None]:
    """`agent`, with a sqlite `Memory` at `db` when it has none (that memory, to close)."""
    if agent.memory is not None:
        return agent, None
    folder = Path(db).expanduser().resolve().parent
    if not folder.is_dir():
        raise CLIError(f"--db {db}: the folder {str(folder)!r} does not exist; create it or pick another file")
    agent = agent.model_copy()
    agent.memory = opened = Memory(storage=f"file:{db}")  # assignment resets the copy's caches
    return agent, opened
