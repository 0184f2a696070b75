"""Output schemas (SPEC §28): what an agent's final answer must look like, normalised from
a pydantic model, a TypedDict or a JSON-schema dict, and how a model is bound to answer
in it: natively (the provider's `response_format` json_schema in strict mode, for
OpenAI-compatible servers; the answer's text is the JSON) or through a `final_answer`
tool whose arguments are the object (every tool-calling model).

The step that checks answers against it is `structured_output.py`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, PydanticUserError, TypeAdapter, ValidationError
from typing_extensions import is_typeddict

from supervisor_graph.nodes.steps.typed_dicts import as_pydantic_typeddict

__all__ = [
    "FINAL_ANSWER_TOOL",
    "OUTPUT_ANSWER_MARK",
    "OUTPUT_RETRY_MARK",
    "Invalid",
    "OutputSchema",
    "StructuredOutputError",
    "final_value",
    "output_schema_of",
    "strict_tool",
    "uses_native",
]

log = logging.getLogger("supervisor_graph")


FINAL_ANSWER_TOOL = "final_answer"
# marks the messages that sent an invalid answer back, so a run counts its retries from
# its own messages (right across a pause and resume, like every per-run figure)
OUTPUT_RETRY_MARK = "supervisor_graph_output_retry"
# marks the answer message the library writes for a `final_answer` call
OUTPUT_ANSWER_MARK = "supervisor_graph_structured_answer"


class StructuredOutputError(Exception):
    """An answer that did not validate against the output schema after every retry."""

    def __init__(self, schema: str, errors: Sequence[Mapping[str, Any]], raw_text: str) -> None:
        self.schema = schema
        self.errors = [dict(e) for e in errors]
        self.raw_text = raw_text
        listed = "; ".join(f"{e.get('loc') or '(root)'}: {e.get('msg')}" for e in self.errors[:5]) or "not JSON"
        super().__init__(f"the answer does not match output schema {schema!r}: {listed}. Raw answer: {raw_text[:500]!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"schema": self.schema, "errors": self.errors, "raw_text": self.raw_text}

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> StructuredOutputError:
        return cls(str(value.get("schema") or ""), value.get("errors") or [], str(value.get("raw_text") or ""))


class Invalid(Exception):
    """Validation errors of one answer (field errors as `{"loc", "msg"}` dicts)."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e['loc'] or '(root)'}: {e['msg']}" for e in errors))


