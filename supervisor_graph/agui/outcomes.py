"""How AG-UI runs end: `RunRecord` (what `AGUIAgent.recent_runs` keeps of each run),
`client_error`, the code and message a failed run shows its client, and the events of a
run refused (`refused`) or failed (`failed`), local or remote alike."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from ag_ui.core import BaseEvent, RunErrorEvent

from supervisor_graph.agui.events import RunTranslator
from supervisor_graph.agui.frontend import InputError
from supervisor_graph.agui.interrupts import ResumeError
from supervisor_graph.checkpointers.outages import StorageUnavailableError
from supervisor_graph.declaration.errors import (
    MissingAPIKeyError,
    NothingPendingError,
    PendingApprovalError,
    RemoteNotResumableError,
    ThreadBusyError,
)
from supervisor_graph.nodes.errors import log_failure
from supervisor_graph.nodes.steps.decisions import DecisionError

__all__ = ["STORAGE_UNAVAILABLE_MESSAGE", "RunRecord", "client_error", "failed", "refused", "storage_outage"]

log = logging.getLogger("supervisor_graph.agui")

STORAGE_UNAVAILABLE_MESSAGE = (
    "The server's database is unavailable; nothing more of this run was saved. Try again in a few seconds."
)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """How one AG-UI run ended: `success`, `interrupt`, `cancelled` or `error`."""

    thread_id: str
    run_id: str
    outcome: str
    code: str | None = None


def client_error(exc: BaseException, resuming: bool) -> tuple[str, str]:
    """A code and a message safe to show a client (no stack trace, no provider text)."""
    if storage_outage(exc):
        return "STORAGE_UNAVAILABLE", STORAGE_UNAVAILABLE_MESSAGE
    if isinstance(exc, (ResumeError, InputError)):
        return exc.code, exc.message
    if isinstance(exc, DecisionError):  # e.g. edited args the tool's input schema refuses: its field errors
        return "INVALID_TOOL_APPROVAL", f"{exc}."
    if isinstance(exc, RemoteNotResumableError):
        return exc.code, "This run waits on a remote agent that cannot be resumed; nothing was sent to it."
    if isinstance(exc, ThreadBusyError):
        return "THREAD_BUSY", "Another run is in progress on this thread; try again when it has finished."
    if isinstance(exc, PendingApprovalError):
        return "INTERRUPT_PENDING", "Interrupts are waiting on this thread; answer them with RunAgentInput.resume first."
    if isinstance(exc, NothingPendingError):
        return "INTERRUPT_NOT_PENDING", "Nothing is pending on this thread."
    if isinstance(exc, MissingAPIKeyError):
        return "MODEL_NOT_CONFIGURED", "The agent's model is not configured on the server."
    if resuming and isinstance(exc, ValueError):
        return "INVALID_RESUME_PAYLOAD", "The resume payload does not fit what the paused tool expects; nothing was resumed."
    return "AGENT_ERROR", f"The agent failed ({type(exc).__name__}); the server's log has the details."


def storage_outage(exc: BaseException) -> bool:
    """Whether `exc`, or an error it was raised from (`raise ... from`), is the memory's
    database being unavailable (`StorageUnavailableError`, which the storage layer raises
    for its driver's errors; a driver error from elsewhere, a tool's own database, is
    not the memory's outage)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, StorageUnavailableError):
            return True
        seen.add(id(current))
        current = current.__cause__
    return False


def refused(exc: Exception, resuming: bool, run_id: str, where: str = "") -> RunErrorEvent:
    """The `RUN_ERROR` of a run refused before anything ran (`where`: on which server);
    the log has the agent's own failures, not the client's mistakes."""
    code, message = client_error(exc, resuming)
    if code == "AGENT_ERROR":
        log_failure(log, logging.ERROR, f"AG-UI run %s could not start{where}", exc, run_id)
    return RunErrorEvent(message=message, code=code, timestamp=int(time.time() * 1000))


def failed(translator: RunTranslator, exc: Exception, run_id: str, where: str = "") -> list[BaseEvent]:
    """The events that end a run that failed once started: what it had open closed, then
    `RUN_ERROR`; the details go to the log."""
    log_failure(log, logging.ERROR, f"AG-UI run %s failed{where}", exc, run_id)
    return translator.fail(*client_error(exc, False))
