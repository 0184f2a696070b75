"""The message reducer keeps `add_messages` semantics with a fast path for appends."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from supervisor_graph.nodes.state import _add_message_batches


def test_appends_assign_ids_and_keep_order() -> None:
    current = [HumanMessage("a", id="1")]
    out = _add_message_batches(current, [[AIMessage("b")], HumanMessage("c")])
    assert [m.content for m in out] == ["a", "b", "c"] and all(m.id for m in out)
    assert current == [HumanMessage("a", id="1")]  # the input list is not changed


def test_same_results_as_add_messages_for_replacements_and_removals() -> None:
    base = [HumanMessage("a", id="1"), AIMessage("b", id="2"), HumanMessage("c", id="3")]
    cases = [
        [[AIMessage("b2", id="2")]],
        [[RemoveMessage(id="1")], [HumanMessage("d", id="4")]],
        [[HumanMessage("x", id="5"), HumanMessage("x2", id="5")]],
        [[RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("fresh", id="9")]],
        [[("user", "tuple message")]],
    ]
    for batches in cases:
        expected = base
        for batch in batches:
            expected = add_messages(expected, batch)
        got = _add_message_batches(list(base), batches)
        assert [m.content for m in got] == [m.content for m in expected]
        generated = any(isinstance(m, tuple) for batch in batches for m in batch)  # ids made up on the way
        if not generated:
            assert [m.id for m in got] == [m.id for m in expected]


def test_messages_stored_as_field_dicts_keep_their_fields() -> None:
    """LangGraph API servers read checkpoints back as plain dicts; replayed through the
    reducer they stay whole messages (usage included), not `additional_kwargs`."""
    from langchain_core.messages import AIMessage, HumanMessage

    from supervisor_graph.nodes.state import _add_message_batches

    ai = AIMessage("hi", id="a1", usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3})
    merged = _add_message_batches([HumanMessage("x", id="h1").model_dump()], [[ai.model_dump()]])
    assert [type(m).__name__ for m in merged] == ["HumanMessage", "AIMessage"]
    assert merged[1].usage_metadata == ai.usage_metadata and merged[1].additional_kwargs == {}


def test_a_field_dict_after_a_merged_prefix_is_still_turned_back_into_a_message() -> None:
    """The dict check reads only what was added since the reducer's last merge of the
    conversation: a dict there is still found."""
    merged = _add_message_batches([], [[HumanMessage("x", id="p1"), AIMessage("y", id="p2")]])
    merged = _add_message_batches(merged, [[HumanMessage("z", id="p3")]])  # the merge the cache knows
    grown = [*merged, AIMessage("w", id="p4", usage_metadata={"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}).model_dump()]
    out = _add_message_batches(grown, [[HumanMessage("v", id="p5")]])
    assert [type(m).__name__ for m in out] == ["HumanMessage", "AIMessage", "HumanMessage", "AIMessage", "HumanMessage"]
    assert out[3].usage_metadata == {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}


def test_a_replay_of_what_the_reducer_merged_gives_it_back_without_reading_every_id(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The history cache folds last turn's writes onto the value it loaded then: the
    result is the conversation the reducer already merged, found by one list comparison."""
    import supervisor_graph.nodes.state as state

    first = [HumanMessage("a", id="r1"), AIMessage("b", id="r2")]
    loaded = _add_message_batches([], [first])
    writes = [[HumanMessage("c", id="r3")], [AIMessage("d", id="r4")]]
    merged = loaded
    for batch in writes:
        merged = _add_message_batches(merged, [batch])
    monkeypatch.setattr(state, "_ids_of", lambda *a: (_ for _ in ()).throw(AssertionError("read every id")))
    replayed = _add_message_batches(list(loaded), writes)
    assert replayed == merged and replayed is not merged
    # a replay that differs from what was merged takes the full path
    monkeypatch.undo()
    other = _add_message_batches(list(loaded), [[HumanMessage("c2", id="r5")]])
    assert [m.id for m in other] == ["r1", "r2", "r5"]
    again = _add_message_batches(list(loaded), [[AIMessage("d2", id="r2")]])  # a replacement by id
    assert [m.content for m in again] == ["a", "d2"]
