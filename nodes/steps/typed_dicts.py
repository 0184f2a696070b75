"""A `typing.TypedDict` made acceptable to pydantic on Python 3.11 (SPEC §28).

pydantic refuses a `typing.TypedDict` before Python 3.12 ("use
`typing_extensions.TypedDict`"): the 3.11 `typing` version keeps too little about its
keys for it. LangChain takes one as a schema there, so users declare them. Rather than
asking them to change their import, `as_pydantic_typeddict` rebuilds the class (and every
TypedDict its fields name, at any depth) as a `typing_extensions.TypedDict` with the
same name, docstring, field types and required / optional keys, which pydantic validates
and turns into the same JSON schema. Only used once pydantic has refused the original,
so on 3.12+ (and for `typing_extensions` classes) nothing is rebuilt.
"""

from __future__ import annotations

import types
import typing
from typing import Any

import typing_extensions
from typing_extensions import is_typeddict

__all__ = ["as_pydantic_typeddict"]

# the rebuilt class of each declared one: rebuilding twice would give two classes, and
# pydantic would name the nested one twice in `$defs`
_REBUILT: dict[Any, Any] = {}
_KEY_WRAPPERS = {typing.Required, typing.NotRequired, typing_extensions.Required, typing_extensions.NotRequired}


def as_pydantic_typeddict(declared: Any) -> Any:
    """`declared` (a TypedDict class) as a `typing_extensions.TypedDict`, nested TypedDicts
    included; the rebuilt class is cached, so the same class always gives the same one."""
    return _convert(declared, set())


def _convert(annotation: Any, seen: set[int]) -> Any:
    if is_typeddict(annotation):
        return _rebuild(annotation, seen)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is None or not args or origin is typing.Literal or origin is typing_extensions.Literal:
        return annotation
    if origin is typing.Annotated or origin is typing_extensions.Annotated:
        return typing_extensions.Annotated[(_convert(args[0], seen), *annotation.__metadata__)]
    converted = tuple(_convert(arg, seen) for arg in args)
    if converted == args:
        return annotation
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[converted]  # noqa: UP007 - built from a tuple of members
    try:
        return annotation.copy_with(converted) if hasattr(annotation, "copy_with") else origin[converted]
    except TypeError:  # a generic that cannot be rebuilt this way: pydantic gets it as declared
        return annotation


def _rebuild(declared: Any, seen: set[int]) -> Any:
    known = _REBUILT.get(declared)
    if known is not None:
        return known
    if id(declared) in seen:  # a TypedDict that names itself: left as declared (its own error)
        return declared
    seen.add(id(declared))
    try:
        hints = typing_extensions.get_type_hints(declared, include_extras=True)
    except NameError:  # a name only its defining scope knows: as written, for pydantic to resolve
        hints = dict(declared.__annotations__)
    required = set(getattr(declared, "__required_keys__", ()))
    fields: dict[str, Any] = {}
    for name, hint in hints.items():
        # a wrapper decides, else the class's key sets (its `total=`): the 3.11 class works
        # out its key sets before string annotations (`from __future__ import annotations`)
        # are resolved, so they miss every `Required` / `NotRequired` written in one
        is_required = name in required
        while (origin := typing.get_origin(hint)) in _KEY_WRAPPERS:
            is_required = origin in (typing.Required, typing_extensions.Required)
            hint = typing.get_args(hint)[0]
        hint = _convert(hint, seen)
        fields[name] = typing_extensions.Required[hint] if is_required else typing_extensions.NotRequired[hint]
    factory: Any = typing_extensions.TypedDict  # called with a computed name, which type checkers refuse
    rebuilt: Any = factory(declared.__name__, fields)
    rebuilt.__doc__ = declared.__doc__
    rebuilt.__module__ = declared.__module__
    rebuilt.__qualname__ = getattr(declared, "__qualname__", declared.__name__)
    config = getattr(declared, "__pydantic_config__", None)
    if config is not None:
        setattr(rebuilt, "__pydantic_config__", config)  # noqa: B010 - it is no declared attribute
    seen.discard(id(declared))
    _REBUILT[declared] = rebuilt
    return rebuilt
