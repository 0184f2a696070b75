"""One delegation's lifecycle: start (hooks, message filter, guards), the subagent
node that runs it, complete (hooks, result text, references), and what the parent
sees of it.

Imports the turn (a leaf runs its loop here), steps, guards, background, scope,
observability and `checkpointers`; nothing above `nodes`.
"""
