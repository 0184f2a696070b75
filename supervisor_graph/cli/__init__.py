"""The `supervisor-graph` command: run, draw, serve and version agents from a shell.

Imports anything below it (agent, run, agui, memory, ...); nothing imports it."""

from supervisor_graph.cli.main import main

__all__ = ["main"]
