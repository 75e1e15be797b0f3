"""The one JSON encoder of what the daemon writes: lines to a client, trace records, kept answers, spooled output.

Compact UTF-8 JSON. orjson writes it (several times faster); what orjson refuses (text that is not valid Unicode,
that is lone surrogates; integers past 64 bits) is written by the standard library with the same separators, and a
lone surrogate becomes its ``\\uXXXX`` escape, so the line stays valid UTF-8 and reads back as the same string.
That fallback is the only one: every path that writes JSON calls this module, so a value has one encoding.
Non-finite numbers are written as ``null`` on both paths, as orjson does (JSON has no NaN).
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _finite(value: Any) -> Any:
    """``value`` with non-finite floats as ``None`` (copied only where one is found)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def compact_stdlib(value: Any) -> bytes:
    """The standard library's encoding: for what orjson refuses, and for the start-up reader, which answers
    ``initialize`` before orjson is worth importing (for text, integers, lists and objects the bytes are
    orjson's; only floats may be spelt otherwise, ``1e-05`` for ``0.00001``)."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(value), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(_escaped, text).encode()


def compact(value: Any) -> bytes:
    """``value`` as compact JSON; never fails for a JSON value, whatever its strings hold."""
    import orjson

    try:
        return orjson.dumps(value)
    except TypeError:
        return compact_stdlib(value)


def line(value: Any) -> bytes:
    """A message line: compact JSON and a newline."""
    return compact(value) + b"\n"


def model_json(model: BaseModel) -> bytes:
    """A protocol model as compact JSON (pydantic writes it); one holding text that is not valid Unicode goes
    through :func:`compact` instead of failing."""
    try:
        return model.model_dump_json().encode()
    except ValueError:
        return compact(model.model_dump(mode="json"))
