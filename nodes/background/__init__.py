"""Delegations run as background tasks (SPEC §12): their records in the thread
(`tasks`) and the supervisor's control tools (`control`).

Imports delegation results, steps (working memory) and state; nothing above `nodes`.
"""
