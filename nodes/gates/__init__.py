"""The nodes after a turn: the per-iteration hook (`iteration`) and the task-completion
gate with its scorers (`task_complete`, `scoring`).

Imports the turn's routing, delegation hooks, steps, scope and state; nothing above
`nodes`.
"""
