"""Background delegations hosted by a LangGraph API server (SPEC §12): `langgraph dev`,
LangGraph Platform, Aegra.

Where the server drives the graph there is no run facade to host a task, but there is a
deployment with a run queue, workers and crash recovery. A background delegation becomes
a run of the *same* graph on a thread of its own, started with the context field
`background_task`: that run goes straight to the subagent's node (the supervisor's first
step sees the field), runs the delegation, and sends its outcome to the parent thread as
a new run (`multitask_strategy="enqueue"`, so it queues behind a busy run and never runs
beside it), whose input is the notice and the task's final record: the supervisor answers
it without a user message. The server's queue runs the task on any worker and re-runs it
after a crash; a notice is not sent twice for a task the parent already knows has ended.

The client is the server's in-process one (`langgraph_sdk.get_client()` inside
`langgraph dev` / LangGraph Platform), or the URL in `SUPERVISOR_GRAPH_SERVER_URL`
(Aegra, or any server that offers no in-process client). A task needs a server that runs
more than one run at a time: `langgraph dev` does only with `--n-jobs-per-worker N`.

The control tools (`ServerTasks`) act on a task through its thread: its state
(`interrupted` = waiting for an answer there), cancelling its runs, a new run for an
update. An approval inside a task waits on the task's thread, resumed there.

The rules of the process host (SPEC §12) hold here as follows. Record before answer: the
task's thread and run exist before `start` returns, and the launching tool's result
carries the task's record into the parent's state in the same update, so the control
tools of the supervisor's next step find it. Cancel and update from any process: they
go through the server's API (`runs.cancel`, `runs.create`), which every worker of the
deployment serves and whose queue stops or starts the task's run wherever it runs, so
no request needs storing in a memory (the server owns the storage; this module has no
store of its own to write to). Not done here: `on_delegation_complete` per try with its
feedback and `bail()` reaching the parent thread. A task's run gets the server's
options (a hook passed to one `generate` call never reaches the server), and the report
to the parent is a new run whose input has no channel for them yet.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from langchain_core.messages import message_to_dict
from langchain_core.runnables import RunnableConfig

from supervisor_graph.nodes.background.tasks import FINAL_STATUSES, notice

__all__ = ["SERVER_URL_ENV", "ServerHost", "server_host"]

log = logging.getLogger("supervisor_graph")

SERVER_URL_ENV = "SUPERVISOR_GRAPH_SERVER_URL"


def _graph_id(config: RunnableConfig) -> str | None:
    configurable = config.get("configurable") or {}
    metadata = config.get("metadata") or {}
    value = configurable.get("graph_id") or metadata.get("graph_id") or configurable.get("assistant_id") or metadata.get("assistant_id")
    return str(value) if value else None


def _on_server(config: RunnableConfig) -> bool:
    metadata = config.get("metadata") or {}
    return bool(os.environ.get(SERVER_URL_ENV) or metadata.get("langgraph_api_version"))


class ServerHost:
    """Starts background delegations as server runs and reports their outcomes."""

    def __init__(self, graph_id: str | None) -> None:
        self.graph_id = graph_id  # None: found on the parent thread (Aegra names none in the run)

    async def _graph(self, client: Any, task: dict[str, Any]) -> str:
        if task.get("graph_id"):
            return str(task["graph_id"])
        if self.graph_id is None:
            metadata = (await client.threads.get(task["parent_thread"])).get("metadata") or {}
            found = metadata.get("graph_id") or metadata.get("assistant_id")
            if not found:
                raise RuntimeError(
                    "background task: neither the run nor its thread names the server's graph (graph_id / assistant_id)"
                )
            self.graph_id = str(found)
        task["graph_id"] = self.graph_id
        return self.graph_id

    def _client(self) -> Any:
        from langgraph_sdk import get_client

        return get_client(url=os.environ.get(SERVER_URL_ENV) or None, api_key=None)

    async def start(self, task: dict[str, Any]) -> dict[str, Any]:
        """Start the task's run; returns where it runs (`server_thread`, `server_run`)."""
        client = self._client()
        graph_id = await self._graph(client, task)
        thread = await client.threads.create(
            metadata={"supervisor_graph_parent_thread": task["parent_thread"], "supervisor_graph_task_id": task["task_id"]}
        )
        run = await client.runs.create(
            thread["thread_id"],
            graph_id,
            input={"messages": [{"type": "human", "content": task["prompt"]}]},
            context={"background_task": task},
            metadata={"parent_run_id": task.get("parent_run_id") or ""},
            headers=task.get("trace_headers") or None,
        )
        # the record keeps the task, so the control tools can cancel, restart and report it
        return {"server_thread": thread["thread_id"], "server_run": run["run_id"], "server_task": task}

    def control(self, parent_thread: str, records: dict[str, Any]) -> ServerTasks:
        """The control tools' host for the tasks of `parent_thread` (their records)."""
        return ServerTasks(self, parent_thread, records)

    async def report(self, task: dict[str, Any], status: str, text: str) -> None:
        """Send the outcome to the parent thread as a new run, unless the parent already
        knows it (the task's run was re-run after a crash that followed the report)."""
        client = self._client()
        parent = task["parent_thread"]
        try:
            state = await client.threads.get_state(parent)
            known = ((state.get("values") or {}).get("background_tasks") or {}).get(task["task_id"]) or {}
            if known.get("status") in FINAL_STATUSES:
                return
        except Exception as exc:  # noqa: BLE001 - reporting twice is better than not at all
            log.debug("background task %s: parent state unreadable (%s)", task["task_id"], type(exc).__name__)
        message = message_to_dict(notice(task["task_id"], task["key"], status, text))
        record = {"status": status, "result_text": text}
        await client.runs.create(
            parent,
            await self._graph(client, task),
            input={"messages": [{"type": "human", **message["data"]}], "background_tasks": {task["task_id"]: record}},
            multitask_strategy="enqueue",
        )


