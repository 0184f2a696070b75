"""Runnable examples. `research_write` is the research-and-write supervisor that
`supervisor-graph demo` runs and `langgraph.json` serves to LangGraph Studio.

An example imports anything a user would (the public names, `testing`); nothing imports it."""
