"""A `typing.TypedDict` as an output schema (SPEC §28, issue 47 item 5).

pydantic refuses `typing.TypedDict` before Python 3.12; LangChain takes it, so the
library must too. The same schema is declared twice, once with `typing` and once with
`typing_extensions` (which pydantic always takes): both must give the model the same
JSON schema and validate answers alike. On 3.12+ pydantic takes the `typing` one itself
and these tests check that nothing is lost on that path either.
"""

from __future__ import annotations

import json
import sys
import typing
from typing import Any

import pytest
import typing_extensions
from langchain_core.messages import ToolMessage
from pydantic import PydanticUserError, TypeAdapter

from supervisor_graph import Agent
from supervisor_graph.nodes.steps.structured_output import FINAL_ANSWER_TOOL, output_schema_of
from supervisor_graph.nodes.steps.typed_dicts import as_pydantic_typeddict
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


class Place(typing.TypedDict):
    """Where it happened."""

    city: str
    country: typing.NotRequired[str]


class Event(typing.TypedDict, total=False):
    """One event, as the model reports it."""

    title: typing.Required[str]
    year: int
    places: list[Place]
    main: Place | None
    rank: typing.Annotated[int, "a note pydantic keeps out of the schema"]


class PlaceX(typing_extensions.TypedDict):
    """Where it happened."""

    city: str
    country: typing_extensions.NotRequired[str]


class EventX(typing_extensions.TypedDict, total=False):
    """One event, as the model reports it."""

    title: typing_extensions.Required[str]
    year: int
    places: list[PlaceX]
    main: PlaceX | None
    rank: typing_extensions.Annotated[int, "a note pydantic keeps out of the schema"]


def _renamed(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True).replace("PlaceX", "Place").replace("EventX", "Event")


def test_pydantic_refuses_the_typing_class_on_this_python_and_the_library_does_not() -> None:
    if sys.version_info < (3, 12):
        with pytest.raises(PydanticUserError, match="typing_extensions.TypedDict"):
            TypeAdapter(Event)  # the failure the library works around: it must still be there
    schema = output_schema_of(Event)
    assert schema is not None and schema.name == "Event"
    assert _renamed(schema.json_schema) == _renamed(TypeAdapter(EventX).json_schema())
    assert schema.json_schema["required"] == ["title"]  # total=False, title Required
    assert schema.json_schema["description"] == "One event, as the model reports it."
    assert schema.json_schema["$defs"]["Place"]["required"] == ["city"]


def test_the_rebuilt_class_keeps_the_keys_and_is_built_once() -> None:
    rebuilt = as_pydantic_typeddict(Event)
    assert rebuilt is as_pydantic_typeddict(Event)
    assert rebuilt.__name__ == "Event" and rebuilt.__doc__ == Event.__doc__
    # this module's annotations are strings, which the declared class's own key sets miss
    # (it works them out before reading them); the rebuilt class has the real ones
    assert rebuilt.__required_keys__ == frozenset({"title"})
    assert rebuilt.__optional_keys__ == frozenset({"year", "places", "main", "rank"})
    place = typing.get_args(typing.get_type_hints(rebuilt)["places"])[0]
    assert place is as_pydantic_typeddict(Place) and place.__required_keys__ == frozenset({"city"})
    assert place.__optional_keys__ == frozenset({"country"})


def test_answers_are_validated_with_field_errors() -> None:
    schema = output_schema_of(Event)
    assert schema is not None
    good = {"title": "Moon landing", "year": 1969, "places": [{"city": "Houston"}], "main": None}
    assert schema.validate(good) == good
    with pytest.raises(Exception, match="places.0.city") as bad:
        schema.validate({"title": "x", "places": [{"country": "US"}]})
    assert "Field required" in str(bad.value)
    with pytest.raises(Exception, match="title"):
        schema.validate({"year": 1969})


async def test_an_agent_answers_a_typing_typeddict_as_a_dict_in_generate_and_in_the_object_stream() -> None:
    answer = {"title": "Moon landing", "year": 1969, "places": [{"city": "Houston", "country": "US"}]}
    model = ScriptedChatModel(responses=[tool_call(FINAL_ANSWER_TOOL, answer)])
    result = await Agent(id="historian", model=model, output_schema=Event).generate("When?")
    assert result.finish_reason == "stop" and result.object == answer and json.loads(result.text) == answer
    sent = model.call_tools[0][-1]["function"]
    assert sent["name"] == FINAL_ANSWER_TOOL and sent["parameters"]["required"] == ["title"]

    native = ScriptedChatModel(responses=[json.dumps(answer)], native_structured_output=True)
    stream = await Agent(id="historian", model=native, output_schema=Event).stream("When?")
    partials = [o async for o in stream.object_stream]
    result = await stream.result()
    assert len(partials) > 2 and all(isinstance(p, dict) for p in partials)
    assert partials[-1] == result.object == answer


async def test_a_wrong_answer_goes_back_to_the_model_with_the_field_named() -> None:
    model = ScriptedChatModel(
        responses=[tool_call(FINAL_ANSWER_TOOL, {"year": 1969}), tool_call(FINAL_ANSWER_TOOL, {"title": "Moon"})]
    )
    result = await Agent(id="historian", model=model, output_schema=Event).generate("When?")
    assert result.object == {"title": "Moon"}
    retry = next(m for m in model.calls[1] if isinstance(m, ToolMessage))
    assert "title" in str(retry.content)


async def test_a_subagent_and_a_start_hook_take_a_typing_typeddict() -> None:
    seen: list[Any] = []
    research = Agent(
        id="research-agent",
        description="Finds places.",
        model=ScriptedChatModel(responses=[tool_call(FINAL_ANSWER_TOOL, {"city": "Paris"})]),
    )
    model = ScriptedChatModel(responses=[delegate("research", "where?"), "done"])
    boss = Agent(
        id="boss",
        model=model,
        agents={"research": research},
        default_options={
            "delegation": {
                "on_delegation_start": lambda ctx: {"modified_output_schema": Place},
                "on_delegation_complete": lambda ctx: seen.append(ctx.result.object),
            }
        },
    )
    result = await boss.generate("go")
    assert seen == [{"city": "Paris"}] and result.delegations[0].object == {"city": "Paris"}


def test_a_class_with_evaluated_annotations_keeps_its_own_key_sets() -> None:
    # the functional form: its annotations are objects, never strings
    point = typing.TypedDict("Point", {"x": int, "y": typing.NotRequired[int], "label": str | None})  # type: ignore[misc]  # noqa: UP013
    schema = output_schema_of(point)
    assert schema is not None and schema.json_schema["required"] == ["x", "label"]
    assert schema.validate({"x": 1, "label": None}) == {"x": 1, "label": None}
    with pytest.raises(Exception, match="x"):
        schema.validate({"y": 2, "label": "a"})


class Trip(typing_extensions.TypedDict):
    """A typing_extensions class naming a typing one: pydantic refuses the nested class."""

    to: Place


def test_a_typing_typeddict_nested_in_a_typing_extensions_one() -> None:
    schema = output_schema_of(Trip)
    assert schema is not None and schema.json_schema["$defs"]["Place"]["required"] == ["city"]
    assert schema.validate({"to": {"city": "Oslo"}}) == {"to": {"city": "Oslo"}}
