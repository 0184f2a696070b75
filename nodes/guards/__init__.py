"""Guardrails, their one home (SPEC §30): the protocol, contexts and verdicts (`core`);
where the verdicts take effect: an answer's guards (`answers`), the input/output/tool
boundaries and escalation to a person (`boundaries`), the guards' step around a tool
call (`step`), the streaming window (`stream`);
and the built-in guards: `pii` (`pii`, its deterministic detectors in `detectors`,
presidio as an optional engine in `presidio`, imported only when asked for) and the
judge that asks a model (`judges`). Users import them from `supervisor_graph.guardrails`,
which re-exports them and reads the judges' model strings.

Imports `nodes`' shared modules, scope, observability, steps (budget, decisions) and
`turn`/`delegation` for routing and results; nothing above `nodes`.
"""
