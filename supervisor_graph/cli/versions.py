"""`supervisor-graph versions list|save|publish|show TARGET AGENT_ID ...` (SPEC §13).

Versions live in the store of the target agent's memory, or in the sqlite file `--db`
when the agent has none (the file `run --thread` uses by default).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from supervisor_graph.cli.target import load_agent
from supervisor_graph.declaration.errors import CLIError
from supervisor_graph.memory.memory import Memory

__all__ = ["add_versions_parser"]


def _memory(args: argparse.Namespace) -> Memory:
    agent = load_agent(args.target)
    if agent.memory is None:
        folder = Path(args.db).expanduser().resolve().parent
        if not folder.is_dir():
            raise CLIError(f"--db {args.db}: the folder {str(folder)!r} does not exist; create it or pick another file")
        agent = agent.model_copy()
        agent.memory = Memory(storage=f"file:{args.db}")  # validation registers the agents with it
    assert agent.memory is not None
    if args.agent_id not in agent.memory.agent_ids():
        known = ", ".join(sorted(agent.memory.agent_ids()))
        raise CLIError(f"{args.target} has no agent with id {args.agent_id!r} (agents: {known})")
    return agent.memory


def _run(args: argparse.Namespace, action: Callable[[Memory], Awaitable[int]]) -> int:
    memory = _memory(args)

    async def main() -> int:
        try:
            return await action(memory)
        except ValueError as exc:
            raise CLIError(str(exc)) from None
        finally:
            await memory.aclose()

    return asyncio.run(main())


def _print(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def cmd_list(args: argparse.Namespace) -> int:
    async def action(memory: Memory) -> int:
        for version in await memory.versions.list(args.agent_id):
            fields = ", ".join(sorted(version.definition.model_dump(exclude_none=True))) or "no fields"
            print(f"{version.version_id}  {version.status:<9}  {version.created_at:%Y-%m-%d %H:%M:%S}  {fields}")
        return 0

    return _run(args, action)


def cmd_save(args: argparse.Namespace) -> int:
    definition: dict[str, Any] = {}
    if args.instructions_file:
        definition["instructions"] = Path(args.instructions_file).read_text(encoding="utf-8")
    elif args.instructions is not None:
        definition["instructions"] = args.instructions
    if args.model:
        definition["model"] = args.model
    if args.max_steps is not None:
        definition["max_steps"] = args.max_steps
    if args.tools is not None:
        definition["tools"] = [name.strip() for name in args.tools.split(",") if name.strip()]

    async def action(memory: Memory) -> int:
        print(await memory.versions.save(args.agent_id, definition, status="published" if args.publish else "draft"))
        return 0

    return _run(args, action)


def cmd_publish(args: argparse.Namespace) -> int:
    async def action(memory: Memory) -> int:
        _print((await memory.versions.publish(args.agent_id, args.version_id)).model_dump(mode="json"))
        return 0

    return _run(args, action)


def cmd_show(args: argparse.Namespace) -> int:
    async def action(memory: Memory) -> int:
        if args.version_id:
            found = await memory.versions.get(args.agent_id, version_id=args.version_id)
        else:
            found = await memory.versions.get(args.agent_id, status=args.status)
        if found is None:
            what = args.version_id or f"status {args.status}"
            raise CLIError(f"agent {args.agent_id!r} has no version {what}")
        _print(found.model_dump(mode="json"))
        return 0

    return _run(args, action)


def add_versions_parser(sub: Any) -> None:
    versions = sub.add_parser("versions", help="stored versions of an agent's definition (list, save, publish, show)")
    commands = versions.add_subparsers(dest="versions_command", required=True, metavar="{list,save,publish,show}")

    def command(name: str, help: str, func: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = commands.add_parser(name, help=help)
        parser.add_argument("target", metavar="TARGET", help="module:attr or path/to/file.py:attr naming an Agent")
        parser.add_argument("agent_id", metavar="AGENT_ID", help="the id of the agent (or of one of its subagents)")
        parser.add_argument("--db", default="supervisor-graph.db", help="sqlite file when the agent has no memory")
        parser.set_defaults(func=func)
        return parser

    command("list", "the agent's versions, newest first", cmd_list)
    save = command("save", "store a new version (a draft unless --publish); prints its id", cmd_save)
    text = save.add_mutually_exclusive_group()
    text.add_argument("--instructions", help="the version's instructions")
    text.add_argument("--instructions-file", metavar="FILE", help="read the instructions from FILE")
    save.add_argument("--model", help="a 'provider/model' string")
    save.add_argument("--max-steps", type=int, help="supervisor iterations allowed")
    save.add_argument("--tools", help="comma-separated subset of the agent's own tools")
    save.add_argument("--publish", action="store_true", help="publish it at once (the previous one is archived)")
    publish = command("publish", "publish a version (the previous published one is archived)", cmd_publish)
    publish.add_argument("version_id", metavar="VERSION_ID")
    show = command("show", "print one version as JSON (the published one by default)", cmd_show)
    show.add_argument("version_id", metavar="VERSION_ID", nargs="?")
    show.add_argument("--status", choices=("draft", "published", "archived"), default="published")
