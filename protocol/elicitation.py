"""Server-originated elicitation (SPEC §7): the one server→client request, its form schema and its resolution event.

The form schema is MCP's: a flat object whose properties are primitive schema definitions (text, number, boolean,
single or multiple choice), so a host can render it as a form without interpreting arbitrary JSON Schema. Each
definition keeps keywords a server adds beyond those (``OpenModel``). The daemon passes the form on as the server sent
it (and judges answers with a JSON Schema validator); a client's guard checks it against this type.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from typing_extensions import TypeAliasType

from protocol.base import OpenModel, PublishedAs, WireModel

ElicitationAction = Literal["accept", "decline", "cancel"]

_TITLE = "A label for the field."
_DESCRIPTION = "Help text for the field."


class StringSchema(OpenModel):
    """A free-text field."""

    type: Literal["string"] = Field(description="Always `string`.")
    title: str | None = Field(default=None, description=_TITLE)
    description: str | None = Field(default=None, description=_DESCRIPTION)
    min_length: int | None = Field(default=None, description="The fewest characters accepted.")
    max_length: int | None = Field(default=None, description="The most characters accepted.")
    format: Literal["email", "uri", "date", "date-time"] | None = Field(
        default=None, description="What the text must be."
    )
    default: str | None = Field(default=None, description="The value to prefill.")


class NumberSchema(OpenModel):
    """A number field; `integer` accepts whole numbers only."""

    type: Literal["number", "integer"] = Field(description="`number` or `integer`.")
    title: str | None = Field(default=None, description=_TITLE)
    description: str | None = Field(default=None, description=_DESCRIPTION)
    minimum: float | None = Field(default=None, description="The smallest value accepted.")
    maximum: float | None = Field(default=None, description="The largest value accepted.")
    default: float | None = Field(default=None, description="The value to prefill.")


class BooleanSchema(OpenModel):
    """A yes/no field."""

    type: Literal["boolean"] = Field(description="Always `boolean`.")
    title: str | None = Field(default=None, description=_TITLE)
    description: str | None = Field(default=None, description=_DESCRIPTION)
    default: bool | None = Field(default=None, description="The value to prefill.")


class EnumOption(OpenModel):
    """One choice with a label: the value sent (`const`) and the text shown (`title`)."""

    const: str = Field(description="The value sent when this option is chosen.")
    title: str = Field(description="The text shown for it.")


class UntitledSingleSelectEnumSchema(OpenModel):
    """A choice of one value, shown as the values themselves."""

    type: Literal["string"] = Field(description="Always `string`.")
    enum: list[str] = Field(description="The values to choose from.")
    title: str | None = Field(default=None, description=_TITLE)
    description: str | None = Field(default=None, description=_DESCRIPTION)
    default: str | None = Field(default=None, description="The value to preselect.")


class TitledSingleSelectEnumSchema(OpenModel):
    """A choice of one value, each option with a label."""

    type: Literal["string"] = Field(description="Always `string`.")
    one_of: list[EnumOption] = Field(description="The options.")
    title: str | None = Field(default=None, description=_TITLE)
    description: str | None = Field(default=None, description=_DESCRIPTION)
    default: str | None = Field(default=None, description="The value to preselect.")


class LegacyTitledEnumSchema(OpenModel):
    """A choice of one value with labels given side by side in `enumNames` (an older form MCP still allows)."""

    type: Literal["string"] = Field(description="Always `string`.")
    enum: list[str] = Field(description="The values to choose from.")
    enum_names: list[str] = Field(description="The label of each value, in the same order.")
    title: str | None = Field(default=None, description=_TITLE)
    description: str | None = Field(default=None, description=_DESCRIPTION)
    default: str | None = Field(default=None, description="The value to preselect.")


class UntitledEnumItems(OpenModel):
    """The values a multiple choice offers."""

    type: Literal["string"] = Field(description="Always `string`.")
    enum: list[str] = Field(description="The values to choose from.")


class TitledEnumItems(OpenModel):
    """The labelled options a multiple choice offers."""

    any_of: list[EnumOption] = Field(description="The options.")


class UntitledMultiSelectEnumSchema(OpenModel):
    """A choice of several values, shown as the values themselves; the answer is a list of strings."""

    type: Literal["array"] = Field(description="Always `array`.")
    items: UntitledEnumItems = Field(description="The values to choose from.")
    title: str | None = Field(default=None, description=_TITLE)
    description: str | None = Field(default=None, description=_DESCRIPTION)
    min_items: int | None = Field(default=None, description="The fewest values to choose.")
    max_items: int | None = Field(default=None, description="The most values to choose.")
    default: list[str] | None = Field(default=None, description="The values to preselect.")


class TitledMultiSelectEnumSchema(OpenModel):
    """A choice of several values, each option with a label; the answer is a list of strings."""

    type: Literal["array"] = Field(description="Always `array`.")
    items: TitledEnumItems = Field(description="The options.")
    title: str | None = Field(default=None, description=_TITLE)
    description: str | None = Field(default=None, description=_DESCRIPTION)
    min_items: int | None = Field(default=None, description="The fewest values to choose.")
    max_items: int | None = Field(default=None, description="The most values to choose.")
    default: list[str] | None = Field(default=None, description="The values to preselect.")


PrimitiveSchemaDefinition = TypeAliasType(
    "PrimitiveSchemaDefinition",
    Annotated[
        StringSchema
        | NumberSchema
        | BooleanSchema
        | UntitledSingleSelectEnumSchema
        | TitledSingleSelectEnumSchema
        | LegacyTitledEnumSchema
        | UntitledMultiSelectEnumSchema
        | TitledMultiSelectEnumSchema,
        Field(
            description="One field of a form (MCP's primitive schema definitions), told apart by `type`, then by "
            "`enum`, `oneOf`, `enumNames` or `items`."
        ),
    ],
)


class ElicitationFormSchema(OpenModel):
    """The form an elicitation asks to be filled: a flat object of primitive fields."""

    schema_uri: str | None = Field(default=None, alias="$schema", description="The JSON Schema dialect, if named.")
    type: Literal["object"] = Field(description="Always `object`.")
    properties: dict[str, PrimitiveSchemaDefinition] = Field(description="The fields, by the key the answer uses.")
    required: list[str] | None = Field(default=None, description="The keys an accepted answer must fill.")


class ElicitationRequest(WireModel):
    """`mcpServer/elicitation/request`: a server asks the user for something during a tool call.

    `mode: "form"`: fill `requestedSchema`. `mode: "url"`: open `url` (checked by the daemon: https, or
    http to loopback; no userinfo) in a browser, after showing its full origin; `accept` means the user agreed to
    open it, and the server's completion notice arrives as `mcpServer/elicitation/completed` with the same
    `elicitationId`. Sent only to the connection whose call is waiting; nothing else crosses the boundary (no
    session or raw MCP ids). Answer it with an `ElicitationResponse`.
    """

    thread_id: str = Field(description="The thread whose tool call is waiting on the answer.")
    turn_id: str | None = Field(description="The turn the call belongs to, as the call gave it, or null.")
    server_name: str = Field(description="The MCP server asking.")
    mode: Literal["form", "url"] = Field(description="`form` (fill `requestedSchema`) or `url` (open `url`).")
    message: str = Field(description="What the server says it is for; show it to the user.")
    requested_schema: Annotated[dict[str, Any], PublishedAs(ElicitationFormSchema)] | None = Field(
        default=None, description="With `form`: the form to fill."
    )
    url: str | None = Field(default=None, description="With `url`: the page to open (the daemon never opens it).")
    elicitation_id: str | None = Field(
        default=None, description="With `url`: the server's id for it, named again by its completion notice."
    )


class ElicitationCompleted(WireModel):
    """`mcpServer/elicitation/completed`: the server says the out-of-band interaction of a URL elicitation ended."""

    thread_id: str = Field(description="The thread of the tool call that asked.")
    elicitation_id: str = Field(description="The `elicitationId` of the URL elicitation.")


ElicitationValue = TypeAliasType(
    "ElicitationValue",
    Annotated[
        str | float | bool | list[str],
        Field(description="One field's answer: text, a number, yes/no, or the values chosen in a multiple choice."),
    ],
)


class ElicitationResponse(WireModel):
    """The answer to `mcpServer/elicitation/request`: the user's decision and, with `accept`, the form's values."""

    action: ElicitationAction = Field(
        description="`accept` (the user filled the form), `decline` (said no) or `cancel` (dismissed it)."
    )
    content: dict[str, ElicitationValue] | None = Field(
        default=None, description="With `accept`: the values by field key, checked against the requested schema."
    )


class ValidationIssue(WireModel):
    """One way a value misses what was asked: where (a dotted path, "" for the whole) and why, in plain words."""

    path: str = Field(description='Where: a dotted path into the value ("" for the value itself).')
    message: str = Field(description="Why, in plain words.")


class ServerRequestResolved(WireModel):
    """`serverRequest/resolved`: sent to the answering connection before the answer goes upstream.

    `action` is what the server is told. `reason: "invalidElicitationResponse"` (with `errors`) marks a `cancel`
    the daemon chose because the answer did not fit `requestedSchema`, not the user's cancel; `reason: "timeout"`
    one the call's own timeout chose (a form's open time never counts toward it).
    """

    thread_id: str = Field(description="The thread of the tool call that asked.")
    request_id: str | int = Field(description="The id of the server request that is resolved.")
    action: ElicitationAction = Field(description="What the server is told.")
    reason: Literal["invalidElicitationResponse", "timeout"] | None = Field(
        default=None,
        description="Set when the daemon cancelled: the answer did not fit the form, or the call timed out.",
    )
    errors: list[ValidationIssue] | None = Field(default=None, description="How the answer missed the form.")
