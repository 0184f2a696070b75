"""Delegations run elsewhere: a LangGraph API server (`langgraph`), an A2A agent
(`a2a`), and what both share (`delegation`).

Imports delegation, steps, guards, scope, observability and `checkpointers`;
nothing above `nodes`.
"""
