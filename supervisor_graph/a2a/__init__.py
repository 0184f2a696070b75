"""A2A server: the supervisor served to A2A agents and clients (SPEC §27) with `a2a-sdk`.

`add_a2a_routes(app, bridge)` puts on a FastAPI app the agent card at
`/.well-known/agent-card.json` (and `/a2a/.well-known/agent-card.json`) and the
JSON-RPC endpoint at `/a2a` (`SendMessage`, `SendStreamingMessage`, `GetTask`,
`CancelTask`, and the 0.3 names `message/send`, `message/stream`, `tasks/get`,
`tasks/cancel`). `SupervisorExecutor` is the SDK's
`AgentExecutor`: one A2A task per run, the context id as the memory's thread, a paused
approval as `input-required` (see `answers.py` for the answer convention and the
camelCase keys of its data part). `MemoryTaskStore` keeps the tasks in the agent's memory (sqlite, Postgres), each owned by
its user (`tasks.py`).

It drives the supervisor through the AG-UI bridge (`supervisor_graph.agui.AGUIAgent`),
which holds the thread lease, the limits and the error codes; so it imports `agui` and
everything below it, never the CLI, which wires it (`serve --a2a`). Needs the `a2a`
extra: `pip install 'supervisor-graph[a2a]'`.
"""

from supervisor_graph.a2a.card import agent_card
from supervisor_graph.a2a.executor import SupervisorExecutor
from supervisor_graph.a2a.routes import A2A_PATH, add_a2a_routes
from supervisor_graph.a2a.tasks import MemoryTaskStore

__all__ = ["A2A_PATH", "MemoryTaskStore", "SupervisorExecutor", "add_a2a_routes", "agent_card"]
