"""AG-UI bridge: serve a declared supervisor to AG-UI front ends (CopilotKit,
`@ag-ui/client`) over server-sent events (SPEC §14, AGUI.md).

    from fastapi import FastAPI
    from supervisor_graph.agui import AGUIAgent, add_agui_endpoint

    app = FastAPI()
    add_agui_endpoint(app, AGUIAgent(parent, resource_id="user-123"), path="/agent")

Needs the `agui` extra: `pip install 'supervisor-graph[agui]'`. Imports the agent, the
run facade and everything below them; never the CLI, which serves it.
"""

from supervisor_graph.agui.agent import AGUIAgent
from supervisor_graph.agui.endpoint import create_app, serve
from supervisor_graph.agui.outcomes import RunRecord
from supervisor_graph.agui.sse import add_agui_endpoint

__all__ = ["AGUIAgent", "RunRecord", "add_agui_endpoint", "create_app", "serve"]
