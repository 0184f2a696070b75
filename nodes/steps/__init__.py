"""Capabilities a turn can take on, as steps (`protocol.py`), one module each with its own
state keys: budgets,
compaction (and the token counts it needs), structured output (and the output schema's
forms: `output_schema.py`), working memory,
decisions on approvals, usage accounting, prompt caching.

Imports `nodes`' shared modules, guards, observability, and `turn`/`delegation` for
the routing and result types some steps touch; nothing above `nodes`.
"""
