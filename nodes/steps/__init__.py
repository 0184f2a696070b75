"""Capabilities a turn can take on, one module each with its own state keys: budgets,
compaction (and the token counts it needs), structured output, working memory,
decisions on approvals, usage accounting.

Imports `nodes`' shared modules, guards, observability, and `turn`/`delegation` for
the routing and result types some steps touch; nothing above `nodes`.
"""
