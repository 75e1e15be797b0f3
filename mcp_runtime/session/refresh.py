"""A slot's catalog: every page of tools, prompts and resources, validated as one registration, and its refresh.

A ``list_changed`` notification marks a kind dirty; bursts collapse into one refresh. Tools are refreshed only
while no call is in flight on the slot (:class:`CallGate`), so the schema a call was validated against never
changes under it.
"""

from __future__ import annotations

import functools
import hashlib
import weakref
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import structlog

from mcp_runtime.catalog.headers import listed_tools
from mcp_runtime.catalog.names import check_tool_names
from mcp_runtime.catalog.schemas import schema_problem
from mcp_runtime.limits import MAX_CATALOG_BYTES, MAX_DISCOVERY_PAGES, MAX_TOOLS_PER_SERVER
from mcp_runtime.session.state import dump
from protocol.encoding import compact
from protocol.jsonrpc import AppError
from protocol.status import McpTool

if TYPE_CHECKING:
    from mcp.client.session import ClientSession
    from pydantic import TypeAdapter

    from mcp_runtime.session.fresh import FreshReader

log = structlog.get_logger("mcp_runtime.catalog_refresh")

REFRESH_DEBOUNCE_S = 0.05
"""Bursts of list_changed notifications collapse into one refresh."""
ANNOUNCE_WINDOW_S = 0.25
"""At most one refreshed catalog (and so one ``mcp:*_updated`` announcement to each client) per server in this
window: a storm of ``list_changed`` costs clients a few announcements a second, the last state always among them."""
REFRESH_PACE = 4.0
"""After a refresh that took ``t``, the next waits ``REFRESH_PACE * t`` (at most ``MAX_REFRESH_PAUSE_S``): a server
announcing changes without end keeps its refreshes to a fifth of the time, whatever it sends."""
MAX_REFRESH_PAUSE_S = 2.0
KINDS = frozenset({"tools", "prompts", "resources"})


def _schemas_problem(tools: Iterable[tuple[str, Any, Any]]) -> None:
    """Each tool's input schema and (when present) output schema must be a valid JSON Schema."""
    for name, input_schema, output_schema in tools:
        for key, schema in (("inputSchema", input_schema), ("outputSchema", output_schema)):
            if schema is None and key == "outputSchema":
                continue
            problem = schema_problem(schema)
            if problem is not None:
                raise AppError("startupFailed", f"tool {name} has an invalid {key}: {problem}", tool=name)


def _check_limits(count: int, size: int) -> None:
    if count > MAX_TOOLS_PER_SERVER:
        raise AppError(
            "tooManyTools", f"server lists {count} tools (max {MAX_TOOLS_PER_SERVER})", limit=MAX_TOOLS_PER_SERVER
        )
    if size > MAX_CATALOG_BYTES:
        raise AppError(
            "catalogTooLarge", f"tool catalog is {size} bytes (max {MAX_CATALOG_BYTES})", limit=MAX_CATALOG_BYTES
        )


def validate_tools(server: str, tools: list[dict[str, Any]]) -> list[McpTool]:
    """SPEC §5 limits and names (the catalog module decides names); any violation fails the registration."""
    _check_limits(len(tools), len(compact(tools)))
    check_tool_names(server, [str(raw.get("name", "")) for raw in tools])
    _schemas_problem((str(raw.get("name", "")), raw.get("inputSchema"), raw.get("outputSchema")) for raw in tools)
    return [McpTool.model_validate(raw) for raw in tools]


class ToolList(list[McpTool]):
    """A validated tool list, shared by every session that listed exactly the same tools; never mutated."""


_VALIDATED: weakref.WeakValueDictionary[bytes, ToolList] = weakref.WeakValueDictionary()
"""Validated lists by the digest of their JSON while some session holds them: servers list the same tools on
every connect (restarts, threads, several names for one server), so the schema checks and models are made once,
and a list no session holds any more is forgotten with it."""


