"""Background tasks (SPEC §12): the process host the facade uses and the server host a
compiled graph uses under `langgraph dev` / Aegra.

Imports point down only: memory, declaration, nodes, checkpointers."""
