"""Delegation control (SPEC §6.2-6.7): the hook nodes on a delegation edge, the message
filter, hook-error handling and what the supervisor model sees of a result.

`<key>.start` runs `on_delegation_start`; `<key>.complete` runs `on_delegation_complete`.
The supervisor routes through them only when the run has that hook, so an unset hook
costs no super-step. The message filter runs inside the subagent node (it shapes the
subagent's model context, which is rebuilt whenever that node runs, also on resume).

Each concern has a module of its own; this one gathers their public names, which the
rest of the library imports from here:

- `result`: `DelegationRecord`, `DelegationResult`, `DelegationAbortedError`, `failure_text`
- `hooks`: the hooks' contexts and results, running a hook, recording its failure
- `view`: the parent's conversation as a subagent sees it, `message_filter`, `InheritContext`
- `start`: the `<key>.start` node
- `complete`: the `<key>.complete` node and the supervisor's tool result
- `transcript`: a record filled in from the subagent's last state
- `nodes.scope.context`: the run-identity keys of a request context and its JSON check
"""

from __future__ import annotations

from supervisor_graph.nodes.delegation.complete import (
    abort_delegation,
    complete_hook,
    finish_delegation,
    make_complete_node,
    result_message,
)
from supervisor_graph.nodes.delegation.hooks import (
    DelegationCompleteContext,
    DelegationCompleteResult,
    DelegationStartContext,
    DelegationStartResult,
    HookFailed,
    record_hook_error,
    run_hook,
    validate_hook_result,
)
from supervisor_graph.nodes.delegation.result import (
    DelegationAbortedError,
    DelegationRecord,
    DelegationResult,
    failure_text,
)
from supervisor_graph.nodes.delegation.start import DEFAULT_REJECTION, make_start_node
from supervisor_graph.nodes.delegation.transcript import record_answer, record_transcript
from supervisor_graph.nodes.delegation.view import (
    InheritContext,
    apply_message_filter,
    inherit_bound,
    model_view,
    within,
)
from supervisor_graph.nodes.scope.context import (
    DELEGATION_HOOK_ERRORS,
    RESOURCE_ID_KEY,
    RUN_ID_KEY,
    RUN_IDENTITY_KEYS,
    THREAD_ID_KEY,
    check_json,
)

__all__ = [
    "DEFAULT_REJECTION",
    "DELEGATION_HOOK_ERRORS",
    "RESOURCE_ID_KEY",
    "RUN_IDENTITY_KEYS",
    "RUN_ID_KEY",
    "THREAD_ID_KEY",
    "DelegationCompleteContext",
    "DelegationAbortedError",
    "DelegationCompleteResult",
    "DelegationRecord",
    "DelegationResult",
    "DelegationStartContext",
    "DelegationStartResult",
    "HookFailed",
    "InheritContext",
    "abort_delegation",
    "apply_message_filter",
    "check_json",
    "complete_hook",
    "failure_text",
    "finish_delegation",
    "inherit_bound",
    "make_complete_node",
    "make_start_node",
    "model_view",
    "record_answer",
    "record_hook_error",
    "record_transcript",
    "result_message",
    "run_hook",
    "validate_hook_result",
    "within",
]
