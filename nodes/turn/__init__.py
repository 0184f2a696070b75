"""The one turn of an agent: the supervisor node and a leaf subagent's in-node loop
(model input, the model call, settling its tool calls, routing to the next turn), and
the tools node where an approval pauses.

Imports the capability rooms (steps, guards, background, delegation), scope,
observability and `checkpointers`; nothing above `nodes`.
"""
