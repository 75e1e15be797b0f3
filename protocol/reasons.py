"""The typed reasons results and events carry (``ErrorInfo.reason``, ``SkippedEntry.reason``).

A reason is a plain ``str`` when the daemon builds a model (it only ever sends reasons of ``REASON_CODES``, a test
holds every raise site to that table), and a closed set in the published schema, so clients get a literal union.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema
from typing_extensions import TypeAliasType

from protocol.jsonrpc import REASON_CODES

ErrorReason = TypeAliasType(
    "ErrorReason",
    Annotated[
        str,
        WithJsonSchema(
            {
                "type": "string",
                "enum": sorted(REASON_CODES),
                "description": "Every `error.data.reason` the daemon sends; `errorCodes` gives the code of each.",
            }
        ),
    ],
)

SkipReason = TypeAliasType(
    "SkipReason",
    Annotated[
        ErrorReason | Literal["nameConflict", "alreadyPresent"],
        Field(
            description="Why an import left an entry out: the reason it would fail with, `nameConflict` (two scopes "
            "of the app use the name) or `alreadyPresent` (stored with the same config)."
        ),
    ],
)
