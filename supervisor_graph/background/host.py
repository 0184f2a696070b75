"""Background delegations, hosted by the run facade (SPEC §12).

A task runs its subagent's graph standalone on a thread of its own,
`<parent thread>::bg/<task id>-t<try>`, with the memory's checkpointer, so an approval
inside it pauses that thread only and a resume continues where it stopped. Its progress
(tries, status, a pause, the outcome) is a record in the memory's store, written without
the parent thread; the parent's checkpointed state says which tasks it started and
which outcomes it has been told. The next run on the parent thread carries every new
outcome in as a notice, with the final status in the same checkpoint, so each is
reported once. A task lease (`bg:<task id>`, in the memory's lease table) keeps two
processes from running one task, and tells a live task from one whose process died.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.types import Command

from supervisor_graph.background.control import TaskControl, cancelled, drop_requests, take_requests, watch
from supervisor_graph.background.runner import runner
from supervisor_graph.checkpointers.urls import Storage
from supervisor_graph.declaration.errors import ThreadBusyError
from supervisor_graph.declaration.remote import RemoteSubagent
from supervisor_graph.memory.background_records import BACKGROUND_NAMESPACE
from supervisor_graph.memory.lease import ThreadLease
from supervisor_graph.nodes.background.tasks import (
    FINAL_STATUSES,
    BackgroundLaunch,
    BackgroundTaskConfig,
    outcome_text,
)
from supervisor_graph.nodes.delegation.control import (
    DelegationRecord,
    complete_hook,
    inherit_bound,
    record_answer,
    record_transcript,
    within,
)
from supervisor_graph.nodes.delegation.subagent import sub_options
from supervisor_graph.nodes.observability.tracing import agent_metadata
from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions
from supervisor_graph.nodes.scope.context import RequestContext
from supervisor_graph.nodes.steps.budget import child_budget, exceeded_result, own_budget, restarted

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent

__all__ = ["RunBackground", "background_thread_id"]

log = logging.getLogger("supervisor_graph")

def background_thread_id(parent_thread: str, task_id: str, attempt: int) -> str:
    """The thread one try of a task runs on (not a namespace of the parent's: `/` keeps
    `split_thread_id` from reading it as one)."""
    return f"{parent_thread}::bg/{task_id}-t{attempt}"


ANSWER_WAIT = 600.0


# -- one run's launcher --------------------------------------------------------------


@dataclass
class RunBackground(TaskControl):
    """Hosts the background delegations of runs on one parent thread."""

    agent: Agent
    storage: Storage
    thread_id: str
    resource_id: str | None
    # runs the supervisor on the thread with the outcomes it has not been told of (the
    # facade's `answer_outcomes`; raises ThreadBusyError while a run holds the thread)
    answer: Callable[[Any, dict[str, Any]], Awaitable[Any]] | None = None
    launched: list[str] = field(default_factory=list)

    # -- the store record ---------------------------------------------------------

    async def load(self, task_id: str) -> dict[str, Any] | None:
        item = await self.storage.store.aget(BACKGROUND_NAMESPACE, task_id)
        return dict(item.value) if item is not None else None

    async def save(self, record: dict[str, Any]) -> None:
        await self.storage.store.aput(BACKGROUND_NAMESPACE, record["task_id"], record, index=False)

    async def records(self) -> list[dict[str, Any]]:
        items = await self.storage.store.asearch(BACKGROUND_NAMESPACE, filter={"thread_id": self.thread_id}, limit=10_000)
        return [dict(item.value) for item in items]

    # -- launching ----------------------------------------------------------------

    async def launch(self, launch: BackgroundLaunch) -> None:
        """Start a task the subagent node handed over (a node run again starts nothing
        new). Its record, `running`, and its lease exist when this returns: the
        launching tool answers after it, so the supervisor's next step (or another
        process) finds the task, and nobody mistakes it for an orphan before it starts."""
        if runner.live(launch.task_id):
            return
        lease = await self._task_lease(launch.task_id)
        if lease is None:
            return
        try:
            if await self.load(launch.task_id) is None:
                await self.save(self._new_record(launch))
            work = self._execute(launch, lease=lease)
        except BaseException:
            await lease.release()
            raise
        if runner.start(launch.task_id, work):
            self.launched.append(launch.task_id)
            task = runner.tasks[launch.task_id]
            # a task cancelled before its first step (the loop shutting down) never runs
            # its own `finally`: give its lease back here
            task.add_done_callback(lambda done: _release_unstarted(done, lease))
        else:
            await lease.release()

    async def _task_lease(self, task_id: str) -> ThreadLease | None:
        """The task's lease, taken; None when another process holds it (it runs the task)."""
        lease = ThreadLease(self.storage.leases, f"bg:{task_id}")
        try:
            await lease.acquire()
        except ThreadBusyError:
            return None
        return lease

    def _new_record(self, launch: BackgroundLaunch) -> dict[str, Any]:
        return {
            "task_id": launch.task_id,
            "thread_id": self.thread_id,
            "resource_id": self.resource_id,
            "agent_key": launch.key,
            "agent_id": launch.agent_id,
            "tool_call_id": launch.tool_call_id,
            "tool_name": launch.tool_name,
            "prompt": launch.prompt,
            "request_context": _plain(launch.context.handle.request_context),
            "budget": own_budget(launch.context.handle.budget),  # for a re-run or a resume
            "status": "running",
            "tries": 0,
            "result_text": None,
            "waiting": [],
        }

    async def _execute(self, launch: BackgroundLaunch, resume: Any = None, lease: ThreadLease | None = None) -> None:
        # A trace of its own (linked by its metadata): the run that launched it may end
        # first, so its runs must not hang under that run's node (SPEC §24).
        var_child_runnable_config.set(None)
        if lease is None:
            lease = await self._task_lease(launch.task_id)
            if lease is None:
                return
        try:
            record = await self.load(launch.task_id) or self._new_record(launch)
            if record["status"] not in FINAL_STATUSES:
                await self._tries(launch, record, resume)
            if record["status"] in FINAL_STATUSES:
                await drop_requests(self.storage.store, launch.task_id)
        except Exception as exc:  # noqa: BLE001 - a broken task is a failed task, never a silent one
            log.warning("background task %s could not run: %s", launch.task_id, type(exc).__name__, exc_info=exc)
        finally:
            runner.forget(launch.task_id)
            await lease.release()
            runner.notify(self.thread_id)
            self.answer_outcomes(launch.task_id)

    async def _apply_requests(self, launch: BackgroundLaunch, record: dict[str, Any]) -> BackgroundLaunch | None:
        """Act on the requests stored for the task: None when one cancelled it (its record
        saved as `cancelled`), else the launch its next try runs (with any new
        instructions after its prompt, kept in the record for a re-run)."""
        requests = await take_requests(self.storage.store, launch.task_id)
        if any(r.get("kind") == "cancel" for r in requests):
            cancelled(record, launch.agent_id)
            await self.save(record)
            return None
        for request in requests:
            if request.get("kind") == "update" and request.get("instructions"):
                launch = replace(launch, prompt=f"{launch.prompt}\n\nUpdated instructions: {request['instructions']}")
                record["prompt"] = launch.prompt
        return launch

    def answer_outcomes(self, task_id: str | None = None) -> None:
        """Have the supervisor answer the thread's untold outcomes without waiting for a
        user message (SPEC §12): at once when the thread is idle, right after the run that
        holds it otherwise. An until-idle stream on the thread answers them itself.
        `task_id`: the task whose end asks it (nothing to do when a stream answered it)."""
        thread = self.thread_id
        if task_id is not None and task_id in runner.answered:
            runner.answered.discard(task_id)
            return
        if runner.watched.get(thread):
            runner.deferred.add(thread)  # the stream answers it, or hands it back when it stops
            return
        if thread in runner.answering:
            return
        runner.answering.add(thread)
        task = asyncio.ensure_future(self._answer())
        task.add_done_callback(lambda _: runner.answering.discard(thread))

    async def _answer(self) -> None:
        if self.answer is None:
            return  # a host that only reads and resumes tasks (none of its runs answer)
        memory = {"thread": self.thread_id, "resource": self.resource_id}
        delay = 0.02
        deadline = asyncio.get_running_loop().time() + ANSWER_WAIT
        while not runner.watched.get(self.thread_id):
            try:
                await self.answer(self.agent, memory)
            except ThreadBusyError:  # a run holds the thread: answer right after it
                if asyncio.get_running_loop().time() > deadline:
                    log.warning("background outcomes of thread %r wait for its next run: it stayed busy", self.thread_id)
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)
                continue
            except Exception as exc:  # noqa: BLE001 - the next call on the thread reports them instead
                log.warning("answering background outcomes of thread %r failed: %s", self.thread_id, type(exc).__name__)
            return

    async def _tries(self, launch: BackgroundLaunch, record: dict[str, Any], resume: Any) -> None:
        """Run tries until the task ends, pauses on approvals or is cancelled; `record`
        holds its final state (saved)."""
        settings = launch.settings
        graph = _graph_with(launch.graph, self.storage)
        while True:
            updated = await self._apply_requests(launch, record)  # a cancel before the try starts wins
            if updated is None:
                return
            if updated is not launch:
                launch, resume = updated, None  # new instructions: a fresh try with them
            if resume is None:
                record["tries"] += 1
            attempt = record["tries"]
            record["status"], record["waiting"] = "running", []
            await self.save(record)
            config = {
                **launch.config,
                "configurable": {"thread_id": background_thread_id(self.thread_id, launch.task_id, attempt)},
            }
            graph_input = resume if resume is not None else {"messages": [HumanMessage(content=launch.prompt)]}
            resume = None
            outcome, delegation, waiting = await self._try(graph, graph_input, config, launch, settings)
            if outcome == "request":
                continue  # a cancel or an update arrived during the try: acted on above
            if outcome == "waiting":
                record["waiting"] = waiting
                await self.save(record)
                return
            if outcome in ("completed", "failed", "timed_out"):  # on_delegation_complete runs once per try
                hooked, bailed = await complete_hook(launch.parent_options, launch.parent_handle, delegation, launch.agent_id)
                if hooked is not None and hooked.feedback:
                    record["feedback"] = [*(record.get("feedback") or []), hooked.feedback]  # for the parent thread
                if bailed:
                    record["bail"] = True  # the supervisor's run on the outcome ends once it has answered
                if outcome == "completed" and not delegation.success:
                    outcome = "failed"  # a throwing hook under hook_error_strategy="throw"
            if outcome in ("failed", "timed_out") and attempt <= settings.retries:
                continue
            record["status"] = outcome
            record["result_text"] = outcome_text(outcome, delegation, settings.timeout_ms)
            if outcome == "completed" and delegation.object is not None:
                record["object"] = delegation.object  # a subagent's typed answer (SPEC §28), as JSON

            await self.save(record)
            return

    async def _try(
        self, graph: Any, graph_input: Any, config: Any, launch: BackgroundLaunch, settings: BackgroundTaskConfig
    ) -> tuple[str, DelegationRecord, list[dict[str, Any]]]:
        delegation = DelegationRecord(
            tool_call_id=launch.tool_call_id, key=launch.key, agent_id=launch.agent_id, prompt=launch.prompt
        )
        latest: dict[str, Any] = {}
        interrupts: list[Any] = []
        handle = launch.context.handle
        handle.budget = restarted(handle.budget)  # each try: its subagent's own budget, from now (SPEC §25)

        async def run() -> None:
            nonlocal latest
            async for mode, data in graph.astream(
                graph_input, config, context=launch.context, stream_mode=["values", "updates"], durability="sync"
            ):
                if mode == "values":
                    latest = data
                elif isinstance(data, dict) and "__interrupt__" in data:
                    interrupts.extend(data["__interrupt__"])

        signal = launch.parent_handle.abort_signal
        timeout = settings.timeout_ms / 1000 if settings.timeout_ms else None
        try:
            work = asyncio.ensure_future(run())
            control = asyncio.ensure_future(watch(self.storage.store, launch.task_id))  # cancel / update requests
            waiters = {work, control}
            stop = asyncio.ensure_future(signal.wait()) if signal is not None else None
            if stop is not None:
                waiters.add(stop)
            try:
                done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            finally:
                control.cancel()
                if stop is not None:
                    stop.cancel()
            if work not in done:
                work.cancel()
                await asyncio.gather(work, return_exceptions=True)
                if signal is not None and signal.is_set():
                    return "cancelled", delegation, []
                if control in done:
                    return "request", delegation, []
                record_transcript(delegation, latest)  # what the try did before its time ran out
                delegation.success = False
                delegation.error = TimeoutError(f"the subagent {launch.agent_id!r} ran longer than {settings.timeout_ms} ms")
                delegation.finish_reason = "error"
                return "timed_out", delegation, []
            work.result()
        except Exception as exc:  # noqa: BLE001 - the outcome notice says it failed, generically
            log.warning("background task %s (%s) failed: %s", launch.task_id, launch.agent_id, type(exc).__name__)
            delegation.success, delegation.error = False, exc
            record_transcript(delegation, latest)
            return "failed", delegation, []
        record_transcript(delegation, latest)
        if interrupts:
            thread = config["configurable"]["thread_id"]
            return "waiting", delegation, [_pending(item, thread, launch) for item in interrupts]
        record_answer(delegation, latest)
        exceeded_result(delegation, handle.budget)
        return "completed", delegation, []

    # -- a paused task --------------------------------------------------------------

    async def resume(self, record: dict[str, Any], answers: dict[str, Any]) -> None:
        """Continue a task paused on approvals with `answers` (interrupt id -> answer),
        where it stopped; returns when it has settled again."""
        launch = self.relaunch(record)
        await self._execute(launch, resume=Command(resume=answers))

    def relaunch(self, record: dict[str, Any], context_messages: Sequence[BaseMessage] = ()) -> BackgroundLaunch:
        """A launch rebuilt from a task's record (a resume, or a re-run after a crash)."""
        sub = self.agent.agents[record["agent_key"]]
        assert not isinstance(sub, RemoteSubagent), "background tasks run local subagents only"
        settings = self.agent.background_setting_for(record["agent_key"])
        parent_options = RunOptions.model_validate(self.agent.default_options)
        parent_handle = RunHandle(
            run_id=record["task_id"], agent_path=(self.agent.id,), thread_id=self.thread_id, resource_id=self.resource_id
        )
        request_context = RequestContext(record.get("request_context") or {})
        sub_handle = RunHandle(
            run_id=record["task_id"],
            agent_path=(self.agent.id, sub.id),
            request_context=request_context,
            context_messages=within(list(context_messages), inherit_bound(sub.inherit_context)),
            thread_id=None,
            resource_id=f"{self.resource_id or self.thread_id}/{record['agent_key']}",
            stream_events=False,
            durable=True,
            budget=child_budget(None, record.get("budget"), sub.budget),
        )
        context = RunContext.for_run(sub_options(parent_options, sub.defaults, None, sub_handle), sub_handle)
        return BackgroundLaunch(
            task_id=record["task_id"],
            key=record["agent_key"],
            agent_id=record["agent_id"],
            tool_call_id=record["tool_call_id"],
            tool_name=record.get("tool_name") or f"agent-{record['agent_key']}",
            prompt=record["prompt"],
            graph=sub.graph,
            config={
                "metadata": {
                    **agent_metadata(sub.id, sub.name, (self.agent.id, sub.id), sub.tracing),
                    "parent_thread_id": self.thread_id,
                }
            },
            context=context,
            settings=settings or BackgroundTaskConfig(),
            parent_options=parent_options,
            parent_handle=parent_handle,
        )


