"""Benchmarks for supervisor-graph (SPEC §18).

Run from the repository root:

    python -m bench            # full run (a few minutes), writes bench/RESULTS.md
    python -m bench --quick    # CI smoke (seconds), writes bench/RESULTS.quick.md

Three contenders make the same model calls with zero-latency scripted models:

- ``ours``: ``supervisor_graph.Agent`` with subagents, run through ``Agent.generate``;
- ``incumbent``: ``langgraph_supervisor.create_supervisor`` over prebuilt ReAct workers;
- ``floor``: a minimal hand-written LangGraph ``StateGraph`` (supervisor node + worker node).

Modules: ``contenders`` (the three builds), ``savers`` (checkpointers, counting wrappers),
``scenarios`` (what is measured), ``stats``, ``profiling`` (cProfile of ours),
``report`` (RESULTS.md and the optional chart), ``cli`` (arguments and progress).
"""
