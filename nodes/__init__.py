"""Node implementations of a compiled supervisor graph, one module per node kind.

`supervisor_graph` wires these into a `StateGraph`; nothing here imports it.
"""
