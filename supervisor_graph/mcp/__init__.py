"""The supervisor served as an MCP server (SPEC §27; the `mcp` extra).

It holds `add_mcp_endpoint`, which adds a streamable-HTTP MCP endpoint (`/mcp`) to the
app `supervisor_graph.agui.endpoint.create_app` builds, with one tool, `ask_<agent id>`,
run through that app's AG-UI bridge (`AGUIAgent`): the same memory, thread lease,
thread ownership, limits and refusals, and the same guard (`Host`, token, body size).

It imports the `mcp` package and `supervisor_graph.agui`; the CLI imports it."""

from supervisor_graph.mcp.server import add_mcp_endpoint, tool_name

__all__ = ["add_mcp_endpoint", "tool_name"]
