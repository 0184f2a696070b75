"""Checkpointer construction from URLs and delegation-thread naming."""
