"""The `supervisor-graph` command (SPEC §16).

    supervisor-graph demo [--model openai/<name>] [--prompt TEXT] [--approve-all | --decline-all]
    supervisor-graph run TARGET PROMPT [--thread ID] [--db PATH] [--json] [--max-steps N]
                         [--approve-all | --decline-all]
    supervisor-graph draw TARGET [--png FILE]
    supervisor-graph serve TARGET [--port N] [--host HOST] [--path /agent]
                           [--subagents hidden|attributed] [--resource ID]
                           [--auth-token TOKEN] [--allowed-hosts H1,H2] [--workers N]
                           [--max-body-bytes N] [--max-thread-id-length N]
    supervisor-graph versions list|save|publish|show TARGET AGENT_ID [...] [--db PATH]

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
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import os
import re
import signal
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
from supervisor_graph.run.chunks import StreamChunk
from supervisor_graph.declaration.errors import CLIError, MissingAPIKeyError, SupervisorGraphError
from supervisor_graph.memory.memory import Memory
from supervisor_graph.declaration.models import check_credentials, model_strings, parse_model_string
from supervisor_graph.nodes.tools import DECLINED_TEXT
from supervisor_graph.run.facade import AgentStream, GenerateResult, PendingItem

__all__ = ["EXIT_PAUSED", "CLIError", "load_agent", "main"]

PROG = "supervisor-graph"
EXIT_PAUSED = 3


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
        elif "working_memory" in p:
            if chunk.type == "tool-result":
                value = _short(json.dumps(p["working_memory"]["value"]))
                self._line(depth, (who, "cyan"), (" updated its working memory", "blue"), f": {value}")
        elif chunk.type == "tool-call" and not str(p.get("tool_name")).startswith("agent-"):
            self._line(
                depth,
                (who, "cyan"),
                " calls tool ",
                (str(p.get("tool_name")), "magenta"),
                f" {_short(json.dumps(p.get('args')), 80)}",
            )
        elif chunk.type in ("tool-result", "tool-error") and not str(p.get("tool_name")).startswith("agent-"):
            if chunk.type == "tool-result":
                style, word = "green", "returned"
            elif p.get("result") == DECLINED_TEXT:
                style, word = "yellow", "did not run (declined)"
            else:
                style, word = "red", "failed"
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
        if result.finish_reason == "suspended" and not result.text:
            pass  # nothing to show yet: the run waits for an answer
        elif console.is_terminal:
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

    def _status(self, message: str) -> None:
        if self.status is not None:
            self.status.update(message)
            self.status.start()

    def close(self) -> None:
        if self.status is not None:
            self.status.stop()


class Answerer:
    """Answers a paused run's pending items: asks at the terminal, or applies
    `--approve-all` / `--decline-all`; None means nobody can answer."""

    def __init__(
        self, console: Console, *, interactive: bool, approve_all: bool | None = None, json_lines: bool = False
    ) -> None:
        self.console = console
        self.interactive = interactive
        self.approve_all = approve_all
        self.json_lines = json_lines

    def can_answer(self, items: list[PendingItem]) -> bool:
        return self.interactive or all(i.kind == "approval" and self.approve_all is not None for i in items)

    def answer(self, item: PendingItem) -> Any:
        if item.kind == "approval" and self.approve_all is not None:
            word = "approved" if self.approve_all else "declined"
            if self.json_lines:  # stdout is for chunks
                print(f"{PROG}: {word} {item.tool_name} (interrupt {item.interrupt_id})", file=sys.stderr)
            else:
                self._decided(item, self.approve_all, f" (--{word[:-1]}-all)")
            return {"approved": self.approve_all}
        if item.kind == "approval":
            return self._ask_approval(item)
        return self._ask_resume_data(item)

    def _where(self, item: PendingItem, args: bool = False) -> Text:
        shown = f" {_short(json.dumps(item.args, ensure_ascii=False), 60)}" if args and item.args else ""
        return Text.assemble(
            (str(item.tool_name), "bold magenta"), shown, " (called by ", (item.agent_path[-1], "cyan"), ")"
        )

    def _ask_approval(self, item: PendingItem) -> dict[str, bool]:
        question = Text.assemble("approve ", self._where(item, args=True), "? [y]es / [n]o / [a]rgs: ")
        while True:
            reply = self.console.input(question).strip().lower()
            if reply in ("y", "yes", "n", "no"):
                approved = reply.startswith("y")
                self._decided(item, approved)
                return {"approved": approved}
            if reply in ("a", "args", "s", "show"):
                self._show_args(item.args)
            else:
                self.console.print("  answer y (approve), n (decline) or a (show the arguments)", markup=False, highlight=False)

    def _ask_resume_data(self, item: PendingItem) -> Any:
        self.console.print(Text.assemble(self._where(item), (" is suspended", "yellow"), " and asks:"))
        self._show(item.payload)
        while True:
            reply = self.console.input(Text("resume data (JSON): "))
            try:
                return json.loads(reply)
            except json.JSONDecodeError as exc:
                self.console.print(f"  not JSON ({exc.msg}); try again", markup=False, highlight=False)

    def _decided(self, item: PendingItem, approved: bool, how: str = "") -> None:
        word = ("approved", "green") if approved else ("declined", "red")
        self.console.print(Text.assemble("  ", (str(item.tool_name), "magenta"), " ", word, how))

    def _show_args(self, args: dict[str, Any]) -> None:
        """Each argument on its own; multi-line text as it reads, not as a JSON string."""
        for key, value in args.items():
            if isinstance(value, str) and "\n" in value:
                self.console.print(Text.assemble("  ", (key, "bold"), ":"))
                self.console.print(Text(value), style="dim", markup=False, highlight=False)
            else:
                shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
                self.console.print(Text.assemble("  ", (key, "bold"), ": ", shown))

    def _show(self, value: Any) -> None:
        self.console.print(json.dumps(value, indent=2, ensure_ascii=False, default=str), markup=False, highlight=False)


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


def _answers(result: GenerateResult, answerer: Answerer, known: dict[str, Any]) -> dict[str, Any] | None:
    """An answer per pending item (by interrupt id), or None when they cannot all be
    answered; items already in `known` are not asked again."""
    if not answerer.can_answer(result.suspended):
        return None
    answers = {}
    for item in result.suspended:
        key = item.interrupt_id or item.tool_call_id or ""
        answers[key] = known[key] if key in known else answerer.answer(item)
    return answers


async def _run(
    agent: Agent,
    prompt: str,
    options: dict[str, Any],
    view: LiveView,
    answerer: Answerer,
    close: Memory | None = None,
) -> int:
    """Stream one run through `view`, answering its pauses with `answerer`; the exit status."""
    from supervisor_graph.run.resume import resume

    try:
        try:
            stream = await agent.stream(prompt, **options)
        except (SupervisorGraphError, ValueError, TypeError) as exc:  # refused before it started
            _error(_one_line(exc))
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
                    answers = _answers(result, answerer, approvals)
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
                    _error(_one_line(exc))
                    return 1
                except ValueError as exc:  # e.g. resume data not matching the tool's resume schema
                    if not answerer.interactive:
                        _error(_one_line(exc))
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


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def _console() -> Console:
    console = Console()
    console.soft_wrap = not console.is_terminal  # long lines stay whole when piped
    return console


# -- commands -------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    from supervisor_graph.examples.research_write import DEFAULT_PROMPT, PUBLISH_PROMPT, build_agents

    if args.model:
        try:
            parse_model_string(args.model)
            check_credentials(args.model)
        except MissingAPIKeyError:
            raise CLIError(
                f"--model {args.model} needs OPENAI_API_KEY (or OPENAI_BASE_URL); run without --model for the offline demo"
            ) from None
        except ValueError as exc:
            raise CLIError(str(exc)) from None
    agent = build_agents(args.model, latency=0.0 if args.model else 0.25)
    console = _console()
    answerer = _answerer(args, console)
    # The default request publishes (a tool that needs approval) whenever someone can
    # answer: a person at a terminal, or --approve-all / --decline-all; otherwise (a
    # script, CI) it only researches and writes, so the demo never stops to wait.
    prompt = args.prompt or (PUBLISH_PROMPT if answerer.interactive or answerer.approve_all is not None else DEFAULT_PROMPT)
    source = args.model or "a scripted model, offline"
    console.print(Text.assemble(("research-and-write demo", "bold"), f" on {source}"))
    console.print(Text.assemble(("prompt: ", "bold"), prompt))
    return asyncio.run(_run(agent, prompt, {"max_steps": 10}, LiveView(console), answerer))


def cmd_run(args: argparse.Namespace) -> int:
    agent = load_agent(args.target)
    options: dict[str, Any] = {}
    if args.max_steps is not None:
        if args.max_steps < 1:
            raise CLIError(f"--max-steps must be at least 1, not {args.max_steps}")
        options["max_steps"] = args.max_steps
    opened: Memory | None = None
    if args.thread:
        if agent.memory is None:
            folder = Path(args.db).expanduser().resolve().parent
            if not folder.is_dir():
                raise CLIError(f"--db {args.db}: the folder {str(folder)!r} does not exist; create it or pick another file")
            agent = agent.model_copy()
            agent.memory = opened = Memory(storage=f"file:{args.db}")  # assignment resets the copy's caches
        options["memory"] = {"thread": args.thread}
    for value in model_strings(agent):
        check_credentials(value)  # before anything is printed
    console = _console()
    if not args.json:
        console.print(Text.assemble((agent.id, "bold cyan"), ": ", args.prompt))
    view = LiveView(console, json_lines=args.json)
    return asyncio.run(_run(agent, args.prompt, options, view, _answerer(args, console), close=opened))


def _answerer(args: argparse.Namespace, console: Console) -> Answerer:
    approve_all = True if args.approve_all else False if args.decline_all else None
    interactive = not getattr(args, "json", False) and sys.stdin.isatty() and console.is_terminal
    return Answerer(
        console, interactive=interactive, approve_all=approve_all, json_lines=getattr(args, "json", False)
    )


def _add_answer_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--approve-all", action="store_true", help="approve every tool call that needs approval")
    group.add_argument("--decline-all", action="store_true", help="decline every tool call that needs approval")


def cmd_draw(args: argparse.Namespace) -> int:
    from supervisor_graph.compiler.build import compile_agent

    # drawing calls no model: no credentials needed
    graph = compile_agent(load_agent(args.target), check_models=False).get_graph()
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
        raise CLIError(
            "--png needs a local renderer: pip install pygraphviz (with Graphviz, e.g. apt-get install graphviz "
            f"libgraphviz-dev) or pyppeteer; or drop --png: `{PROG} draw {args.target}` prints Mermaid text"
        )
    print(f"wrote {args.png}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve an agent to AG-UI clients (the `agui` extra) until Ctrl-C."""
    token = args.auth_token or None
    try:
        from supervisor_graph.agui.endpoint import check_binding
        from supervisor_graph.agui.serving import default_allowed_hosts
    except ImportError as exc:
        raise CLIError(f"serve needs the agui extra: pip install 'supervisor-graph[agui]' ({exc.name} is missing)") from None
    try:
        check_binding(args.host, token)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if args.workers < 1:
        raise CLIError(f"--workers must be at least 1, not {args.workers}")
    if args.max_body_bytes < 1 or args.max_thread_id_length < 1:
        raise CLIError("--max-body-bytes and --max-thread-id-length must be at least 1")
    hosts = [h.strip() for h in args.allowed_hosts.split(",") if h.strip()] if args.allowed_hosts else None
    settings: dict[str, Any] = {
        "path": args.path,
        "resource_id": args.resource,
        "subagent_visibility": args.subagents,
        "auth_token": token,
        "allowed_hosts": hosts if hosts is not None else default_allowed_hosts(args.host),
        "max_body_bytes": args.max_body_bytes,
        "max_thread_id_length": args.max_thread_id_length,
    }
    agent = load_agent(args.target)
    where = f"http://{args.host}:{args.port}"
    shown = f"serving {agent.id} over AG-UI at {where}{args.path}"
    if token:
        shown += f" (token required; the page at {where}/ asks for it once, or open it with ?token=...)"
    if args.workers > 1:
        if agent.memory is None or agent.memory.kind not in ("sqlite", "postgres"):
            raise CLIError(
                f"--workers {args.workers} needs the agent's memory on sqlite or Postgres "
                "(each worker is a process of its own; they share only the database)"
            )
        import uvicorn

        from supervisor_graph.agui.workers import SERVE_ENV

        os.environ[SERVE_ENV] = json.dumps({"target": args.target, **settings})
        print(f"{shown} ({args.workers} workers)", flush=True)
        uvicorn.run(
            "supervisor_graph.agui.workers:app", factory=True, host=args.host, port=args.port, workers=args.workers, log_level="info"
        )
        return 0
    from supervisor_graph.agui.endpoint import serve

    print(shown, flush=True)
    serve(agent, host=args.host, port=args.port, **settings)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from supervisor_graph.examples.research_write import DEFAULT_PROMPT, PUBLISH_PROMPT

    parser = argparse.ArgumentParser(prog=PROG, description="Run, inspect and demo supervisor agents.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{demo,run,draw,serve,versions}")

    demo = sub.add_parser("demo", help="run the research-and-write example (offline unless --model)")
    demo.add_argument("--model", help="openai/<name>: use a real model (needs OPENAI_API_KEY or OPENAI_BASE_URL)")
    demo.add_argument(
        "--prompt",
        help=f"what to ask the supervisor (default: {PUBLISH_PROMPT!r} when an approval can be answered, "
        f"{DEFAULT_PROMPT!r} otherwise)",
    )
    _add_answer_flags(demo)
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
    _add_answer_flags(run)
    run.set_defaults(func=cmd_run)

    draw = sub.add_parser("draw", help="print an agent's graph as Mermaid")
    draw.add_argument("target", metavar="TARGET", help="module:attr or path/to/file.py:attr naming an Agent")
    draw.add_argument("--png", metavar="FILE", help="render a PNG with a local renderer instead")
    draw.set_defaults(func=cmd_draw)

    serve = sub.add_parser("serve", help="serve an agent to AG-UI front ends (CopilotKit, @ag-ui/client)")
    serve.add_argument("target", metavar="TARGET", help="module:attr or path/to/file.py:attr naming an Agent")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--path", default="/agent", help="endpoint path (default /agent)")
    serve.add_argument(
        "--subagents", choices=("hidden", "attributed"), default="hidden", help="how delegations are shown"
    )
    serve.add_argument("--resource", default="local-user", help="resource (user) id that owns the threads")
    serve.add_argument(
        "--auth-token",
        default=os.environ.get("SUPERVISOR_GRAPH_AUTH_TOKEN"),
        metavar="TOKEN",
        help="require 'Authorization: Bearer TOKEN' on every API route (default: $SUPERVISOR_GRAPH_AUTH_TOKEN); "
        "needed to serve on a non-loopback host",
    )
    serve.add_argument(
        "--allowed-hosts",
        metavar="H1,H2",
        help="host names the Host header may hold, comma-separated ('*' any, '*.example.com' a domain; "
        "default: localhost, 127.0.0.1, [::1] and --host)",
    )
    serve.add_argument(
        "--max-body-bytes", type=int, default=1_000_000, help="larger request bodies get 413 (default 1000000)"
    )
    serve.add_argument(
        "--max-thread-id-length", type=int, default=256, help="longer thread ids get 422 (default 256)"
    )
    serve.add_argument(
        "--workers", type=int, default=1, help="worker processes (more than 1 needs the agent's memory on sqlite or Postgres)"
    )
    serve.set_defaults(func=cmd_serve)

    from supervisor_graph.cli.versions import add_versions_parser

    add_versions_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command != "serve" and hasattr(signal, "SIGPIPE"):
        # `supervisor-graph run ... | head`: end quietly when the reader goes away, as
        # Unix tools do, instead of a BrokenPipeError traceback (a server keeps Python's
        # default: a closed log pipe must not kill it)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        return int(args.func(args))
    except CLIError as exc:
        _error(str(exc))
        return 2
    except MissingAPIKeyError as exc:  # checked before anything runs or is printed
        _error(f"{type(exc).__name__}: {exc}")
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
