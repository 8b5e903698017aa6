"""A pydantic value is rendered by its fields' aliases — the names its schema gives them, and so the names a typed
answer was asked for and an endpoint's client validates against (the OpenAI endpoint's content, AG-UI's result)."""

from __future__ import annotations

import json
from typing import Any

import pydantic

from agentactors.tools.results import render_result


class Meeting(pydantic.BaseModel):
    day_of: int = pydantic.Field(alias="dayOf")
    room: str


class Plan(pydantic.BaseModel):
    first: Meeting
    all_of: list[Meeting] = pydantic.Field(alias="allOf")


def test_a_pydantic_value_is_rendered_by_the_names_its_schema_gives_its_fields() -> None:
    plan = Plan(first=Meeting(dayOf=3, room="A"), allOf=[Meeting(dayOf=4, room="B")])
    rendered = json.loads(render_result(plan))
    assert rendered == {"first": {"dayOf": 3, "room": "A"}, "allOf": [{"dayOf": 4, "room": "B"}]}
    assert set(rendered) == set(Plan.model_json_schema(by_alias=True)["properties"])


def test_a_model_dump_that_takes_no_by_alias_is_still_rendered() -> None:
    class Other:
        def model_dump(self, mode: str) -> Any:
            return {"mode": mode}

    assert json.loads(render_result(Other())) == {"mode": "json"}