@functools.cache
def _adapters() -> tuple[TypeAdapter[list[Any]], TypeAdapter[list[McpTool]]]:
    from mcp_types import Tool
    from pydantic import TypeAdapter

    return TypeAdapter(list[Tool]), TypeAdapter(list[McpTool])


def validate_sdk_tools(server: str, tools: list[Any]) -> list[McpTool]:
    """:func:`validate_tools` for the SDK's tool models: one JSON dump sizes the list and keys the shared copy."""
    sdk, ours = _adapters()
    try:
        text = sdk.dump_json(tools, by_alias=True, exclude_none=True)
    except ValueError:  # text that is not valid Unicode (lone surrogates): the plain path escapes it
        return validate_tools(server, [dump(tool) for tool in tools])
    _check_limits(len(tools), len(text))
    check_tool_names(server, [tool.name for tool in tools])
    digest = hashlib.sha256(text).digest()
    shared = _VALIDATED.get(digest)
    if shared is None:
        _schemas_problem((tool.name, tool.input_schema, tool.output_schema) for tool in tools)
        shared = _VALIDATED[digest] = ToolList(ours.validate_json(text))
    return shared


async def pages(fetch: Callable[[str | None], Awaitable[Any]], attr: str, limit: int | None) -> list[Any]:
    """Every page of one list, bounded by the page and tool limits."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_DISCOVERY_PAGES):
        page = await fetch(cursor)
        items.extend(getattr(page, attr))
        if limit is not None and len(items) > limit:
            raise AppError("tooManyTools", f"server lists more than {limit} tools", limit=limit)
        cursor = page.next_cursor
        if not cursor:
            return items
    raise AppError(
        "tooManyPages", f"{attr} listing has more than {MAX_DISCOVERY_PAGES} pages", limit=MAX_DISCOVERY_PAGES
    )


def _params(cursor: str | None) -> Any:
    import mcp_types as types

    return types.PaginatedRequestParams(cursor=cursor) if cursor else None


async def list_tools(
    session: ClientSession, dropped: list[str] | None = None, fresh: FreshReader | None = None
) -> list[Any]:
    """Every page of tools; those the SDK left out for invalid ``x-mcp-header`` annotations go to ``dropped``."""
    return await pages(lambda c: listed_tools(session, _params(c), dropped, fresh), "tools", MAX_TOOLS_PER_SERVER)


def _listed(
    fresh: FreshReader | None, method: str, send: Callable[[str | None], Awaitable[Any]]
) -> Callable[[str | None], Awaitable[Any]]:
    """A list method's page fetch, answered from a fresh listing when ``fresh`` has one (SPEC §16)."""
    if fresh is None:
        return send
    return lambda cursor: fresh.page(method, cursor, lambda: send(cursor))


async def fetch_catalog(
    session: ClientSession, server: str, kinds: set[str] | frozenset[str], fresh: FreshReader | None = None
) -> dict[str, Any]:
    """Every page of the requested lists, as ``ConnectionState`` fields; the tools validated as one registration.
    ``fresh`` answers the lists still within their TTL and keeps what the server says stays fresh."""
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    caps = session.server_capabilities or types.ServerCapabilities()

    async def optional(fetch: Callable[[str | None], Awaitable[Any]], attr: str) -> list[dict[str, Any]]:
        try:
            return [dump(item) for item in await pages(fetch, attr, None)]
        except MCPError as exc:
            if exc.code == types.METHOD_NOT_FOUND:
                return []
            raise

    async def tool_list() -> dict[str, Any]:
        dropped: list[str] = []
        tools = await list_tools(session, dropped, fresh) if caps.tools is not None else []
        await anyio.lowlevel.checkpoint()  # parsing the list and checking it are two stretches, never one
        if dropped:
            log.warning("tools_dropped_invalid_headers", server=server, tools=dropped[:16])
        return {"tools": validate_sdk_tools(server, tools), "dropped_tools": tuple(dropped)}

    async def prompt_list() -> dict[str, Any]:
        listed = _listed(fresh, "prompts/list", lambda c: session.list_prompts(params=_params(c)))
        return {"prompts": await optional(listed, "prompts")}

    async def resource_lists() -> dict[str, Any]:
        resources = _listed(fresh, "resources/list", lambda c: session.list_resources(params=_params(c)))
        templates = _listed(
            fresh, "resources/templates/list", lambda c: session.list_resource_templates(params=_params(c))
        )
        return {
            "resources": await optional(resources, "resources"),
            "resource_templates": await optional(templates, "resource_templates"),
        }

    jobs: list[Callable[[], Awaitable[dict[str, Any]]]] = []
    if "tools" in kinds:
        jobs.append(tool_list)
    if "prompts" in kinds and caps.prompts is not None:
        jobs.append(prompt_list)
    if "resources" in kinds and caps.resources is not None:
        jobs.append(resource_lists)
    result: dict[str, Any] = {}
    for part in await concurrently(jobs):
        result.update(part)
    return result


