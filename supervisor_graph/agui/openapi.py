"""The served app's OpenAPI document, made to say what the app really answers.

FastAPI documents a 422 `HTTPValidationError` (a `detail` list) on every route that
validates input, and nothing else. The app answers otherwise (`serving.py`): every
refusal is `{"code": ..., "detail": ...}` (`Refusal`), `detail` a list of issues for a
body that does not validate and a sentence for the rest, with the statuses below. So
`describe_refusals` rewrites the generated document once, on its first request:

- every operation lists the refusals the app can send it: 400 (`HOST_NOT_ALLOWED`, a
  `Content-Length` that is no number), 413 (`BODY_TOO_LARGE`: the `Guard` checks any
  request), 408 (`REQUEST_TIMEOUT`) where there is a body, 401 (`AUTH_REQUIRED` / `AUTH_INVALID` with a token, and `RESOURCE_REQUIRED`
  on the routes that read the user's threads), 403 (`THREAD_FORBIDDEN`) and 404 (a
  thread id holding an encoded `/` reaches no route) on a thread's route, 422
  (`INVALID_REQUEST`, `INVALID_THREAD_ID`) where there is input, 503
  (`STORAGE_UNAVAILABLE`, with `Retry-After`) on the routes that read the database;
- a run's 200 is `text/event-stream`, each event's data an AG-UI event in JSON;
- a discriminated union's tag (a message's `role`) is required, as the app requires it;
- a thread id is described as the app checks it (`serving.thread_id_problem`): length,
  no `/`, no control characters, not `.` or `..`, a thread before any `::`;
- with a token, a bearer security scheme on every operation but the health probes.

schemathesis (`tests/agui/test_schemathesis.py`, all checks) holds the app to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, Field

__all__ = ["Refusal", "ValidationIssue", "describe_refusals", "thread_id_pattern"]


class ValidationIssue(BaseModel):
    """One reason a request body or parameter was refused (FastAPI's, without the input)."""

    type: str = Field(description="What kind of problem, e.g. `missing`, `json_invalid`, `string_type`.")
    loc: list[str | int] = Field(description="Where: `body` and the path into it, or the parameter.")
    msg: str = Field(description="What is wrong, in a sentence.")


class Refusal(BaseModel):
    """The body of every refusal the app sends."""

    code: str = Field(
        description="Machine-readable: INVALID_REQUEST, INVALID_THREAD_ID, BODY_TOO_LARGE, HOST_NOT_ALLOWED, "
        "AUTH_REQUIRED, AUTH_INVALID, RESOURCE_REQUIRED, THREAD_FORBIDDEN, NOT_FOUND, METHOD_NOT_ALLOWED, "
        "REQUEST_TIMEOUT, STORAGE_UNAVAILABLE.",
        examples=["INVALID_THREAD_ID"],
    )
    detail: str | list[ValidationIssue] = Field(
        description="A sentence for the client; for INVALID_REQUEST the list of what did not validate."
    )


# `(?!...)` and `[^...]` read the same in ECMA-262 (OpenAPI's dialect) and Python's `re`
_THREAD_ID_CHARS = r"[^/\x00-\x1f\x7f-\x9f\u2028\u2029]"


def thread_id_pattern() -> str:
    """The thread ids a client may name, as a regular expression (`thread_id_problem`;
    the length is separate)."""
    return rf"^(?!\.\.?$)(?!::){_THREAD_ID_CHARS}+$"


_WHY = {
    "400": "HOST_NOT_ALLOWED: the Host header names a host this server does not answer to; "
    "INVALID_REQUEST: a Content-Length that is not a number.",
    "401": "AUTH_REQUIRED / AUTH_INVALID: no or a wrong bearer token; RESOURCE_REQUIRED: no user for the request.",
    "403": "THREAD_FORBIDDEN: the thread (or its top-level thread) belongs to another user.",
    "404": "NOT_FOUND: no route (a thread id holding '/' is no path segment).",
    "408": "REQUEST_TIMEOUT: the body did not arrive whole within the server's read timeout; the connection is closed.",
    "413": "BODY_TOO_LARGE: the request body is over the server's limit.",
    "422": "INVALID_REQUEST: the body is not JSON or does not validate (detail lists why); "
    "INVALID_THREAD_ID: the thread id has the wrong shape (detail says which).",
    "503": "STORAGE_UNAVAILABLE: the database is unreachable, locked or full; retry after Retry-After seconds.",
}


def _refusal(status: str) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": _WHY[status],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Refusal"}}},
    }
    if status == "401":
        response["headers"] = {"WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}}
    if status == "503":
        response["headers"] = {"Retry-After": {"description": "Seconds", "schema": {"type": "string"}}}
    return response


def _thread_id_schema(schema: dict[str, Any], max_length: int) -> None:
    schema.update(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": max_length,
            "pattern": thread_id_pattern(),
            "description": "A thread id: not empty, at most "
            f"{max_length} characters, no '/' or control characters, not '.' or '..', a thread before any '::'.",
        }
    )


