from __future__ import annotations

import pytest

from supervisor_graph.checkpointers.naming import (
    delegation_thread_id,
    split_thread_id,
    stable_namespace,
    subagent_resource_id,
)


@pytest.mark.parametrize(
    ("thread", "ns"),
    [
        ("t1", "research_agent:0a1b"),
        ("user::with::colons", "a:1|b:2"),
        ("weird#id", "per_parent"),
    ],
)
def test_round_trip(thread: str, ns: str) -> None:
    joined = delegation_thread_id(thread, ns)
    assert joined is not None
    assert split_thread_id(joined) == (thread, ns)


def test_plain_threads_are_not_split() -> None:
    assert split_thread_id("t1") == ("t1", "")
    assert split_thread_id("a::not a namespace!") == ("a::not a namespace!", "")
    assert delegation_thread_id(None, "x:1") is None


def test_stable_namespace_and_resources() -> None:
    assert stable_namespace("a:123|b:456") == "a|b"
    assert subagent_resource_id("user-1", "research") == "user-1/research"
    assert subagent_resource_id(None, "research") == "default/research"
