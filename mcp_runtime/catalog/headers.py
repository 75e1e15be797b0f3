"""Tools and their ``x-mcp-header`` annotations (SPEC §5): what the SDK mirrors into ``Mcp-Param-*`` headers.

On a 2026-07-28 connection the SDK's session keeps, per listed tool, which arguments become ``Mcp-Param-*``
headers of a ``tools/call`` (a ``null`` argument sends none) and leaves out every tool whose annotations are
invalid. The daemon needs the names it left out, to log them and show them in the status row, which the SDK's
``list_tools`` does not return: so the page is fetched here and handed to the session's own bookkeeping.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from mcp_runtime import _sdk_compat

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

    from mcp_runtime.session.fresh import FreshReader


async def listed_tools(
    session: ClientSession, params: Any, dropped: list[str] | None = None, fresh: FreshReader | None = None
) -> Any:
    """One ``tools/list`` page as the session's ``list_tools`` returns it (a fresh page kept is taken in the same
    way); the tools it left out are appended to ``dropped``."""
    import mcp_types as types

    def send() -> Awaitable[Any]:
        return session.send_request(types.ListToolsRequest(params=params), types.ListToolsResult)

    cursor = params.cursor if params is not None else None
    result = await (fresh.page("tools/list", cursor, send) if fresh is not None else send())
    offered = [tool.name for tool in result.tools]
    complete = (params is None or params.cursor is None) and result.next_cursor is None
    result = _sdk_compat.absorb_tool_listing(session, result, complete=complete)
    if dropped is not None and len(result.tools) != len(offered):
        kept = {tool.name for tool in result.tools}
        dropped.extend(name for name in offered if name not in kept)
    return result
