"""JSON-RPC envelopes, error codes and the typed error every layer raises."""

from __future__ import annotations

import re
from enum import IntEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError

RequestId = str | int


class ErrorCode(IntEnum):
    """The JSON-RPC error codes; clients branch on ``data.reason``, never on the message."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL = -32603
    OVERLOADED = -32001
    NOT_INITIALIZED = -32002
    CANCELLED = -32800
    NOT_FOUND = -32010
    CONFLICT = -32011
    POLICY = -32012
    LIMIT = -32013
    SERVER_FAILURE = -32014
    TIMEOUT = -32015
    AUTH = -32016


REASON_CODES: dict[str, ErrorCode] = {
    "parseError": ErrorCode.PARSE_ERROR,
    "invalidRequest": ErrorCode.INVALID_REQUEST,
    "messageTooLarge": ErrorCode.INVALID_REQUEST,
    "alreadyInitialized": ErrorCode.INVALID_REQUEST,
    "methodNotFound": ErrorCode.METHOD_NOT_FOUND,
    "retired": ErrorCode.METHOD_NOT_FOUND,
    "invalidParams": ErrorCode.INVALID_PARAMS,
    "threadRequired": ErrorCode.INVALID_PARAMS,
    "invalidArguments": ErrorCode.INVALID_PARAMS,
    "invalidServerName": ErrorCode.INVALID_PARAMS,
    "invalidToolName": ErrorCode.INVALID_PARAMS,
    "redactedValue": ErrorCode.INVALID_PARAMS,
    "notARegularFile": ErrorCode.INVALID_PARAMS,
    "invalidElicitationResponse": ErrorCode.INVALID_PARAMS,
    "missingInput": ErrorCode.INVALID_PARAMS,
    "invalidInput": ErrorCode.INVALID_PARAMS,
    "invalidBundle": ErrorCode.INVALID_PARAMS,
    "internal": ErrorCode.INTERNAL,
    "overloaded": ErrorCode.OVERLOADED,
    "notInitialized": ErrorCode.NOT_INITIALIZED,
    "cancelled": ErrorCode.CANCELLED,
    "unknownThread": ErrorCode.NOT_FOUND,
    "unknownServer": ErrorCode.NOT_FOUND,
    "unknownTool": ErrorCode.NOT_FOUND,
    "unknownPrompt": ErrorCode.NOT_FOUND,
    "unknownResource": ErrorCode.NOT_FOUND,
    "unknownLogin": ErrorCode.NOT_FOUND,
    "unknownRef": ErrorCode.NOT_FOUND,
    "threadArchived": ErrorCode.NOT_FOUND,
    "unknownTask": ErrorCode.NOT_FOUND,
    "unknownRegistryEntry": ErrorCode.NOT_FOUND,
    "serverExists": ErrorCode.CONFLICT,
    "conflictingServerConfig": ErrorCode.CONFLICT,
    "revisionMismatch": ErrorCode.CONFLICT,
    "serverBusy": ErrorCode.CONFLICT,
    "inlineSecret": ErrorCode.POLICY,
    "invalidHeader": ErrorCode.POLICY,
    "reservedHeader": ErrorCode.POLICY,
    "missingEnvVar": ErrorCode.POLICY,
    "secretStoreLocked": ErrorCode.POLICY,
    "missingSecret": ErrorCode.POLICY,
    "insecureUrl": ErrorCode.POLICY,
    "redirectRejected": ErrorCode.POLICY,
    "oauthHeaderConflict": ErrorCode.POLICY,
    "originNotAllowed": ErrorCode.POLICY,
    "unsupported": ErrorCode.POLICY,
    "toolNotAllowed": ErrorCode.POLICY,
    "noThreadOwner": ErrorCode.POLICY,
    "transportNotAllowed": ErrorCode.POLICY,
    "unsafePath": ErrorCode.POLICY,
    "unsafeEnv": ErrorCode.POLICY,
    "storeCorrupted": ErrorCode.POLICY,
    "callbackPortInUse": ErrorCode.POLICY,
    "policyDenied": ErrorCode.POLICY,
    "unsafeBundle": ErrorCode.POLICY,
    "tooManyServers": ErrorCode.LIMIT,
    "storageFull": ErrorCode.LIMIT,
    "tooManyTools": ErrorCode.LIMIT,
    "catalogTooLarge": ErrorCode.LIMIT,
    "configTooLarge": ErrorCode.LIMIT,
    "responseTooLarge": ErrorCode.LIMIT,
    "resourceTooLarge": ErrorCode.LIMIT,
    "tooManyPages": ErrorCode.LIMIT,
    "tooManyTasks": ErrorCode.LIMIT,
    "bundleTooLarge": ErrorCode.LIMIT,
    "notRunning": ErrorCode.SERVER_FAILURE,
    "startupFailed": ErrorCode.SERVER_FAILURE,
    "connectionLost": ErrorCode.SERVER_FAILURE,
    "upstreamError": ErrorCode.SERVER_FAILURE,
    "invalidOutput": ErrorCode.SERVER_FAILURE,
    "urlElicitationRequired": ErrorCode.SERVER_FAILURE,
    "registryUnavailable": ErrorCode.SERVER_FAILURE,
    "timeout": ErrorCode.TIMEOUT,
    "authRequired": ErrorCode.AUTH,
    "reauthenticationRequired": ErrorCode.AUTH,
    "insufficientScope": ErrorCode.AUTH,
    "oauthFailed": ErrorCode.AUTH,
}


class AppError(Exception):
    """A failure with a typed reason; its code comes from the reason so the two never disagree."""

    def __init__(self, reason: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.details = details

    @property
    def code(self) -> int:
        return int(REASON_CODES.get(self.reason, ErrorCode.INTERNAL))

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member."""
        return {"code": self.code, "message": self.message, "data": {"reason": self.reason, **self.details}}


_OBJECT_TYPES = frozenset({"model_type", "model_attributes_type", "dict_type"})
_BRANCH_LABEL = re.compile(r"(str|int|float|bool|bytes|none|[a-z-]+\[.*\])")


def validation_errors(exc: ValidationError, prefix: tuple[str | int, ...] = ()) -> list[dict[str, str]]:
    """Pydantic errors as ``{path, message}`` pairs in plain words (input values left out: they may be secrets).

    Union branch labels (``id.str``) and model class names never reach the client; the alternatives of a
    union at one path become one message.
    """
    merged: dict[str, list[str]] = {}
    for err in exc.errors(include_url=False, include_input=False):
        loc = [p for p in err["loc"] if not (isinstance(p, str) and _BRANCH_LABEL.fullmatch(p))]
        message = "Input should be an object" if err["type"] in _OBJECT_TYPES else err["msg"]
        merged.setdefault(".".join(str(p) for p in (*prefix, *loc)), []).append(message)
    return [{"path": path, "message": _either(messages)} for path, messages in merged.items()]


def _either(messages: list[str]) -> str:
    unique = list(dict.fromkeys(messages))
    lead = "Input should be "
    if len(unique) > 1 and all(m.startswith(lead) for m in unique):
        return lead + " or ".join(m[len(lead) :] for m in unique)
    return "; ".join(unique)
