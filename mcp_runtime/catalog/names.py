"""Tool names: ``mcp__<server>__<tool>``, the one rule deciding what a tool is called (SPEC §5, seed 004).

The tool part uses the server-name characters (``[A-Za-z0-9_-]``) and the full name is at most 64 characters.
A tool that breaks this, or is listed twice, fails the whole server's catalog (``invalidToolName``) rather than
being renamed or dropped. Splitting is ambiguous when a server name ends in ``_`` next to a tool starting with
``_``, so callers resolve names through the built views, never by re-splitting.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcp_runtime.config.rules import check_server_name
from protocol.jsonrpc import AppError
from protocol.tool_names import MAX_TOOL_FULL_NAME, TOOL_NAME_PATTERN, TOOL_PREFIX, TOOL_SEPARATOR

_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)


def invalid_tool_name(message: str, server: str, tool: str) -> AppError:
    return AppError("invalidToolName", message, server=server[:64], tool=tool[:128])


def full_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``; raises ``invalidServerName``/``invalidToolName`` for names it cannot carry."""
    check_server_name(server)
    if not _TOOL_NAME.fullmatch(tool):
        raise invalid_tool_name("tool names are characters of [A-Za-z0-9_-]", server, tool)
    name = f"{TOOL_PREFIX}{server}{TOOL_SEPARATOR}{tool}"
    if len(name) > MAX_TOOL_FULL_NAME:
        raise invalid_tool_name(f"full tool name is longer than {MAX_TOOL_FULL_NAME} characters", server, tool)
    return name


def check_tool_names(server: str, names: Sequence[str]) -> None:
    """One server's listed tool names: each one carriable as a full name, none listed twice."""
    seen: set[str] = set()
    for name in names:
        full_name(server, name)
        if name in seen:
            raise invalid_tool_name(f"tool {name} is listed twice", server, name)
        seen.add(name)


def split_full_name(name: str) -> tuple[str, str] | None:
    """The inverse of :func:`full_name` (split at the first ``__``), or ``None`` when it is not one."""
    if not name.startswith(TOOL_PREFIX):
        return None
    server, sep, tool = name[len(TOOL_PREFIX) :].partition(TOOL_SEPARATOR)
    if not sep:
        return None
    try:
        full_name(server, tool)
    except AppError:
        return None
    return server, tool
