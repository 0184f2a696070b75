"""A stdio MCP server built with the `mcp` package, for tests/mcp/test_mcp_tools.py: one
tool, `append_note`, appends a line to the file named by `NOTES_FILE` (its side effect,
which the test counts) and says how many lines the file holds."""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.fastmcp import FastMCP

server = FastMCP("notes")


@server.tool()
def append_note(text: str) -> str:
    """Append a line to the notes file."""
    path = Path(os.environ["NOTES_FILE"])
    with path.open("a", encoding="utf-8") as f:
        f.write(text + "\n")
    return f"noted ({len(path.read_text(encoding='utf-8').splitlines())} lines)"


if __name__ == "__main__":
    server.run("stdio")
