"""One owner's status rows and answers, kept between reads for every ``detail`` (SPEC §6, §8).

A settings page polls ``mcpServerStatus/list`` while nothing changes, and a row with 128 tools is costly to build
and to encode: each row is kept with its JSON per detail and rebuilt only when what it is made of changes, and
the last answer per detail is handed back while its rows are the very same objects.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from protocol.config import McpServerConfig
from protocol.encoding import compact, model_json
from protocol.jsonrpc import AppError
from protocol.status import AuthStatus, ServerStatus

Detail = Literal["full", "toolsAndAuthOnly"]
CredentialsStamp = tuple[int, ...] | None
"""What identifies the credentials file's content (another process may log in); None when it is absent."""


class RowKey(NamedTuple):
    """What one server's status row is made of.

    Auth and the flags compare by value; the config, the slot, its state and the error by identity: none of them
    changes in place (a slot's state is replaced as a whole on every change), so identity stands for content and
    comparing costs nothing (a config compared by value would be compared field by field).
    """

    auth: AuthStatus
    starting: bool
    disabled: bool
    asleep: bool
    config: McpServerConfig
    slot: object | None
    state: object | None
    error: AppError | None

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, RowKey)
            and self[:4] == other[:4]
            and self.config is other.config
            and self.slot is other.slot
            and self.state is other.state
            and self.error is other.error
        )

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        raise TypeError("a RowKey compares parts by identity: it is never hashed")


def tools_and_auth(row: ServerStatus) -> ServerStatus:
    """The ``toolsAndAuthOnly`` row: what a settings page lists, without server info, errors or stderr."""
    return ServerStatus(name=row.name, runtime_status=row.runtime_status, tools=row.tools, auth_status=row.auth_status)


@dataclass(eq=False)
class _Row:
    key: RowKey
    full: ServerStatus
    rows: dict[Detail, ServerStatus] = field(default_factory=dict)
    json: dict[Detail, bytes | memoryview] = field(default_factory=dict)

    def row(self, detail: Detail) -> ServerStatus:
        if detail == "full":
            return self.full
        row = self.rows.get(detail)
        if row is None:
            row = self.rows[detail] = tools_and_auth(self.full)
        return row

    def model_json(self, detail: Detail) -> bytes | memoryview:
        text = self.json.get(detail)
        if text is None:
            text = self.json[detail] = model_json(self.row(detail))
        return text


@dataclass(frozen=True, eq=False)
class _Answer:
    rows: tuple[ServerStatus, ...]
    tail: bytes
    body: bytes


class StatusCache:
    """Status rows by server name (with their ``authStatus`` and JSON per detail) and the last answer per detail."""

    def __init__(self) -> None:
        self._rows: dict[str, _Row] = {}
        self._auth: dict[str, tuple[McpServerConfig, CredentialsStamp, AuthStatus]] = {}
        self._answers: dict[Detail, _Answer] = {}

    def auth(
        self, name: str, config: McpServerConfig, stamp: CredentialsStamp, read: Callable[[], AuthStatus]
    ) -> AuthStatus:
        """``read()`` again only when the config or the credentials file changed (it reads that file)."""
        kept = self._auth.get(name)
        if kept is not None and kept[0] is config and kept[1] == stamp:
            return kept[2]
        status = read()
        self._auth[name] = (config, stamp, status)
        return status

    def row(self, name: str, key: RowKey, build: Callable[[], ServerStatus]) -> ServerStatus:
        """The full row of ``name``, built again only when its key changed."""
        kept = self._rows.get(name)
        if kept is not None and kept.key == key:
            return kept.full
        row = build()
        self._rows[name] = _Row(key, row)
        return row

    def forget(self, name: str) -> None:
        """A stopped or deleted server: its row (and the slot it holds on to) goes with it, and so do the kept
        answers that show it."""
        self._rows.pop(name, None)
        self._auth.pop(name, None)
        self._answers.clear()

    def _model_json(self, row: ServerStatus, detail: Detail) -> bytes | memoryview:
        kept = self._rows.get(row.name)
        if kept is None or kept.full is not row:
            return model_json(row if detail == "full" else tools_and_auth(row))
        return kept.model_json(detail)

    def list_json(self, rows: Sequence[ServerStatus], detail: Detail, next_cursor: str | None) -> bytes:
        """The ``ServerStatusListResult`` JSON of these full rows at ``detail``, joined from the rows' kept JSON.

        The answer is kept and returned again while every row is the very same object; the rows' JSON then
        points into it, so keeping both costs no second copy.
        """
        tail = b"]}" if next_cursor is None else b'],"nextCursor":%s}' % compact(next_cursor)
        kept = self._answers.get(detail)
        if kept is not None and kept.tail == tail and len(kept.rows) == len(rows):
            if all(a is b for a, b in zip(kept.rows, rows, strict=True)):
                return kept.body
        head = b'{"data":['
        texts = [self._model_json(row, detail) for row in rows]
        body = b"".join((head, b",".join(texts), tail))
        self._answers[detail] = _Answer(tuple(rows), tail, body)
        view, offset = memoryview(body), len(head)
        for row, text in zip(rows, texts, strict=True):
            entry = self._rows.get(row.name)
            if entry is not None and entry.full is row:
                entry.json[detail] = view[offset : offset + len(text)]
            offset += len(text) + 1
        return body

    def start_json(self, row: ServerStatus) -> bytes:
        """The ``ServerStartResult`` JSON of a full row (its kept JSON, the one status lists reuse)."""
        return b"".join((b'{"status":', self._model_json(row, "full"), b"}"))
