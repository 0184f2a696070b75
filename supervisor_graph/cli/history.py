"""`supervisor-graph history TARGET --thread ID`: a thread's checkpoints, newest first
(SPEC §34), each with the id `run ... --thread ID --checkpoint CHECKPOINT` forks from."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from supervisor_graph.cli.output import short
from supervisor_graph.cli.run import with_storage
from supervisor_graph.cli.target import load_agent
from supervisor_graph.declaration.errors import CLIError

__all__ = ["add_history_parser", "cmd_history"]


def add_history_parser(sub: Any) -> None:
    history = sub.add_parser("history", help="list a thread's checkpoints, newest first (fork with run --checkpoint)")
    history.add_argument("target", metavar="TARGET", help="module:attr or path/to/file.py:attr naming an Agent")
    history.add_argument("--thread", required=True, help="the conversation thread")
    history.add_argument("--db", default="supervisor-graph.db", help="sqlite file when the agent has no memory")
    history.add_argument("--limit", type=int, metavar="N", help="the newest N checkpoints only")
    history.add_argument("--json", action="store_true", help="one JSON object a line")
    history.set_defaults(func=cmd_history)


def cmd_history(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise CLIError(f"--limit must be at least 1, not {args.limit}")
    agent, opened = with_storage(load_agent(args.target), args.db)
    entries = asyncio.run(_history(agent, args.thread, args.limit, opened))
    if not entries:  # a thread nobody ran yet: nothing to list, which is no mistake
        print(f"thread {args.thread!r} has no checkpoints yet", file=sys.stderr)
    for entry in entries:
        print(json.dumps(_json(entry), default=str) if args.json else _line(entry))
    return 0


async def _history(agent: Any, thread: str, limit: int | None, opened: Any) -> list[dict[str, Any]]:
    try:
        return list(await agent.history(memory={"thread": thread}, limit=limit))
    finally:
        if opened is not None:
            await opened.aclose()


def _json(entry: dict[str, Any]) -> dict[str, Any]:
    messages = [{"type": m.type, "content": m.content, "id": m.id} for m in entry["messages"]]
    return {**entry, "messages": messages}


def _line(entry: dict[str, Any]) -> str:
    last = entry["messages"][-1] if entry["messages"] else None
    said = f"{last.type}: {short(last.content or getattr(last, 'tool_calls', ''), 60)}" if last is not None else "(empty)"
    line = f"{entry['checkpoint_id']}  step {entry['step']}  {said}"
    for done in entry["delegations"]:
        line += f"\n    {done['agent_id']} <- {short(done['prompt'], 40)!r}: {short(done['text'], 50)}"
    return line
