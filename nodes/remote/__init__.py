"""Ways to run a delegation elsewhere: on a LangGraph API server (`langgraph`) or an A2A
agent (`a2a`). Both go through the delegation lifecycle a local subagent does
(`nodes.delegation.lifecycle`); `delegation` is what they share (the open
`RemoteDelegation` their exchange gets, the endpoint settings, the node).

Imports delegation, steps, scope, observability and `checkpointers`; nothing above
`nodes`.
"""
