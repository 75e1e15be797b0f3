"""The base model every wire type derives from: camelCase aliases and absent-means-omitted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


def _is_none(value: Any) -> bool:
    return value is None


class WireModel(BaseModel):
    """Strict input (unknown fields rejected), camelCase on the wire.

    Optional fields left at ``None`` are omitted when serialized; required nullable fields
    (``threadId: null``) are kept, because clients rely on their presence. The omission is a
    per-field ``exclude_if`` set before the (deferred) schema build, so it runs inside pydantic-core.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        extra="forbid",
        defer_build=True,
    )

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        for field in cls.model_fields.values():
            if not field.is_required() and field.default is None:
                field.exclude_if = _is_none


def required_in_schema(*aliases: str) -> Callable[[dict[str, Any]], None]:
    """A ``json_schema_extra`` publishing string fields as required and non-empty.

    The model itself accepts their absence so that the daemon answers it with its own typed reason (a missing
    ``threadId`` is ``threadRequired``, not ``invalidParams``); clients must still send them.
    """

    def publish(schema: dict[str, Any]) -> None:
        properties = schema["properties"]
        for alias in aliases:
            properties[alias] = {"type": "string", "minLength": 1}
        wanted = {*schema.get("required", []), *aliases}
        schema["required"] = [name for name in properties if name in wanted]

    return publish


class OpenModel(WireModel):
    """A model for objects that come from MCP servers: unknown fields are kept, not rejected."""

    model_config = ConfigDict(extra="allow")


class Empty(WireModel):
    """Params or result with no fields (``{}``)."""


class PageParams(WireModel):
    """Cursor paging shared by list methods; cursors are opaque to clients."""

    cursor: str | None = None
    limit: int | None = Field(default=None, ge=1, le=1000)
