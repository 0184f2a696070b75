"""The compiler: an `Agent` declaration turned into a LangGraph `StateGraph` (its node table,
the generic nodes of dynamic subagent sets, the sync twins of async nodes).

Imports point down only: background (the server host), memory (versions), declaration, nodes, checkpointers."""
