"""The base model every wire type derives from: camelCase aliases and absent-means-omitted."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, get_origin

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticKnownError, core_schema

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler


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

    cursor: str | None = Field(default=None, description="Where to continue: the `nextCursor` of the previous page.")
    limit: int | None = Field(default=None, ge=1, le=1000, description="The most items to return in this page.")


class PublishedAs:
    """``Annotated[dict[str, Any], PublishedAs(Model)]``: JSON from an MCP server passed on as it came, published as
    ``Model``.

    For fields the daemon forwards without rebuilding them (an elicitation form goes to a JSON Schema validator,
    tool annotations are read as a dict): the value stays the JSON it was, nothing dropped or reordered, and the
    schema gives clients its MCP type, which their guard checks. It is not validated here: a form outside MCP's shape
    reaches the client's guard (which answers ``cancel``) rather than failing the server's tool call.
    """

    def __init__(self, model: Any) -> None:
        self.model = model

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        kind: type = list if get_origin(source) is list else dict
        error: Literal["list_type", "dict_type"] = "list_type" if kind is list else "dict_type"

        def keep(value: Any, _as_model: core_schema.ValidatorFunctionWrapHandler) -> Any:
            if not isinstance(value, kind):
                raise PydanticKnownError(error)
            return value

        return core_schema.no_info_wrap_validator_function(
            keep,
            handler.generate_schema(self.model),  # what the published schema shows
            serialization=core_schema.plain_serializer_function_ser_schema(_same, when_used="always"),
        )

def _same(value: Any) -> Any:
    return value