class ServerTasks:
    """`check/list/cancel/update_background_task` for tasks the server hosts (SPEC §12):
    a task's state is its thread's on the server (`interrupted`: waiting for an answer
    there), cancelling cancels its run and reports `cancelled` to the parent, an update
    cancels the run and starts the next try on the same thread with the instructions."""

    def __init__(self, host: ServerHost, parent_thread: str, records: dict[str, Any]) -> None:
        self.host, self.parent_thread = host, parent_thread
        self.records = {task_id: dict(record, task_id=task_id) for task_id, record in records.items()}

    async def task_records(self) -> list[dict[str, Any]]:
        client = self.host._client()
        for record in self.records.values():
            if record.get("status") == "running" and record.get("server_thread"):
                try:
                    thread = await client.threads.get(record["server_thread"])
                except Exception as exc:  # noqa: BLE001 - the record as the parent knows it
                    log.debug("background task %s: thread unreadable (%s)", record["task_id"], type(exc).__name__)
                    continue
                record["waiting"] = thread.get("status") == "interrupted"
        return list(self.records.values())

    def _live(self, task_id: str, verb: str) -> dict[str, Any] | str:
        record = self.records[task_id]
        if record.get("status") in FINAL_STATUSES:
            return f"Task {task_id} has already ended ({record['status']}); there is nothing to {verb}."
        if not record.get("server_task"):
            return f"Task {task_id} was started by an older version and cannot be {verb}d here."
        return record

    async def _stop(self, record: dict[str, Any]) -> None:
        client = self.host._client()
        thread = record["server_thread"]
        for run in await client.runs.list(thread, limit=20):
            if run.get("status") in ("pending", "running"):
                await client.runs.cancel(thread, run["run_id"], wait=True)

    async def cancel_task(self, task_id: str) -> str:
        record = self._live(task_id, "cancel")
        if isinstance(record, str):
            return record
        await self._stop(record)
        await self.host.report(record["server_task"], "cancelled", "Cancelled by the supervisor.")
        return f"Task {task_id} is cancelled."

    async def update_task(self, task_id: str, instructions: str) -> str:
        record = self._live(task_id, "update")
        if isinstance(record, str):
            return record
        await self._stop(record)
        task = dict(record["server_task"])
        task["prompt"] = f"{task['prompt']}\n\nUpdated instructions: {instructions}"
        client = self.host._client()
        await client.runs.create(
            record["server_thread"],
            await self.host._graph(client, task),
            input={"messages": [{"type": "human", "content": task["prompt"]}]},
            context={"background_task": task},
            multitask_strategy="interrupt",
        )
        return f"Task {task_id} goes on with the new instructions (its next try starts with them)."


def server_host(config: RunnableConfig) -> ServerHost | None:
    """The host for background delegations of a run the server drives (None elsewhere)."""
    if not _on_server(config):
        return None
    return ServerHost(_graph_id(config))
