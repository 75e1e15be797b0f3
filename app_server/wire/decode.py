"""One input line to one message, or the typed error SPEC §1 gives it.

Every check is bounded and non-recursive, so no line (deep nesting, bad UTF-8, lone surrogates,
``NaN``) can raise out of here: nesting is measured on the raw bytes before the parser sees them.
"""

from __future__ import annotations

import itertools
import json
import math
import operator
import re
from typing import Any, TypeGuard

from protocol.jsonrpc import AppError, RequestId

MAX_DEPTH = 128
_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_OPENS_AS_TWO = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGIT_RUN = b"0" * 19


class Rejected(Exception):
    """The line is answered with ``error`` (to ``request_id``, null when the id cannot be trusted)."""

    def __init__(self, error: AppError, request_id: RequestId | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.request_id = request_id


def too_deep(line: bytes) -> bool:
    """Nesting of ``[``/``{`` outside strings deeper than ``MAX_DEPTH``, in linear C-speed passes over the bytes.

    Escaped backslashes and quotes go first, so every remaining quote delimits a string."""
    if line.count(b"[") + line.count(b"{") <= MAX_DEPTH:
        return False
    unescaped = line.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = _STRING.sub(b"", unescaped).translate(None, _NOT_BRACKETS).translate(_OPENS_AS_TWO)
    # An open adds 2 and every bracket costs 1: the running sum minus the position is the depth there.
    return max(map(operator.sub, itertools.accumulate(brackets), itertools.count(1)), default=0) > MAX_DEPTH


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("the number is out of range")
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def _parse_error(detail: str) -> Rejected:
    return Rejected(AppError("parseError", f"the line is not valid JSON: {detail}"))


def has_lone_surrogate(value: Any) -> bool:
    """True when a string (or object key) anywhere in ``value`` is not encodable as UTF-8."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode()
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def is_request_id(value: Any) -> TypeGuard[str | int]:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse(line: bytes, fast: bool = True) -> Any:
    """The JSON value of ``line``; ``Rejected`` (``-32700``) for anything that is not strict JSON.

    ``fast``: orjson, as strict as the standard parser, takes the common line; the standard parser says what is
    wrong with the rest, or accepts what orjson alone refuses (a lone surrogate escape, or an integer past 64 bits,
    which a line with a long digit run is kept from). The start-up reader goes without orjson, whose import would
    delay the ``initialize`` answer."""
    deep = too_deep(line)
    if fast and not deep and _LONG_DIGIT_RUN not in line.translate(_DIGITS_AS_ZERO):
        import orjson

        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            pass
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise _parse_error("invalid UTF-8") from None
    if deep:
        raise _parse_error(f"nesting deeper than {MAX_DEPTH} levels")
    try:
        return _DECODER.decode(text)
    except (ValueError, RecursionError) as exc:
        raise _parse_error("nesting too deep" if isinstance(exc, RecursionError) else str(exc)[:200]) from None


def decode(line: bytes, fast: bool = True) -> dict[str, Any] | None:
    """A request, notification or response message; None for a notification that is silently dropped
    (``fast``: as for ``parse``).

    Guarantees: ``method`` (when present) is a UTF-8-clean string, ``id`` (when present) a clean string
    or integer; a response (no method) carries ``result`` or ``error``."""
    message = parse(line, fast)
    if not isinstance(message, dict):
        raise Rejected(AppError("invalidRequest", "a message must be a JSON object"))
    method = message.get("method")
    has_id = "id" in message
    request_id = message.get("id")
    suspicious = _SURROGATE_ESCAPE.search(line) is not None
    if suspicious and has_lone_surrogate([method, request_id]):
        raise Rejected(AppError("invalidRequest", "the method or id is not valid Unicode (lone surrogate)"))
    if method is None and has_id and ("result" in message or "error" in message):
        if suspicious and has_lone_surrogate(message):
            raise Rejected(AppError("invalidRequest", "the response is not valid Unicode (lone surrogate)"))
        return message
    if not isinstance(method, str) or (has_id and not is_request_id(request_id)):
        reply_id = request_id if is_request_id(request_id) else None
        raise Rejected(AppError("invalidRequest", "not a JSON-RPC request or notification"), reply_id)
    if suspicious and has_lone_surrogate(message.get("params")):
        if not has_id:
            return None
        raise Rejected(
            AppError(
                "invalidParams",
                "params are not valid Unicode",
                errors=[{"path": "params", "message": "a string contains a lone surrogate"}],
            ),
            request_id,
        )
    return message
