"""Benchmarks for supervisor-graph (SPEC §18).

Run from the repository root:

    python -m bench            # full run (a few minutes), writes bench/RESULTS.md
    python -m bench --quick    # CI smoke (seconds), writes bench/RESULTS.quick.md

Three contenders make the same model calls with scripted models (zero latency, except
in the concurrency scenario):

- ``ours``: ``supervisor_graph.Agent`` with subagents, run through ``Agent.generate``;
- ``incumbent``: ``langgraph_supervisor.create_supervisor`` over prebuilt ReAct workers;
- ``floor``: a minimal hand-written LangGraph ``StateGraph`` (supervisor node + worker node).

Modules: ``contenders`` (the three builds), ``savers`` (checkpointers, counting wrappers,
sqlite footprint), ``scenarios`` (per-run time, writes, context growth, the 40- and
150-turn conversations), ``concurrency`` (1,000 concurrent runs, one process per
contender: ``python -m bench.concurrency ours``), ``agui`` (the AG-UI endpoint under
concurrent clients: ``python -m bench.agui`` is its server), ``stats``, ``profiling``
(cProfile of ours), ``report`` (RESULTS.md and the optional chart), ``cli`` (arguments
and progress). Design notes for missed targets go in ``bench/what_was_tried.md``, which
the report copies into RESULTS.md. ``layout`` is no benchmark: issue 48's layout figures
(modules, long functions, files per capability, imports) at a few commits, as a table:
``python -m bench.layout 17a052b HEAD``.
"""
