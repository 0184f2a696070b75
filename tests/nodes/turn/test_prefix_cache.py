"""The per-conversation caches give what a pass over the whole list would give."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from supervisor_graph.nodes.delegation.view import _view, model_view
from supervisor_graph.nodes.state import _add_message_batches
from supervisor_graph.nodes.turn.prefix_cache import PrefixCache
from supervisor_graph.nodes.turn.turn import _in_call_order, model_input


def _turn(i: int) -> list:
    call = AIMessage(content="", id=f"a{i}", tool_calls=[{"name": "t", "args": {}, "id": f"c{i}x"}, {"name": "t", "args": {}, "id": f"c{i}y"}])
    return [
        HumanMessage(content=f"q{i}", id=f"h{i}"),
        call,
        ToolMessage(content="y", tool_call_id=f"c{i}y", id=f"ty{i}"),
        ToolMessage(content="x", tool_call_id=f"c{i}x", id=f"tx{i}"),
        AIMessage(content=f"answer {i}", id=f"f{i}"),
    ]


def test_a_cached_prefix_is_used_only_while_the_same_messages_start_the_list() -> None:
    cache: PrefixCache[str] = PrefixCache(size=2)
    a = [HumanMessage(content="1"), HumanMessage(content="2")]
    cache.put(a, 2, "two")
    assert cache.get([*a, HumanMessage(content="3")]) == (2, "two")
    assert cache.get(a[:1]) is None  # shorter than what was cached
    assert cache.get([a[0], HumanMessage(content="other")]) is None  # a different branch
    for _ in range(3):
        cache.put([HumanMessage(content="x")], 1, "x")
    assert cache.get(a) is None  # the oldest conversation was dropped


def test_model_input_and_view_match_a_full_pass_as_the_conversation_grows_and_forks() -> None:
    messages: list = []
    for i in range(4):
        messages = [*messages, *_turn(i)]
        for end in range(1, len(messages) + 1):  # every prefix, including mid-turn ones
            part = messages[:end]
            assert model_input("sys", [], part).to_messages()[1:] == _in_call_order(part, 0)
            assert model_view(part) == _view(part)
    # a fork whose last turn's results differ: nothing cached from the other branch leaks in
    fork = [*messages[:-3], ToolMessage(content="x2", tool_call_id="c3x", id="other"), AIMessage(content="b", id="b")]
    assert model_input("", [], fork).to_messages() == _in_call_order(fork, 0)
    assert model_view(fork) == _view(fork)


def test_the_reducer_spots_a_replacement_after_the_cache_has_seen_the_list() -> None:
    base = _add_message_batches([], [_turn(0)])
    grown = _add_message_batches(base, [[HumanMessage(content="more", id="m")]])
    assert [m.id for m in grown][-1] == "m"
    # an existing id replaces its message instead of appending a duplicate
    replaced = _add_message_batches(grown, [[HumanMessage(content="edited", id="h0")]])
    assert len(replaced) == len(grown) and replaced[0].content == "edited"
    # a branch from the earlier list still appends
    branch = _add_message_batches(base, [[HumanMessage(content="alt", id="alt")]])
    assert [m.id for m in branch] == [*(m.id for m in base), "alt"]


def test_covering_finds_a_longer_stored_conversation_that_starts_with_the_messages() -> None:
    cache: PrefixCache[str] = PrefixCache()
    a, b, c = object(), object(), object()
    cache.put([a, b, c], 3, "abc")
    assert cache.covering([a, b]) == ([a, b, c], "abc")
    assert cache.covering([a, b, c]) is None  # not longer: `get` answers that
    assert cache.covering([a, c]) is None and cache.covering([]) is None
