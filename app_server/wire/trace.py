"""``--trace FILE``: every JSON-RPC message in and out, one JSON line each, for a host to attach to a bug report.

A line is ``{"time", "dir": "in"|"out", "connection", "message"}``. Secrets never reach it: env and header values
read ``"***"`` whatever JSON type they were sent as, so does every member whose name holds a secret by the house's
one rule (``protocol.secrets``: a token, a private key, an ``authorizationUrl``, an ``auth`` argument), whatever its
value, the URL of a URL-mode elicitation, the values a person typed into a form and those values wherever a later
message quotes them (a tool that echoes its form). Keys of name-keyed maps (tools by name, schema properties) are
names, not fields: they are walked. A message larger than ``MESSAGE_MAX`` is recorded by its size, id and method
only; a line that is not a message by its size and why it was refused.

The file must be a regular file (a FIFO or a device is refused at start); it is 0600 and appended to; past
``FILE_MAX`` it becomes ``FILE.1`` (an older one is replaced) and a new file begins, so a trace never takes more
than twice that on disk. When the new file cannot be opened, tracing stops (one log line): nothing is ever
written through a descriptor the trace has closed, which the process may have handed to something else since.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
from collections import deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from app_server.process.logs import get_logger
from mcp_runtime import safe_fs
from protocol.encoding import compact
from protocol.secrets import is_secret_name

log = get_logger("app_server.trace")

REDACTED = "***"
FILE_MAX = 64 << 20
MESSAGE_MAX = 64 << 10
TYPED_KEPT = 64
"""Form values remembered for masking where a later message quotes them (the newest ones)."""
TYPED_SHORTEST = 3
"""A typed value shorter than this is masked where it was typed only: masking every ``a`` or ``12`` in later
messages would make the trace unreadable and hide nothing a reader could not guess."""
_MASKED_MAPS = frozenset({"env", "headers"})
_NAME_KEYED = frozenset({"tools", "properties", "patternProperties", "$defs", "definitions", "mcpServers"})
_ID = re.compile(rb'"id":("(?:[^"\\]|\\.){0,200}"|-?\d{1,20}|null)')
_METHOD = re.compile(rb'"method":"([^"\\]{1,200})"')
_ELICITATION = "mcpServer/elicitation/request"


class TraceRefused(Exception):
    """``--trace FILE`` names something the trace cannot be written to; the message says why (exit 2)."""


def _redacted(value: Any, names: bool = False) -> Any:
    """A copy of ``value`` with env/header values and secret-named members masked; ``names``: ``value`` is a
    name-keyed map, whose keys are not fields."""
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    if not isinstance(value, dict):
        return value
    copy: dict[Any, Any] = {}
    for key, item in value.items():
        if names or not isinstance(key, str):
            copy[key] = _redacted(item)
        elif key in _MASKED_MAPS:
            copy[key] = dict.fromkeys(item, REDACTED) if isinstance(item, dict) else REDACTED
        elif is_secret_name(key):
            copy[key] = REDACTED
        else:
            copy[key] = _redacted(item, key in _NAME_KEYED and isinstance(item, dict))
    return copy


def redact(message: dict[str, Any]) -> dict[str, Any]:
    """What of ``message`` a trace may hold, before typed values are masked (see the module's docstring)."""
    copy: dict[str, Any] = _redacted(message)
    params = copy.get("params")
    if copy.get("method") == _ELICITATION and isinstance(params, dict) and "url" in params:
        params["url"] = REDACTED
    content = _typed(copy)
    if content is not None:
        copy["result"]["content"] = dict.fromkeys(content, REDACTED)
    return copy


def _typed(message: dict[str, Any]) -> dict[str, Any] | None:
    """The form a person filled in, when ``message`` answers a server request (an elicitation)."""
    request_id, result = message.get("id"), message.get("result")
    answers_server = "method" not in message and isinstance(request_id, str) and request_id.startswith("srv-")
    content = result.get("content") if answers_server and isinstance(result, dict) else None
    return content if isinstance(content, dict) else None


def _outline(line: bytes) -> dict[str, Any]:
    """The id and method of a line too large to record, read from its bytes without parsing it."""
    outline: dict[str, Any] = {"bytes": len(line), "omitted": f"larger than {MESSAGE_MAX} bytes"}
    if found := _ID.search(line, 0, 4096):
        outline["id"] = orjson.loads(found.group(1))
    if found := _METHOD.search(line, 0, 4096):
        outline["method"] = found.group(1).decode(errors="replace")
    return outline


class _Echoes:
    """The newest typed form values, and one pattern that finds any of them in a later message's text."""

    def __init__(self) -> None:
        self._values: deque[str] = deque(maxlen=TYPED_KEPT)
        self._pattern: re.Pattern[str] | None = None

    def remember(self, content: dict[str, Any]) -> None:
        for item in content.values():
            for value in item if isinstance(item, list) else [item]:
                text = value if isinstance(value, str) else None if isinstance(value, bool) else str(value)
                if text is not None and len(text) >= TYPED_SHORTEST and text not in self._values:
                    self._values.append(text)
                    self._pattern = None

    def masked(self, value: Any) -> Any:
        if not self._values:
            return value
        if self._pattern is None:
            alternatives = sorted(self._values, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(text) for text in alternatives))
        return self._mask(value, self._pattern)

    def _mask(self, value: Any, pattern: re.Pattern[str]) -> Any:
        if isinstance(value, str):
            return pattern.sub(REDACTED, value)
        if isinstance(value, list):
            return [self._mask(item, pattern) for item in value]
        if isinstance(value, dict):
            return {key: self._mask(item, pattern) for key, item in value.items()}
        if isinstance(value, int | float) and not isinstance(value, bool):
            return REDACTED if pattern.fullmatch(str(value)) else value
        return value


