"""A small JSON-schema subset for checking LLM answers.

Every answer from a model is parsed against the schema of its task before
anything is written (architecture §13). Only what the task schemas use is supported:
``type`` (object, array, string, number, integer, boolean, null, or a list of
them), ``properties``, ``required``, ``additionalProperties: false``,
``items``, ``enum``, ``minLength``, ``maxLength``, ``maxItems``, ``minimum``
and ``maximum``. An error names the path of the bad value ("$.fact_claims[2].predicate").
"""

from __future__ import annotations

from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
    "integer": (int,), "number": (int, float), "null": (type(None),),
}


class SchemaError(ValueError):
    """An answer does not match its schema; ``path`` says where."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path


def _type_ok(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    return isinstance(value, _TYPES[name])


def validate(value: Any, schema: dict, path: str = "$") -> Any:
    """Raise :class:`SchemaError` unless ``value`` matches ``schema``; return ``value``."""
    kinds = schema.get("type")
    if kinds is not None:
        names = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_type_ok(value, name) for name in names):
            raise SchemaError(path, f"expected {' or '.join(names)}, got {type(value).__name__}")
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaError(path, f"{value!r} is not one of {', '.join(map(repr, schema['enum']))}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            raise SchemaError(path, f"shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise SchemaError(path, f"longer than {schema['maxLength']} characters")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise SchemaError(path, f"{value} is below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise SchemaError(path, f"{value} is above {schema['maximum']}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                raise SchemaError(f"{path}.{key}", "missing")
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(properties))
            if extra:
                raise SchemaError(f"{path}.{extra[0]}", "not allowed here")
        for key, sub in properties.items():
            if key in value:
                validate(value[key], sub, f"{path}.{key}")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise SchemaError(path, f"more than {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                validate(item, schema["items"], f"{path}[{i}]")
    return value
