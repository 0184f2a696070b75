"""`SupervisorExecutor`: the `a2a-sdk` AgentExecutor that runs the supervisor.

One A2A task is one run and its resumes; the task's context id is the memory's thread
(owned by the bridge's resource), so two messages in one context continue one
conversation. The run goes through `AGUIAgent.run`, which takes the thread's lease,
checks the thread id and its owner and names every failure with a code; its AG-UI
events become A2A updates:

- the supervisor's text deltas -> `TaskArtifactUpdateEvent`s appending to the `answer`
  artifact (subagents' own text stays inside their delegations);
- `RUN_FINISHED` success -> `completed`, its status message holding the answer, its
  metadata the run's `usage` and `cost` in USD (SPEC §33);
- `RUN_FINISHED` interrupt -> `input-required`, the message naming what waits and how to
  answer (`answers.py`), a data part listing the waiting items;
- `RUN_FINISHED` cancelled -> `canceled`; `RUN_ERROR` -> `failed` with the message and
  code (`THREAD_BUSY` when another run holds the context's thread), except an answer
  refused before anything resumed (a decision the tool does not allow, edited args its
  input schema refuses): the task stays `input-required`, its message saying why.

`tasks/cancel` aborts the running run (it stops at once and leaves its thread
consistent); a task waiting in `input-required` is cancelled by declining what waits.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part, new_task, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskStore, TaskUpdater
from a2a.types import ListTasksRequest, Message, Part, Role, TaskState
from ag_ui.core import (
    BaseEvent,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    TextMessageContentEvent,
    TextMessageStartEvent,
    UserMessage,
)

from supervisor_graph.a2a.answers import describe, plan_answers, waiting_data
from supervisor_graph.agui.agent import AGUIAgent
from supervisor_graph.agui.frontend import InputError
from supervisor_graph.agui.outcomes import client_error
from supervisor_graph.agui.usage import usage_and_cost

__all__ = ["CANCEL_WAIT", "SupervisorExecutor"]

log = logging.getLogger("supervisor_graph.a2a")

# seconds `tasks/cancel` waits for an aborted run to report `canceled` itself
CANCEL_WAIT = 10.0

# answers the bridge refused before resuming anything: the task asks again
_ASK_AGAIN = frozenset({"INVALID_TOOL_APPROVAL", "MASTRA_INVALID_TOOL_APPROVAL", "INVALID_RESUME_PAYLOAD"})
_MESSAGES = {
    "THREAD_BUSY": "Another run is in progress on this context (its memory thread); try again when it has finished.",
    "INTERRUPT_PENDING": "An approval is waiting on this context: answer its input-required task first "
    '("approve" or "decline" on that task id).',
}


def _on_busy(message: Message | None) -> Any:
    """The `on_busy` of a message's metadata (SPEC §29), or None."""
    if message is None or not message.HasField("metadata") or "on_busy" not in message.metadata:
        return None
    return message.metadata["on_busy"]


def _message(task_id: str, context_id: str, text: str, data: dict[str, Any] | None = None) -> Message:
    parts: list[Part] = [new_text_part(text)]
    if data is not None:
        parts.append(new_data_part(data))
    return Message(
        message_id=str(uuid.uuid4()), role=Role.ROLE_AGENT, task_id=task_id, context_id=context_id, parts=parts
    )


class _Run:
    """One task's run in flight: its abort signal, and whether it reported its end."""

    def __init__(self) -> None:
        self.abort = asyncio.Event()
        self.ended = asyncio.Event()


