"""The research-and-write demo (`supervisor_graph.examples.research_write`, scripted
models) with each model call taking 0.3 s, so that the page shows each delegation
working before it is done: `supervisor-graph serve tests/examples/slow_demo.py:agent`."""

from supervisor_graph.examples.research_write import build_agents

agent = build_agents(latency=0.3)
