"""What every command prints with: the program name, the one-line error on stderr,
the console, and exceptions or values shortened to one line."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console

__all__ = ["PROG", "make_console", "one_line", "print_error", "short"]

PROG = "supervisor-graph"


def print_error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def make_console() -> Console:
    console = Console()
    console.soft_wrap = not console.is_terminal  # long lines stay whole when piped
    return console


def one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip() and "errors.pydantic.dev" not in line]
    return f"{type(exc).__name__}: {'; '.join(lines)}" if lines else type(exc).__name__


def short(text: Any, limit: int = 100) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."
