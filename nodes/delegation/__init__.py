"""One delegation's lifecycle, the same whichever way the subagent runs:

- start: `start` (the `<key>.start` node: `on_delegation_start`, its guards), then
  `opening` in the node that runs it (the `delegation` guards where no start node ran,
  the delegation's thread and record, its `delegation-start`);
- run, one way: for a local subagent (`subagent`, the node), with what it inherits from
  its parent (`inheritance`: request context, the message filter, budget scope, options),
  a leaf's loop right in the node (`nodes/turn/leaf.py`), its graph as a subgraph
  (`subgraph`) or a background task (`in_background`); for a remote one, a LangGraph
  server or an A2A agent (`nodes/remote`);
- complete: `lifecycle` (a failure or an abort becomes a failed delegation), then
  `complete` (`on_delegation_complete`, result guards, the result text the supervisor
  sees, with `references` and previews).

`result` is the delegation's record and result, `hooks` the hooks' contracts, `view` the
parent conversation a subagent sees, `transcript` a record filled in from a subagent's
last state; `control` gathers the public names.

Imports the turn (a leaf runs its loop here), steps, guards, background, scope,
observability and `checkpointers`; nothing above `nodes`.
"""
