"""Hostile request bodies for the JSON-RPC endpoints (`/mcp`, `/a2a`), and what an answer
to one must never hold: the words of a Python exception."""

from __future__ import annotations

from typing import Any

__all__ = ["BODIES", "PYTHON_WORDS", "python_words_in"]

_CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'

# name -> (body, the JSON-RPC error codes it may get)
BODIES: dict[str, tuple[bytes, set[int]]] = {
    "nested arrays 10,000 deep": (b"[" * 10_000 + b"]" * 10_000, {-32700}),
    "nested objects 10,000 deep": (b'{"a":' * 10_000 + b"1" + b"}" * 10_000, {-32700}),
    "params nested 10,000 deep": (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":' + b"[" * 10_000 + b"]" * 10_000 + b"}}",
        {-32700},
    ),
    "params nested 100 deep": (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":' + b"[" * 100 + b"]" * 100 + b"}}",
        {-32700},
    ),
    "invalid UTF-8": (b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}', {-32700}),
    "UTF-16": ('{"jsonrpc":"2.0","id":1,"method":"tools/list"}'.encode("utf-16"), {-32700}),
    "a lone surrogate escape": (b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"t":"\\ud800"}}', {-32700}),
    "empty": (b"", {-32700}),
    "blank": (b"  \n ", {-32700}),
    "truncated": (_CALL[:-3], {-32700}),
    "not JSON": (b"hello", {-32700}),
    "a 5,000-digit number": (b'{"jsonrpc":"2.0","id":' + b"9" * 5_000 + b',"method":"tools/list"}', {-32700}),
    "1e999999": (b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1e999999}}', {-32700}),
    "NaN": (b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":NaN}}', {-32700}),
    "an array (batch)": (b"[" + _CALL + b"]", {-32600}),
    "an empty array": (b"[]", {-32600}),
    "a string": (b'"tools/list"', {-32600}),
    "a number": (b"42", {-32600}),
    "null": (b"null", {-32600}),
    "true": (b"true", {-32600}),
    "an empty object": (b"{}", {-32600}),
    "jsonrpc 1.0": (b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}', {-32600}),
    "jsonrpc a number": (b'{"jsonrpc":2,"id":1,"method":"tools/list"}', {-32600}),
    "method a number": (b'{"jsonrpc":"2.0","id":1,"method":5}', {-32600}),
    "method empty": (b'{"jsonrpc":"2.0","id":1,"method":""}', {-32600}),
    "id an object": (b'{"jsonrpc":"2.0","id":{},"method":"tools/list"}', {-32600}),
    "id a boolean": (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', {-32600}),
    "id a fraction": (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', {-32600}),
    "params a string": (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":"x"}', {-32600}),
    "params a number": (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":3}', {-32600}),
    "params an array": (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}', {-32602}),
}

# what the SDKs used to answer with: Python's and its libraries' words
PYTHON_WORDS = (
    "traceback",
    "recursion",
    "codec",
    "decode byte",
    "exceeds the limit",
    "int_max_str_digits",
    "expecting value",
    "expecting property name",
    "(char ",
    "validation error",
    "errors.pydantic.dev",
    "input_value=",
    "object has no attribute",
    "not subscriptable",
    "keyerror",
    "typeerror",
    "valueerror",
    'file "',
    "invalid literal for",
    "error executing tool",
)


def python_words_in(answer: Any) -> list[str]:
    """The words of `PYTHON_WORDS` that the text of an answer holds."""
    text = str(answer).lower()
    return [word for word in PYTHON_WORDS if word in text]
