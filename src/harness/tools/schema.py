"""Check a tool's arguments against its own JSON-schema ``parameters``.

The built-in tools validate with the very schema the model is shown, so the two cannot
drift apart. Only the subset the built-ins use is understood: ``type`` (``object``,
``string``, ``integer``, ``number``, ``boolean``, ``array``), ``properties``,
``required``, ``additionalProperties: false``, ``enum``, ``minimum``, ``maximum``,
``minLength``, ``maxLength``, ``maxItems`` and ``items``. An integral float (``5.0``)
counts as an integer (and comes back as ``5``). An optional property given as ``null`` is treated as absent
(models often send that for "not given").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from harness.tools.base import ToolError

__all__ = ["check_arguments"]


def check_arguments(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A plain copy of ``arguments`` (optional nulls dropped) when they fit ``schema``;
    otherwise ``ToolError("INVALID_ARGUMENTS", ...)`` saying which argument and why."""
    checked = _check(schema, arguments, "")
    if problem := checked[1]:
        raise ToolError("INVALID_ARGUMENTS", f"Invalid arguments for {tool}: {problem}")
    value: dict[str, Any] = checked[0]
    return value


def _where(path: str) -> str:
    return f"'{path}'" if path else "the arguments"


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _check(schema: Mapping[str, Any], value: Any, path: str) -> tuple[Any, str | None]:
    """(cleaned value, None) or (None, problem)."""
    kind = schema.get("type")
    if kind == "object":
        return _check_object(schema, value, path)
    if kind == "array":
        return _check_array(schema, value, path)
    problem = _check_scalar(schema, kind, value, path)
    if problem is None and "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(item) for item in schema["enum"])
        problem = f"{_where(path)} must be one of {allowed}, not {value!r}."
    if problem is not None:
        return None, problem
    return (int(value) if kind == "integer" else value), None


def _check_object(schema: Mapping[str, Any], value: Any, path: str) -> tuple[Any, str | None]:
    if not isinstance(value, Mapping):
        return None, f"{_where(path)} must be a JSON object, not {_kind(value)}."
    properties: Mapping[str, Any] = schema.get("properties", {})
    required = list(schema.get("required", []))
    present = {name: item for name, item in value.items() if not (item is None and name not in required)}
    missing = [name for name in required if name not in present]
    if missing:
        names = ", ".join(f"'{_join(path, name)}'" for name in missing)
        return None, f"missing required {names}."
    if schema.get("additionalProperties") is False:
        unknown = sorted(str(name) for name in present if name not in properties)
        if unknown:
            names = ", ".join(f"'{_join(path, name)}'" for name in unknown)
            accepted = ", ".join(properties) or "none"
            return None, f"unknown {names} (accepted: {accepted})."
    cleaned: dict[str, Any] = {}
    for name, item in present.items():
        if name in properties:
            item, problem = _check(properties[name], item, _join(path, name))
            if problem:
                return None, problem
        cleaned[name] = item
    return cleaned, None


def _check_array(schema: Mapping[str, Any], value: Any, path: str) -> tuple[Any, str | None]:
    if not isinstance(value, list | tuple):
        return None, f"{_where(path)} must be a JSON array, not {_kind(value)}."
    limit = schema.get("maxItems")
    if limit is not None and len(value) > limit:
        return None, f"{_where(path)} has {len(value)} items; at most {limit} are allowed."
    items: Mapping[str, Any] | None = schema.get("items")
    cleaned: list[Any] = []
    for index, item in enumerate(value):
        if items is not None:
            item, problem = _check(items, item, f"{path}[{index}]")
            if problem:
                return None, problem
        cleaned.append(item)
    return cleaned, None


def _check_scalar(schema: Mapping[str, Any], kind: Any, value: Any, path: str) -> str | None:
    where = _where(path)
    if kind == "string":
        if not isinstance(value, str):
            return f"{where} must be a string, not {_kind(value)}."
        if len(value) < schema.get("minLength", 0):
            return f"{where} must not be empty." if schema["minLength"] == 1 else f"{where} is too short."
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{where} is {len(value)} characters long; at most {schema['maxLength']} are allowed."
        return None
    if kind == "boolean":
        return None if isinstance(value, bool) else f"{where} must be true or false, not {_kind(value)}."
    if kind in ("integer", "number"):
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if not numeric or not math.isfinite(value):
            return f"{where} must be a{'n integer' if kind == 'integer' else ' number'}, not {_kind(value)}."
        if kind == "integer" and isinstance(value, float) and not value.is_integer():
            return f"{where} must be a whole number, not {value!r}."
        if "minimum" in schema and value < schema["minimum"]:
            return f"{where} must be at least {schema['minimum']}, not {value!r}."
        if "maximum" in schema and value > schema["maximum"]:
            return f"{where} must be at most {schema['maximum']}, not {value!r}."
        return None
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__
