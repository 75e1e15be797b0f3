"""The base model every wire type derives from: camelCase aliases and absent-means-omitted."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """Strict input (unknown fields rejected), camelCase on the wire.

    Optional fields left at ``None`` are omitted when serialized; required nullable fields
    (``threadId: null``) are kept, because clients rely on their presence.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        extra="forbid",
        defer_build=True,
    )

    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name, field in type(self).model_fields.items():
            if not field.is_required() and getattr(self, name) is None:
                data.pop(field.alias or name, None)
        return data


class OpenModel(WireModel):
    """A model for objects that come from MCP servers: unknown fields are kept, not rejected."""

    model_config = ConfigDict(extra="allow")


class Empty(WireModel):
    """Params or result with no fields (``{}``)."""


class PageParams(WireModel):
    """Cursor paging shared by list methods; cursors are opaque to clients."""

    cursor: str | None = None
    limit: int | None = Field(default=None, ge=1, le=1000)
