"""What an `Agent` declaration is made of: tools, model strings (and lists of models to
fall back on), scorers, remote agents, errors, and the rules that check a tree of agents.
`Agent` itself is `supervisor_graph.agent`.

Imports point down only: nodes, checkpointers."""
