"""The fake OpenAI-compatible server the tests drive models against: the one shipped as
`supervisor_graph.testing.openai_server` (`python -m supervisor_graph.testing.openai_server`)."""

from supervisor_graph.testing.openai_server import USAGE, FakeOpenAI, default_reply

__all__ = ["USAGE", "FakeOpenAI", "default_reply"]