_graphs: weakref.WeakKeyDictionary[Any, tuple[Any, Any]] = weakref.WeakKeyDictionary()


def _graph_with(graph: Any, storage: Storage) -> Any:
    """The subagent's graph on the memory's checkpointer and store, made once per saver."""
    entry = _graphs.get(storage.saver)
    if entry is None or entry[0] is not graph:
        entry = _graphs[storage.saver] = (graph, graph.copy(update={"checkpointer": storage.saver, "store": storage.store}))
    return entry[1]


def _release_unstarted(task: asyncio.Task[None], lease: ThreadLease) -> None:
    if lease.acquired is None:
        return  # the task ran and gave it back
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return  # no loop left to release it on: the lease expires (checkpointers/leases.py)
    asyncio.ensure_future(lease.release())


def _plain(context: RequestContext) -> dict[str, Any]:
    from supervisor_graph.nodes.delegation.control import RUN_IDENTITY_KEYS

    return {k: v for k, v in context.to_dict().items() if k not in RUN_IDENTITY_KEYS}


def _pending(item: Any, thread: str, launch: BackgroundLaunch) -> dict[str, Any]:
    value = item.value if isinstance(item.value, dict) else {"payload": item.value}
    return {
        "interrupt_id": item.id,
        "kind": value.get("kind", "approval"),
        "tool_call_id": value.get("tool_call_id"),
        "tool_name": value.get("tool_name"),
        "args": value.get("args") or {},
        "agent_path": list(value.get("agent_path") or (launch.agent_id,)),
        "payload": value.get("payload", value),
        "resume_schema": value.get("resume_schema"),
        **{k: value[k] for k in ("allowed_decisions", "input_schema", "description") if k in value},
        "namespace": f"bg/{launch.task_id}",
        "thread": thread,
    }
