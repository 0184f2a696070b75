"""What an `Agent` declaration is made of: tools, model strings, scorers, remote agents,
errors, and the rules that check a tree of agents. `Agent` itself is `supervisor_graph.agent`.

Imports point down only: nodes, checkpointers."""
