"""Argument checking against a tool's own JSON schema."""

from __future__ import annotations

from typing import Any

import pytest

from harness.tools.base import ToolError
from harness.tools.registry import default_tools
from harness.tools.schema import check_arguments

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "minimum": 0.5},
        "flag": {"type": "boolean"},
        "items": {
            "type": "array",
            "maxItems": 2,
            "items": {
                "type": "object",
                "properties": {"status": {"type": "string", "enum": ["a", "b"]}},
                "required": ["status"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}


def refused(arguments: Any) -> str:
    with pytest.raises(ToolError) as caught:
        check_arguments("t", SCHEMA, arguments)
    assert caught.value.code == "INVALID_ARGUMENTS"
    assert caught.value.message.startswith("Invalid arguments for t: ")
    return caught.value.message


def test_accepts_and_cleans() -> None:
    cleaned = check_arguments(
        "t", SCHEMA, {"path": "x", "count": 3.0, "ratio": 1, "flag": None, "items": [{"status": "a"}]}
    )
    assert cleaned == {"path": "x", "count": 3, "ratio": 1, "items": [{"status": "a"}]}
    assert type(cleaned["count"]) is int
    assert check_arguments("t", SCHEMA, {"path": "x", "items": ({"status": "b"},)})["items"] == [
        {"status": "b"}
    ]


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ([], "must be a JSON object"),
        ({}, "missing required 'path'"),
        ({"path": None}, "'path' must be a string, not null"),
        ({"path": ""}, "'path' must not be empty"),
        ({"path": 3}, "'path' must be a string, not the number 3"),
        ({"path": "x", "extra": 1}, "unknown 'extra' (accepted: path, count, ratio, flag, items)"),
        ({"path": "x", "count": True}, "'count' must be an integer, not the boolean true"),
        ({"path": "x", "count": 2.5}, "'count' must be a whole number"),
        ({"path": "x", "count": 0}, "'count' must be at least 1"),
        ({"path": "x", "count": 11}, "'count' must be at most 10"),
        ({"path": "x", "ratio": float("nan")}, "'ratio' must be a number"),
        ({"path": "x", "ratio": 0.1}, "'ratio' must be at least 0.5"),
        ({"path": "x", "flag": "yes"}, "'flag' must be true or false"),
        ({"path": "x", "items": "ab"}, "'items' must be a JSON array"),
        ({"path": "x", "items": [{"status": "a"}] * 3}, "at most 2 are allowed"),
        ({"path": "x", "items": [{"status": "c"}]}, "'items[0].status' must be one of 'a', 'b', not 'c'"),
        ({"path": "x", "items": [{}]}, "missing required 'items[0].status'"),
        ({"path": "x", "items": [{"status": "a", "x": 1}]}, "unknown 'items[0].x'"),
    ],
)
def test_refusals_name_the_argument(arguments: Any, fragment: str) -> None:
    assert fragment in refused(arguments)


def test_every_builtin_schema_is_well_formed() -> None:
    for tool in default_tools():
        schema = tool.spec.parameters
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        for name, prop in schema["properties"].items():
            assert prop.get("type") in {"string", "integer", "number", "boolean", "array"}, name
        assert tool.spec.description.strip()