class SupervisorExecutor(AgentExecutor):
    """Runs `bridge`'s supervisor for A2A requests (module docstring)."""

    def __init__(self, bridge: AGUIAgent, task_store: TaskStore | None = None) -> None:
        self.bridge = bridge
        # where the tasks live: it names the input-required task of a context whose
        # pause this process did not see (one from before a restart)
        self.task_store = task_store
        self._runs: dict[str, _Run] = {}
        # the input-required task of each context, for the message that refuses a new run
        self._paused: dict[str, str] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id, context.context_id
        assert task_id is not None and context_id is not None  # the request handler sets both
        updater = TaskUpdater(event_queue, task_id, context_id)
        message = context.message
        texts = get_text_parts(message.parts) if message is not None else []
        data = get_data_parts(message.parts) if message is not None else []
        current = context.current_task
        if current is None:
            history = [message] if message is not None else []
            await event_queue.enqueue_event(
                new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=history)
            )
        run = self._runs[task_id] = _Run()
        try:
            if current is not None and current.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
                waiting = await self._waiting(context)
                entries = plan_answers(waiting, texts, data) if waiting else None
                if entries is None:
                    if waiting:
                        await self._ask(updater, waiting, "That message answers nothing that waits. ")
                    else:
                        await updater.failed(_message(task_id, context_id, "Nothing waits on this task any more."))
                    return
                self._paused.pop(context_id, None)
                input = self._input(context_id, resume=entries)
            else:
                text = "\n".join(t for t in texts if t.strip())
                if not text:
                    await updater.failed(_message(task_id, context_id, "The message holds no text to send the agent."))
                    return
                user = UserMessage(
                    id=(message.message_id if message is not None else "") or str(uuid.uuid4()),
                    role="user",
                    content=text,
                )
                input = self._input(context_id, messages=[user], on_busy=_on_busy(message))
            await self._drive(input, context, updater, run)
        finally:
            run.ended.set()
            if self._runs.get(task_id) is run:
                del self._runs[task_id]

    def _input(
        self,
        thread_id: str,
        *,
        messages: list[Any] | None = None,
        resume: list[ResumeEntry] | None = None,
        on_busy: Any = None,
    ) -> RunAgentInput:
        return RunAgentInput(
            thread_id=thread_id,
            run_id=str(uuid.uuid4()),
            state={},
            messages=messages or [],
            tools=[],
            context=[],
            # double texting (SPEC §29): the message's metadata `on_busy`, else the bridge's
            forwarded_props={"on_busy": on_busy} if on_busy is not None else {},
            resume=resume,
        )

    async def _waiting(self, context: RequestContext) -> list[Interrupt]:
        assert context.context_id is not None
        try:
            resource = await self.bridge.access(context.call_context, context.context_id)
        except InputError:
            return []
        return await self.bridge.waiting(context.context_id, resource)

    async def _ask(self, updater: TaskUpdater, waiting: list[Interrupt], prefix: str = "") -> None:
        self._paused[updater.context_id] = updater.task_id
        text = prefix + describe(waiting)
        await updater.requires_input(_message(updater.task_id, updater.context_id, text, waiting_data(waiting)))

    async def _drive(self, input: RunAgentInput, context: RequestContext, updater: TaskUpdater, run: _Run) -> None:
        """Stream the run's events to the task, then end it in one state."""
        await updater.start_work()
        artifact_id = f"{updater.task_id}-answer"
        streamed = False
        texts: dict[str, list[str]] = {}
        last_message: str | None = None
        events = self.bridge.run(input, request=context.call_context, abort_signal=run.abort).__aiter__()
        end: BaseEvent | None = None
        try:
            async for event in events:
                if (
                    isinstance(event, (TextMessageStartEvent, TextMessageContentEvent))
                    and event.subagent_run_id is None
                ):
                    if isinstance(event, TextMessageStartEvent):
                        continue
                    if not event.delta:
                        continue
                    delta = event.delta
                    if event.message_id != last_message and streamed:
                        delta = "\n\n" + delta
                    last_message = event.message_id
                    texts.setdefault(event.message_id, []).append(event.delta)
                    await updater.add_artifact(
                        [new_text_part(delta)], artifact_id=artifact_id, name="answer", append=streamed
                    )
                    streamed = True
                elif isinstance(event, (RunFinishedEvent, RunErrorEvent)):
                    end = event
        finally:
            await events.aclose()  # type: ignore[attr-defined]
        answer = "".join(texts[last_message]) if last_message is not None else ""
        await self._finish(end, answer, updater, context)

    async def _paused_task(self, updater: TaskUpdater, context: RequestContext) -> str | None:
        """The stored input-required task of the context, if any."""
        if self.task_store is None or context.call_context is None:
            return None
        found = await self.task_store.list(
            ListTasksRequest(context_id=updater.context_id, status=TaskState.TASK_STATE_INPUT_REQUIRED, page_size=1),
            context.call_context,
        )
        return found.tasks[0].id if found.tasks else None

    async def _finish(self, end: BaseEvent | None, answer: str, updater: TaskUpdater, context: RequestContext) -> None:
        task_id, context_id = updater.task_id, updater.context_id
        if isinstance(end, RunErrorEvent):
            code = end.code or "AGENT_ERROR"
            waiting = await self._waiting(context) if code in _ASK_AGAIN else []
            if waiting:  # a refused answer (e.g. edited args of the wrong type): still input-required
                await self._ask(updater, waiting, f"{end.message} ")
                return
            text = _MESSAGES.get(code, end.message)
            if code == "INTERRUPT_PENDING":
                paused = self._paused.get(context_id) or await self._paused_task(updater, context)
                if paused:
                    text += f" (task {paused})"
            await updater.failed(_message(task_id, context_id, text, {"code": code}))
            return
        outcome = end.outcome if isinstance(end, RunFinishedEvent) else None
        kind = getattr(outcome, "type", "success")
        if kind == "interrupt":
            await self._ask(updater, list(getattr(outcome, "interrupts", None) or []))
        elif kind == "cancelled":
            await updater.cancel(_message(task_id, context_id, "The run was cancelled."))
        elif end is None:
            code, text = client_error(RuntimeError("the run ended without a result"), False)
            await updater.failed(_message(task_id, context_id, text, {"code": code}))
        elif isinstance(end, RunFinishedEvent) and end.result is not None:
            # a typed answer (SPEC §28): a data part beside the text, in the answer
            # artifact and in the completing message
            value = end.result if isinstance(end.result, dict) else {"value": end.result}
            await updater.add_artifact(
                [new_data_part(value)], artifact_id=f"{task_id}-answer", name="answer", append=bool(answer)
            )
            await self._complete(updater, end, _message(task_id, context_id, answer, value))
        else:
            await self._complete(updater, end, _message(task_id, context_id, answer))

    async def _complete(self, updater: TaskUpdater, end: BaseEvent, message: Message) -> None:
        """Complete the task, the run's usage and cost in its status update's metadata
        (SPEC §33), where an A2A client of ours (`A2AAgent`) reads them."""
        usage = end.usage if isinstance(end, RunFinishedEvent) else None
        await updater.update_status(TaskState.TASK_STATE_COMPLETED, message=message, metadata=usage_and_cost(usage))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id, context.context_id
        assert task_id is not None and context_id is not None
        updater = TaskUpdater(event_queue, task_id, context_id)
        run = self._runs.get(task_id)
        if run is not None:
            run.abort.set()
            try:
                await asyncio.wait_for(run.ended.wait(), CANCEL_WAIT)
                return  # the run reported `canceled` (or how else it ended) itself
            except TimeoutError:
                log.warning("A2A task %s: the run did not stop within %ss of its cancel", task_id, CANCEL_WAIT)
        elif self._paused.get(context_id) == task_id:
            await self._decline_all(context)
        await updater.cancel(_message(task_id, context_id, "The task was cancelled."))

    async def _decline_all(self, context: RequestContext) -> None:
        """Cancel an input-required task: decline what waits, so its thread is free."""
        assert context.context_id is not None
        self._paused.pop(context.context_id, None)
        waiting = await self._waiting(context)
        if not waiting:
            return
        input = self._input(
            context.context_id, resume=[ResumeEntry(interrupt_id=i.id, status="cancelled") for i in waiting]
        )
        async for event in self.bridge.run(input, request=context.call_context):
            if isinstance(event, RunErrorEvent):
                log.warning("A2A cancel of a waiting task could not decline it: %s", event.code)