def _loc(path: Sequence[Any]) -> str:
    return ".".join(str(p) for p in path)


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """A declared schema (pydantic model, TypedDict or JSON-schema dict), normalised."""

    name: str
    json_schema: dict[str, Any]
    declared: Any = field(compare=False)
    key: str = field(default="", compare=True)

    # -- validation ------------------------------------------------------------------

    def validate(self, value: Any) -> Any:
        """`value` checked against the schema, as a JSON value; raises `Invalid`."""
        declared = self.declared
        try:
            if isinstance(declared, type) and issubclass(declared, BaseModel):
                return declared.model_validate(value).model_dump(mode="json")
            if is_typeddict(declared):
                adapter = _adapter(declared)
                return adapter.dump_python(adapter.validate_python(value), mode="json")
        except ValidationError as exc:
            raise Invalid([{"loc": _loc(e["loc"]), "msg": e["msg"]} for e in exc.errors()]) from None
        problems = sorted(_validator(self.key, self.json_schema).iter_errors(value), key=lambda e: list(e.absolute_path))
        if problems:
            raise Invalid([{"loc": _loc(e.absolute_path), "msg": e.message} for e in problems])
        return value

    def parse_text(self, text: str) -> Any:
        """The JSON answer in `text` (a fenced block is unwrapped), validated."""
        raw = text.strip()
        if raw.startswith("```"):
            raw = raw.strip("`").removeprefix("json").strip()
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise Invalid([{"loc": "", "msg": f"the answer is not JSON ({exc.msg}); answer with the JSON object only"}]) from None
        return self.validate(value)

    def to_object(self, value: Any) -> Any:
        """What a caller gets for a stored JSON value: a model instance for a pydantic model."""
        declared = self.declared
        if value is not None and isinstance(declared, type) and issubclass(declared, BaseModel):
            return declared.model_validate(value)
        return value

    @staticmethod
    def dumps(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    # -- what the model is given ----------------------------------------------------

    def strict_schema(self) -> dict[str, Any] | None:
        """The schema in OpenAI's strict form, or None when strict mode cannot take it
        (an optional property, an open object)."""
        return _strict(self.json_schema)

    def binding(self, model: Any, schemas: list[Any]) -> tuple[list[Any], dict[str, Any]]:
        """The tool schemas and `bind_tools` arguments with which `model` answers in this
        shape: native structured output where the provider has it (the tools beside it
        made strict, as it wants), else the final answer tool after the others."""
        strict = uses_native(model, self)
        if strict is not None:
            return [strict_tool(s) for s in schemas], {"response_format": self.response_format(strict)}
        return [*schemas, self.tool_schema()], {}

    def response_format(self, strict: dict[str, Any]) -> dict[str, Any]:
        return {"type": "json_schema", "json_schema": {"name": self.name, "schema": strict, "strict": True}}

    def tool_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": FINAL_ANSWER_TOOL,
                "description": (
                    f"Give your final answer as a {self.name} object. Do everything else first (tools, "
                    "delegations): calling this ends your turn, so call it alone."
                ),
                "parameters": _as_parameters(self.json_schema),
            },
        }


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}
_VALIDATORS: dict[str, Any] = {}
_FROM_JSON: dict[str, OutputSchema] = {}


def _adapter(declared: Any) -> TypeAdapter[Any]:
    adapter = _ADAPTERS.get(declared)
    if adapter is None:
        try:
            adapter = TypeAdapter(declared)
        except PydanticUserError as exc:
            if exc.code != "typed-dict-version":
                raise
            # a `typing.TypedDict` on Python < 3.12, which LangChain takes: validated as its
            # `typing_extensions` twin, with the same fields and JSON schema
            adapter = TypeAdapter(as_pydantic_typeddict(declared))
        _ADAPTERS[declared] = adapter
    return adapter


def _validator(key: str, schema: dict[str, Any]) -> Any:
    validator = _VALIDATORS.get(key)
    if validator is None:
        from jsonschema import Draft202012Validator

        validator = _VALIDATORS[key] = Draft202012Validator(schema)
    return validator


def _as_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """Tool parameters must be an object: any other schema is wrapped in `{"value": ...}`
    (unwrapped again by `final_value`)."""
    if schema.get("type") == "object" or "properties" in schema:
        return schema
    return {"type": "object", "properties": {"value": schema}, "required": ["value"]}


def final_value(schema: OutputSchema, args: Mapping[str, Any]) -> Any:
    wrapped = _as_parameters(schema.json_schema) is not schema.json_schema
    return args.get("value") if wrapped else dict(args)


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        items = [_strict(n) for n in node]
        return None if any(i is None and n is not None for i, n in zip(items, node, strict=True)) else items
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k in ("properties", "$defs", "definitions") and isinstance(v, dict):
            inner = {name: _strict(sub) for name, sub in v.items()}
            if any(sub is None for sub in inner.values()):
                return None
            out[k] = inner
        elif k in ("items", "anyOf", "allOf", "oneOf", "additionalProperties") and isinstance(v, dict | list):
            inner_v = _strict(v)
            if inner_v is None:
                return None
            out[k] = inner_v
        else:
            out[k] = v
    if out.get("type") == "object" or "properties" in out:
        props = out.get("properties") or {}
        if set(out.get("required") or ()) != set(props) or out.get("additionalProperties") not in (None, False):
            return None
        out["additionalProperties"] = False
    return out


