"""The pieces of a compiled supervisor graph, in rooms by concern.

- `turn/`: an agent's turn (the supervisor node, a leaf's in-node loop, the tools node)
- `steps/`: capabilities of a turn (budget, compaction, structured output, ...)
- `guards/`: guardrails: the built-in guards and where their verdicts take effect
- `delegation/`: a delegation's start, run and completion
- `remote/`, `background/`: delegations run on another server or as background tasks
- `gates/`: the iteration hook and the task-completion gate after a turn
- `scope/`: what a node knows of its run; `observability/`: events, traces, spans
- `spec.py` (what the compiler hands each node), `options.py`, `state.py`, `errors.py`,
  `text.py`: shared by all of them

`supervisor_graph` wires these into a `StateGraph`; nothing here imports it. Imports
`checkpointers` below it.
"""
