"""What a node knows of the run it belongs to: the request context and cancellation
handles (`context`), how a node finds its run's options and handle (`lookup`), and
which stored version of a subagent is in force (`versions`).

Imports options, spec and steps (budget); nothing above `nodes`.
"""
