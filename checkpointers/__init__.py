"""Checkpointers and stores built from URLs (memory, sqlite, Postgres), thread leases,
delegation-thread naming and listing, and the history cache.

The bottom of the house: imports only LangGraph and the database drivers."""
