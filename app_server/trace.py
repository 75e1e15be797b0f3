"""``--trace FILE``: every JSON-RPC message in and out, one JSON line each, for a host to attach to a bug report.

A line is ``{"time", "dir": "in"|"out", "connection", "message"}``. Secrets never reach it: env and header values
read ``"***"`` as in lists, so does every string (or number) whose name says it holds a secret (a token, a client
secret, an ``authorizationUrl``), the URL of a URL-mode elicitation and the values a person typed into a form. A message
larger than ``MESSAGE_MAX`` is recorded by its size, id and method only; a line that is not a message by its
size and why it was refused. The file is 0600 and appended to; past ``FILE_MAX`` it becomes ``FILE.1`` (an older
one is replaced) and a new file begins, so a trace never takes more than twice that on disk.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from mcp_runtime import safe_fs

REDACTED = "***"
FILE_MAX = 64 << 20
MESSAGE_MAX = 64 << 10
_SECRET_PARTS = ("token", "secret", "password", "passwd", "authorization", "cookie", "credential", "apikey", "api_key")
_MASKED_MAPS = ("env", "headers")
_ID = re.compile(rb'"id":("(?:[^"\\]|\\.){0,200}"|-?\d{1,20}|null)')
_METHOD = re.compile(rb'"method":"([^"\\]{1,200})"')
_ELICITATION = "mcpServer/elicitation/request"


def _is_secret(key: str) -> bool:
    lowered = key.lower()
    return any(part in lowered for part in _SECRET_PARTS)


def _is_scalar(value: Any) -> bool:
    """A value a secret can be (a name-keyed map, such as a server's tools by name, is walked instead)."""
    if isinstance(value, list):
        return all(_is_scalar(item) for item in value)
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _redacted(value: Any) -> Any:
    """A copy of ``value`` with every env/header value and every secret-named member replaced by ``***``."""
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    if not isinstance(value, dict):
        return value
    copy: dict[Any, Any] = {}
    for key, item in value.items():
        if isinstance(key, str) and _is_secret(key) and _is_scalar(item):
            copy[key] = REDACTED
        elif key in _MASKED_MAPS and isinstance(item, dict):
            copy[key] = dict.fromkeys(item, REDACTED)
        else:
            copy[key] = _redacted(item)
    return copy


def redact(message: dict[str, Any]) -> dict[str, Any]:
    """What of ``message`` a trace may hold (see the module's docstring)."""
    copy: dict[str, Any] = _redacted(message)
    params, result = copy.get("params"), copy.get("result")
    if copy.get("method") == _ELICITATION and isinstance(params, dict) and "url" in params:
        params["url"] = REDACTED
    request_id = copy.get("id")
    answers_server = "method" not in copy and isinstance(request_id, str) and request_id.startswith("srv-")
    if answers_server and isinstance(result, dict) and isinstance(result.get("content"), dict):
        result["content"] = dict.fromkeys(result["content"], REDACTED)
    return copy


def _outline(line: bytes) -> dict[str, Any]:
    """The id and method of a line too large to record, read from its bytes without parsing it."""
    outline: dict[str, Any] = {"bytes": len(line), "omitted": f"larger than {MESSAGE_MAX} bytes"}
    if found := _ID.search(line, 0, 4096):
        outline["id"] = orjson.loads(found.group(1))
    if found := _METHOD.search(line, 0, 4096):
        outline["method"] = found.group(1).decode(errors="replace")
    return outline


class Trace:
    """The open trace file; each record is one ``write`` appended to it."""

    def __init__(self, path: Path) -> None:
        """Open (create 0600, never through a symlink) ``path`` for appending; ``OSError`` when it cannot be."""
        self.path = path
        self._fd = self._open()

    def _open(self) -> int:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | safe_fs.O_NOFOLLOW, safe_fs.FILE_MODE)
        if sys.platform != "win32":
            os.fchmod(fd, safe_fs.FILE_MODE)  # an existing file too
        self._size = os.fstat(fd).st_size
        return fd

    def incoming(self, connection: str, message: dict[str, Any], size: int) -> None:
        if size > MESSAGE_MAX:
            record: dict[str, Any] = {"bytes": size, "omitted": f"larger than {MESSAGE_MAX} bytes"}
            for key in ("id", "method"):
                value = message.get(key)
                if value is not None:
                    record[key] = value[:200] if isinstance(value, str) else value
            self._record("in", connection, record)
        else:
            self._record("in", connection, redact(message))

    def refused(self, connection: str, size: int | None, reason: str) -> None:
        """An input line that is not a message (not JSON, too large): its size and the reason only."""
        self._record("in", connection, {"bytes": size, "refused": reason})

    def outgoing(self, connection: str, line: bytes) -> None:
        if len(line) > MESSAGE_MAX:
            self._record("out", connection, _outline(line))
            return
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:  # integers past 64 bits: the standard parser reads those
            import json

            message = json.loads(line)
        self._record("out", connection, redact(message) if isinstance(message, dict) else message)

    def _record(self, direction: str, connection: str, message: Any) -> None:
        time = datetime.now(UTC).isoformat(timespec="microseconds")
        entry = {"time": time, "dir": direction, "connection": connection, "message": message}
        try:
            data = orjson.dumps(entry) + b"\n"
        except TypeError:  # lone surrogates, integers past 64 bits
            import json

            data = json.dumps(entry, separators=(",", ":")).encode(errors="backslashreplace") + b"\n"
        try:
            if self._size + len(data) > FILE_MAX:
                self._rotate()
            os.write(self._fd, data)
            self._size += len(data)
        except OSError:
            pass  # a full disk costs the trace, never the daemon

    def _rotate(self) -> None:
        os.close(self._fd)
        try:
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        finally:
            self._fd = self._open()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)
