"""The facade's run: one call of `generate` / `stream` / an approval from its start to its
result (`call.py`), and what it hands back (results, streams, chunks, sync twins).

Imports point down only: background, compiler, memory, declaration, nodes, checkpointers."""