# one server-sent event of a run: its data is one AG-UI event as JSON
_SSE_EVENT = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}},
        }
    },
}


def _require_discriminators(models: dict[str, Any]) -> None:
    """A discriminated union's tag is required in each member (pydantic refuses a member
    without it, `union_tag_not_found`), though the members' own schemas give it a default."""
    found: list[dict[str, Any]] = []
    stack: list[Any] = list(models.values())
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("discriminator"), dict):
                found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    for union in found:
        discriminator = union.pop("discriminator")
        tag = discriminator.get("propertyName")
        for ref in discriminator.get("mapping", {}).values():
            member = models.get(str(ref).rsplit("/", 1)[-1])
            if tag and member is not None and tag not in member.setdefault("required", []):
                member["required"].append(tag)


def _statuses(path: str, operation: dict[str, Any], *, token: bool, public: bool) -> list[str]:
    reads_threads = "threads" in path.split("/")
    statuses = ["400", "413"]
    if (token and not public) or reads_threads:
        statuses.append("401")
    if "{thread_id}" in path:
        statuses += ["403", "404"]
    if "requestBody" in operation:
        statuses.append("408")
    if "requestBody" in operation or operation.get("parameters"):
        statuses.append("422")
    if reads_threads:
        statuses.append("503")
    return statuses


def _describe(schema: dict[str, Any], *, token: bool, public_paths: Iterable[str], max_thread_id_length: int) -> None:
    components = schema.setdefault("components", {})
    models = components.setdefault("schemas", {})
    refusal = Refusal.model_json_schema(ref_template="#/components/schemas/{model}")
    models.update(refusal.pop("$defs", {}))
    models["Refusal"] = refusal
    for unused in ("HTTPValidationError", "ValidationError"):
        models.pop(unused, None)
    _require_discriminators(models)
    if "RunAgentInput" in models:
        _thread_id_schema(models["RunAgentInput"]["properties"]["threadId"], max_thread_id_length)
    if token:
        components.setdefault("securitySchemes", {})["bearer"] = {"type": "http", "scheme": "bearer"}
    public = set(public_paths)
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for status in _statuses(path, operation, token=token, public=path in public):
                responses[status] = _refusal(status)
            if method == "post" and "200" in responses and "content" not in responses["200"]:
                responses["200"]["content"] = {"text/event-stream": {"schema": _SSE_EVENT}}
            operation["responses"] = dict(sorted(responses.items()))
            for parameter in operation.get("parameters", []):
                if parameter.get("name") == "thread_id" and parameter.get("in") == "path":
                    _thread_id_schema(parameter["schema"], max_thread_id_length)
            if token:
                operation["security"] = [] if path in public else [{"bearer": []}]


def describe_refusals(
    app: FastAPI, *, token: bool, public_paths: Iterable[str], max_thread_id_length: int
) -> Callable[[], dict[str, Any]]:
    """Make `app.openapi()` describe the refusals the app sends (module docstring); the
    rewritten document is built once and kept, as FastAPI keeps its own."""
    generate = app.openapi
    public = list(public_paths)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _describe(generate(), token=token, public_paths=public, max_thread_id_length=max_thread_id_length)
        assert app.openapi_schema is not None
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return openapi
