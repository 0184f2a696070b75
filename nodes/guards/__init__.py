"""Guardrails as the turn applies them (SPEC §30): the verdicts and where they take
effect (`core`), an answer's guards (`answers`), the input/output/tool boundaries and
escalation to a person (`boundaries`), and the streaming window (`stream`). The
guardrails users declare (pii, judges) are built on `core` in `supervisor_graph.guardrails`.

Imports `nodes`' shared modules, scope, observability, steps (budget, decisions) and
`turn`/`delegation` for routing and results; nothing above `nodes`.
"""