def strict_tool(tool: Any) -> Any:
    """A tool given as an OpenAI tool dict in strict form: native structured output makes
    the provider require strict tools (optional arguments become required and nullable,
    which the argument models read as not given). Tool objects are left to the provider's
    own formatting."""
    if not isinstance(tool, dict) or tool.get("type") != "function":
        return tool
    function = tool["function"]
    return {**tool, "function": {**function, "strict": True, "parameters": _strictify(function.get("parameters") or {})}}


def _strictify(node: Any) -> Any:
    if isinstance(node, list):
        return [_strictify(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strictify(v) if k in ("items", "anyOf", "oneOf", "allOf", "$defs", "definitions") else v for k, v in node.items()}
    for k in ("$defs", "definitions"):
        if isinstance(node.get(k), dict):
            out[k] = {name: _strictify(sub) for name, sub in node[k].items()}
    if out.get("type") == "object" or "properties" in out:
        props = out.get("properties") or {}
        required = set(out.get("required") or ())
        out["properties"] = {
            name: _strictify(sub) if name in required else {"anyOf": [_strictify(sub), {"type": "null"}]}
            for name, sub in props.items()
        }
        out["required"] = list(props)
        out["additionalProperties"] = False
    return out


def output_schema_of(value: Any, where: str = "output_schema") -> OutputSchema | None:
    """`value` (a pydantic model class, a TypedDict, a JSON-schema dict or an
    `OutputSchema`) normalised; None for None. Anything else is refused by name."""
    if value is None or isinstance(value, OutputSchema):
        return value
    if isinstance(value, type) and issubclass(value, BaseModel):
        return OutputSchema(value.__name__, value.model_json_schema(), value, key=f"py:{value.__module__}.{value.__qualname__}:{id(value)}")
    if is_typeddict(value):
        name = getattr(value, "__name__", "Output")
        return OutputSchema(name, _adapter(value).json_schema(), value, key=f"td:{name}:{id(value)}")
    if isinstance(value, Mapping):
        return _from_json_schema(dict(value), where)
    raise ValueError(
        f"{where} must be a pydantic model class, a TypedDict or a JSON-schema dict, not "
        f"{type(value).__name__} ({value!r:.80}); for a list of items, wrap it: "
        '{"type": "object", "properties": {"items": {"type": "array", ...}}}'
    )


def _from_json_schema(schema: dict[str, Any], where: str) -> OutputSchema:
    key = "json:" + json.dumps(schema, sort_keys=True, default=str)
    known = _FROM_JSON.get(key)
    if known is not None:
        return known
    if not any(k in schema for k in ("type", "properties", "anyOf", "oneOf", "allOf", "$ref", "enum", "const")):
        raise ValueError(
            f"{where}: {schema!r:.120} is not a JSON schema (no 'type', 'properties', 'anyOf', ...); "
            'give e.g. {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}'
        )
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"{where} is not a valid JSON schema: {exc.message}") from None
    name = str(schema.get("title") or "Output")
    name = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in name)[:64] or "Output"
    out = OutputSchema(name, schema, schema, key=key)
    if len(_FROM_JSON) > 256:
        _FROM_JSON.clear()
    _FROM_JSON[key] = out
    return out


_NATIVE_TYPES = ("ChatOpenAI", "AzureChatOpenAI", "OpenAIChatModel")
_warned: set[str] = set()


def uses_native(model: Any, schema: OutputSchema) -> dict[str, Any] | None:
    """The strict schema when `model` takes native structured output for `schema`, else
    None (the final answer tool). OpenAI-compatible clients have it, and a model whose
    `native_structured_output` says so (the scripted test model); a schema strict mode
    cannot take falls back to the tool, with one warning."""
    native = getattr(model, "native_structured_output", None)
    if native is None:
        native = any(cls.__name__ in _NATIVE_TYPES for cls in type(model).__mro__)
    if not native:
        return None
    strict = schema.strict_schema()
    if strict is None and schema.key not in _warned:
        _warned.add(schema.key)
        log.warning(
            "output schema %r cannot be used in the provider's strict mode (every property must be required and "
            "objects closed); using the final_answer tool instead",
            schema.name,
        )
    return strict