def _open(path: Path) -> int:
    """Open (create 0600, never through a symlink) a regular file for appending; ``TraceRefused`` otherwise. Opened
    non-blocking, so a FIFO without a reader cannot hold start-up, and checked once open, so nothing swapped in
    between a check and the open is written to."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | safe_fs.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags, safe_fs.FILE_MODE)
    except OSError as exc:
        raise TraceRefused(f"cannot write the trace file {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise TraceRefused(f"the trace file {path} is not a regular file")
    if sys.platform != "win32":
        os.set_blocking(fd, True)
        os.fchmod(fd, safe_fs.FILE_MODE)  # an existing file too
    return fd


class Trace:
    """The open trace file; each record is one ``write`` appended to it."""

    def __init__(self, path: Path) -> None:
        """``TraceRefused`` when ``path`` cannot be a trace file (the command line reports it, exit 2)."""
        self.path = path
        self._fd: int | None = _open(path)
        self._size = os.fstat(self._fd).st_size
        self._echoes = _Echoes()

    def incoming(self, connection: str, message: dict[str, Any], size: int) -> None:
        if size > MESSAGE_MAX:
            record: dict[str, Any] = {"bytes": size, "omitted": f"larger than {MESSAGE_MAX} bytes"}
            for key in ("id", "method"):
                value = message.get(key)
                if value is not None:
                    record[key] = value[:200] if isinstance(value, str) else value
            self._record("in", connection, record)
            return
        content = _typed(message)
        if content is not None:
            self._echoes.remember(content)
        self._record("in", connection, self._echoes.masked(redact(message)))

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
        if isinstance(message, dict):
            message = self._echoes.masked(redact(message))
        self._record("out", connection, message)

    def _record(self, direction: str, connection: str, message: Any) -> None:
        if self._fd is None:
            return
        time = datetime.now(UTC).isoformat(timespec="microseconds")
        data = compact({"time": time, "dir": direction, "connection": connection, "message": message}) + b"\n"
        try:
            if self._size + len(data) > FILE_MAX:
                self._rotate()
                if self._fd is None:
                    return
            os.write(self._fd, data)
            self._size += len(data)
        except OSError:
            pass  # a full disk costs the trace, never the daemon

    def _rotate(self) -> None:
        """``FILE`` becomes ``FILE.1`` and a new ``FILE`` begins; if it cannot, tracing stops here."""
        assert self._fd is not None
        os.close(self._fd)
        self._fd = None
        try:
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))
            self._fd = _open(self.path)
        except (OSError, TraceRefused) as exc:
            log.warning("trace_stopped", path=str(self.path), cause=str(exc)[:200])
            return
        self._size = 0

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
