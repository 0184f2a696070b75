"""The `supervisor-graph` command (SPEC §16).

    supervisor-graph demo [--model openai/<name>] [--prompt TEXT]
    supervisor-graph run TARGET PROMPT [--thread ID] [--db PATH] [--json] [--max-steps N]
    supervisor-graph draw TARGET [--png FILE]

TARGET names an `Agent`: `package.module:attr` or `path/to/file.py:attr`.
Errors the user can fix print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import os
import re
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.text import Text

from supervisor_graph.agent import Agent
from supervisor_graph.chunks import StreamChunk
from supervisor_graph.errors import MissingAPIKeyError, SupervisorGraphError
from supervisor_graph.memory import Memory
from supervisor_graph.models import parse_model_string
from supervisor_graph.run import GenerateResult

__all__ = ["CLIError", "load_agent", "main"]

PROG = "supervisor-graph"


class CLIError(Exception):
    """A mistake the user can fix; printed as one line, exit status 2."""


# -- finding the agent ----------------------------------------------------------


def load_agent(target: str) -> Agent:
    """The `Agent` that `module:attr` or `path/to/file.py:attr` names."""
    source, sep, attr = target.rpartition(":")
    if not sep or not source or not attr:
        raise CLIError(f"target {target!r} must look like module:attr or path/to/file.py:attr")
    if source.endswith(".py") or "/" in source or os.sep in source:
        module = _import_file(Path(source))
    else:
        module = _import_module(source)
    agents = sorted(name for name, value in vars(module).items() if isinstance(value, Agent))
    hint = f" (agents defined there: {', '.join(agents)})" if agents else ""
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CLIError(f"{source!r} has no attribute {attr!r}{hint}")
        obj = getattr(obj, part)
    if not isinstance(obj, Agent):
        raise CLIError(f"{target!r} is not a supervisor_graph.Agent but a {type(obj).__name__} object{hint}")
    return obj


def _import_module(name: str) -> ModuleType:
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # console scripts do not see the working directory
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise CLIError(
                f"cannot import {name!r}: no module named {exc.name!r} (check the name and the working directory)"
            ) from None
        raise CLIError(f"importing {name!r} failed: {_one_line(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - the user's module raised while importing
        raise CLIError(f"importing {name!r} failed: {_one_line(exc)}") from None


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise CLIError(f"file {str(path)!r} not found")
    name = "_sg_target_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CLIError(f"cannot load {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.resolve().parent))  # so the file can import its neighbours
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001
        raise CLIError(f"importing {str(path)!r} failed: {_one_line(exc)}") from None
    return module


def _one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip() and "errors.pydantic.dev" not in line]
    return f"{type(exc).__name__}: {'; '.join(lines)}" if lines else type(exc).__name__


# -- showing a run --------------------------------------------------------------


def _short(text: Any, limit: int = 100) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


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
            _error(f"{p.get('error')}: {_short(p.get('message'), 300)}")
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
                depth, (who, "cyan"), " -> ", (str(p.get("agent_id")), "bold cyan"), f": {_short(p.get('prompt'))!r}"
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
                    f": {_short(p.get('text'))!r}",
                )
            else:
                self._line(
                    depth + 1,
                    (str(p.get("agent_id")), "bold cyan"),
                    (f" failed{took}", "red"),
                    f" ({p.get('finish_reason')})",
                )
        elif chunk.type == "tool-call" and not str(p.get("tool_name")).startswith("agent-"):
            self._line(
                depth,
                (who, "cyan"),
                " calls tool ",
                (str(p.get("tool_name")), "magenta"),
                f" {_short(json.dumps(p.get('args')), 80)}",
            )
        elif chunk.type in ("tool-result", "tool-error") and not str(p.get("tool_name")).startswith("agent-"):
            style, word = ("green", "returned") if chunk.type == "tool-result" else ("red", "failed")
            self._line(
                depth + 1, (str(p.get("tool_name")), "magenta"), (f" {word}", style), f": {_short(p.get('result'))!r}"
            )
        elif chunk.type in ("tool-call-approval", "tool-call-suspended"):
            what = "waits for approval" if chunk.type == "tool-call-approval" else "is suspended"
            self._line(
                depth,
                (str(p.get("tool_name")), "magenta"),
                (f" {what}", "yellow"),
                f" {_short(json.dumps(p.get('args')), 80)}",
            )
        elif chunk.type == "abort":
            self._line(0, ("run aborted", "yellow"), f": {p.get('reason') or 'no reason given'}")

    def finish(self, result: GenerateResult) -> None:
        self.close()
        if self.json_lines:
            return
        console = self.console
        answer = result.text or "(no answer)"
        if console.is_terminal:
            console.print(Panel(Markdown(answer), title="answer", title_align="left", border_style="green"))
        else:
            console.rule("answer", align="left")
            console.print(answer, markup=False, highlight=False)
            console.rule()
        u = result.usage
        console.print(
            f"finish: {result.finish_reason} | tokens: {u.input_tokens} in, {u.output_tokens} out, "
            f"{u.total_tokens} total | {time.perf_counter() - self.t0:.2f}s"
            + (f" | thread: {result.thread_id}" if result.thread_id else ""),
            markup=False,
            highlight=False,
        )
        if result.suspended:
            console.print(
                f"the run is paused on {len(result.suspended)} pending item(s); resume it from Python", markup=False
            )

    def _status(self, message: str) -> None:
        if self.status is not None:
            self.status.update(message)
            self.status.start()

    def close(self) -> None:
        if self.status is not None:
            self.status.stop()


async def _run(agent: Agent, prompt: str, options: dict[str, Any], view: LiveView, close: Memory | None = None) -> int:
    """Stream one run through `view`; the exit status."""
    try:
        try:
            stream = await agent.stream(prompt, **options)
        except (SupervisorGraphError, ValueError, TypeError) as exc:  # refused before it started
            _error(_one_line(exc))
            return 2
        async for chunk in stream.full_stream:
            view.show(chunk)
        try:
            result = await stream.result()
        except MissingAPIKeyError:  # already shown by the stream's error chunk
            return 2
        except Exception:  # noqa: BLE001 - likewise
            return 1
    finally:
        view.close()
        if close is not None:
            await close.aclose()
    view.finish(result)
    return 0


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def _console() -> Console:
    console = Console()
    console.soft_wrap = not console.is_terminal  # long lines stay whole when piped
    return console


# -- commands -------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    from supervisor_graph.examples.research_write import build_agents

    if args.model:
        try:
            provider, _ = parse_model_string(args.model)
        except ValueError as exc:
            raise CLIError(str(exc)) from None
        if provider == "openai" and not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
            raise CLIError(
                f"--model {args.model} needs OPENAI_API_KEY (or OPENAI_BASE_URL); run without --model for the offline demo"
            )
    agent = build_agents(args.model, latency=0.0 if args.model else 0.25)
    console = _console()
    source = args.model or "a scripted model, offline"
    console.print(Text.assemble(("research-and-write demo", "bold"), f" on {source}"))
    console.print(Text.assemble(("prompt: ", "bold"), args.prompt))
    return asyncio.run(_run(agent, args.prompt, {"max_steps": 10}, LiveView(console)))


def cmd_run(args: argparse.Namespace) -> int:
    agent = load_agent(args.target)
    options: dict[str, Any] = {}
    if args.max_steps is not None:
        options["max_steps"] = args.max_steps
    opened: Memory | None = None
    if args.thread:
        if agent.memory is None:
            agent = agent.model_copy()
            agent.memory = opened = Memory(storage=f"file:{args.db}")  # assignment resets the copy's caches
        options["memory"] = {"thread": args.thread}
    console = _console()
    if not args.json:
        console.print(Text.assemble((agent.id, "bold cyan"), ": ", args.prompt))
    return asyncio.run(_run(agent, args.prompt, options, LiveView(console, json_lines=args.json), close=opened))


def cmd_draw(args: argparse.Namespace) -> int:
    graph = load_agent(args.target).compile().get_graph()
    if args.png is None:
        print(graph.draw_mermaid())
        return 0
    if importlib.util.find_spec("pygraphviz") is not None:
        graph.draw_png(args.png)
    elif importlib.util.find_spec("pyppeteer") is not None:
        from langchain_core.runnables.graph import MermaidDrawMethod

        try:
            graph.draw_mermaid_png(output_file_path=args.png, draw_method=MermaidDrawMethod.PYPPETEER)
        except Exception as exc:  # noqa: BLE001 - e.g. no browser for pyppeteer
            _error(f"pyppeteer could not render the graph: {_one_line(exc)}")
            return 1
    else:
        _error(
            "no local PNG renderer is installed (pip install pygraphviz, or pyppeteer); "
            f"`{PROG} draw {args.target}` prints Mermaid text you can render elsewhere"
        )
        return 1
    print(f"wrote {args.png}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from supervisor_graph.examples.research_write import DEFAULT_PROMPT

    parser = argparse.ArgumentParser(prog=PROG, description="Run, inspect and demo supervisor agents.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{demo,run,draw}")

    demo = sub.add_parser("demo", help="run the research-and-write example (offline unless --model)")
    demo.add_argument("--model", help="openai/<name>: use a real model (needs OPENAI_API_KEY or OPENAI_BASE_URL)")
    demo.add_argument("--prompt", default=DEFAULT_PROMPT, help="what to ask the supervisor")
    demo.set_defaults(func=cmd_demo)

    run = sub.add_parser("run", help="run an agent on a prompt, streaming its delegations")
    run.add_argument("target", metavar="TARGET", help="module:attr or path/to/file.py:attr naming an Agent")
    run.add_argument("prompt", metavar="PROMPT")
    run.add_argument("--thread", help="continue (or start) this conversation thread")
    run.add_argument(
        "--db", default="supervisor-graph.db", help="sqlite file for --thread when the agent has no memory"
    )
    run.add_argument("--json", action="store_true", help="print every stream chunk as one JSON line")
    run.add_argument("--max-steps", type=int, help="supervisor iterations allowed")
    run.set_defaults(func=cmd_run)

    draw = sub.add_parser("draw", help="print an agent's graph as Mermaid")
    draw.add_argument("target", metavar="TARGET", help="module:attr or path/to/file.py:attr naming an Agent")
    draw.add_argument("--png", metavar="FILE", help="render a PNG with a local renderer instead")
    draw.set_defaults(func=cmd_draw)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except CLIError as exc:
        _error(str(exc))
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