async def concurrently(jobs: list[Callable[[], Awaitable[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """Every job at once (a catalog's lists are independent round trips; the slowest sets the time), and the first
    failure raised as itself once the others are cancelled."""
    if len(jobs) == 1:
        return [await jobs[0]()]
    results: list[dict[str, Any]] = [{} for _ in jobs]
    failures: list[Exception] = []

    async def run(index: int, job: Callable[[], Awaitable[dict[str, Any]]], scope: anyio.CancelScope) -> None:
        try:
            results[index] = await job()
        except Exception as exc:
            failures.append(exc)
            scope.cancel()

    async with anyio.create_task_group() as tasks:
        for index, job in enumerate(jobs):
            tasks.start_soon(run, index, job, tasks.cancel_scope)
    if failures:
        raise failures[0]
    return results


class CallGate:
    """Counts the calls in flight on a slot; a tool refresh waits until none is."""

    def __init__(self) -> None:
        self._in_flight = 0
        self._idle: anyio.Event | None = None
        """Made only while a refresh waits: a call costs a counter, not an event."""

    def __enter__(self) -> None:
        self._in_flight += 1

    def __exit__(self, *_exc: object) -> None:
        self._in_flight -= 1
        if not self._in_flight and self._idle is not None:
            self._idle.set()
            self._idle = None

    async def idle(self) -> None:
        while self._in_flight:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()


class CatalogRefresher:
    """Debounced, paced refresh of the dirty kinds; ``apply`` installs a result, ``fail`` ends the session.

    A storm of ``list_changed`` is coalesced: at most one refresh runs and one is pending, however many
    notifications arrive.
    """

    def __init__(self, server: str, gate: CallGate) -> None:
        self._server = server
        self._gate = gate
        self._dirty: set[str] = set()
        self._event = anyio.Event()
        self._applied = float("-inf")

    def mark(self, kind: str) -> None:
        self._dirty.add(kind)
        self._event.set()

    async def run(
        self,
        session: ClientSession,
        apply: Callable[[set[str], dict[str, Any]], None],
        fail: Callable[[AppError], None],
        fresh: FreshReader | None = None,
    ) -> None:
        """Refresh the dirty kinds until cancelled; what is read is kept for its TTL, never served (``fresh``)."""
        from mcp.shared.exceptions import MCPError

        pause = REFRESH_DEBOUNCE_S
        while True:
            await self._event.wait()
            await anyio.sleep(max(pause, self._applied + ANNOUNCE_WINDOW_S - anyio.current_time()))
            await self._gate.idle()
            self._event = anyio.Event()
            kinds, self._dirty = self._dirty, set()
            began = anyio.current_time()
            try:
                catalog = await fetch_catalog(session, self._server, kinds, fresh)
            except AppError as exc:
                fail(exc)  # an invalid catalog fails the registration, as at connect
                return
            except (MCPError, TimeoutError) as exc:
                log.warning("catalog_refresh_failed", server=self._server, error=type(exc).__name__)
            else:
                apply(kinds, catalog)
                self._applied = anyio.current_time()
            took = anyio.current_time() - began
            pause = max(REFRESH_DEBOUNCE_S, min(MAX_REFRESH_PAUSE_S, REFRESH_PACE * took))
