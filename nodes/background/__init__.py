"""Delegations run as background tasks (SPEC §12): their records in the thread
(`tasks`) and the supervisor's control tools (`control`). Launching one is a way to run
a delegation (`nodes.delegation.in_background`).

Imports delegation results, steps (working memory) and state; nothing above `nodes`.
"""
