"""A server's elicitation in a thread (SPEC §7, §16): which waiting tool call is asked (form or URL), and what its
answer is judged to be.

The answer is judged once, here (``resolve_answer``): the calling connection's channel (``channel``) reports the
judgement to it (``serverRequest/resolved``) and the runtime passes the same judgement upstream, so the client is
never told one thing while the server gets another.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import anyio
import structlog

from mcp_runtime.catalog.schemas import errors, non_finite, validator
from mcp_runtime.owners.deadline import CallDeadline
from mcp_runtime.owners.url_elicitation import UrlElicitations, acceptable_url
from protocol.elicitation import ElicitationFormSchema, ElicitationRequest, ServerRequestResolved, ValidationIssue

log = structlog.get_logger("mcp_runtime.elicitation")

Action = Literal["accept", "decline", "cancel"]
INVALID_RESPONSE = "invalidElicitationResponse"
MAX_ERRORS = 20


@functools.cache
def _form_check() -> Any:
    """The published ``ElicitationFormSchema`` (MCP's primitive schema definitions), as a client's guard checks it:
    a form outside it is declined upstream, never shown to a client that could not render it."""
    import jsonschema_rs
    from pydantic import TypeAdapter

    from protocol.schema_export import WireSchema

    schema = TypeAdapter(ElicitationFormSchema).json_schema(
        by_alias=True, mode="serialization", schema_generator=WireSchema
    )
    return jsonschema_rs.validator_for(schema, validate_formats=False, offline=True)


@dataclass(frozen=True)
class Resolution:
    """What the server is told (``action``, ``content``) and, for a cancel the daemon chose, why."""

    action: Action
    content: dict[str, Any] | None = None
    reason: str | None = None
    errors: tuple[dict[str, str], ...] = ()

    def resolved(self, thread_id: str, request_id: str) -> ServerRequestResolved:
        """The ``serverRequest/resolved`` notification that tells the asked client how its request ended."""
        issues = [ValidationIssue.model_validate(error) for error in self.errors]
        return ServerRequestResolved(
            thread_id=thread_id, request_id=request_id, action=self.action, reason=self.reason, errors=issues or None
        )

    def result(self) -> Any:
        """The SDK's ``ElicitResult`` passed upstream."""
        from mcp_types import ElicitResult

        if self.action == "accept":
            return ElicitResult(action="accept", content=self.content)
        return ElicitResult(action=self.action)


CANCELLED = Resolution("cancel")
"""No answer at all (connection closed, the call ended, the client answered with an error)."""
TIMED_OUT = Resolution("cancel", reason="timeout")
"""The call's own time ran out while the form was being shown to the client."""

Ending = Callable[[], Resolution]
"""What an elicitation cut off before its answer is resolved as: ``CANCELLED``, or ``TIMED_OUT``."""


class Asker(Protocol):
    """Where a call's elicitations go: the calling connection's channel (``owners/channel.py``), or a background
    task's view of it."""

    async def ask(self, request: ElicitationRequest, ending: Ending) -> Resolution: ...

    def notify(self, method: str, params: Any) -> int: ...


def _invalid(found: list[dict[str, str]]) -> Resolution:
    return Resolution("cancel", reason=INVALID_RESPONSE, errors=tuple(found[:MAX_ERRORS]))


def resolve_answer(answer: Any, schema: dict[str, Any] | None) -> Resolution:
    """The client's answer judged against the form it was shown: malformed, or ``accept`` content that does not
    fit ``requestedSchema``, is a cancel with the reason and the errors (never forwarded). A URL elicitation
    (``schema`` None) carries no content: ``accept`` only says the user agreed to open the URL."""
    if not isinstance(answer, dict):
        return _invalid([{"path": "", "message": "the answer is not an object"}])
    action = answer.get("action")
    if action not in ("accept", "decline", "cancel"):
        return _invalid([{"path": "action", "message": "action must be accept, decline or cancel"}])
    content = answer.get("content")
    if content is not None and not isinstance(content, dict):
        return _invalid([{"path": "content", "message": "content must be an object"}])
    if action != "accept":
        return Resolution(action)
    if schema is None:
        return Resolution("accept")
    from jsonschema.exceptions import SchemaError

    content = content if content is not None else {}
    try:
        problems = errors(validator(schema), content)
    except (SchemaError, TypeError, ValueError):  # the server's schema, which jsonschema cannot apply
        problems = [{"path": "", "message": "the requested schema cannot be checked"}]
    problems = problems or non_finite(content)
    if problems:
        return _invalid(problems)
    return Resolution("accept", content=content)


SETTLE_S = 5.0
"""How long an ended call waits for its elicitations to report how they ended (they only send a notification)."""


@dataclass(eq=False)
class Call:
    """One tool call in flight: the calling connection's channel, asked when the server elicits, and the
    elicitations it is waiting on."""

    owner: object
    server: str
    turn_id: str | None
    channel: Asker | None
    elicitations: set[anyio.CancelScope] = field(default_factory=set)
    deadline: CallDeadline | None = None
    task_id: str | None = None
    """The server-side task the call runs as, once created (its requests for input name it)."""
    timed_out: bool = False
    _settled: anyio.Event | None = None

    def task_started(self, task_id: str) -> None:
        self.task_id = task_id

    def ending(self) -> Resolution:
        return TIMED_OUT if self.timed_out else CANCELLED

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """An elicitation this call waits on (the call's deadline stops meanwhile), cancelled (and waited for)
        when the call ends."""
        with anyio.CancelScope() as scope:
            self.elicitations.add(scope)
            if self.deadline is not None:
                self.deadline.pause()
            try:
                yield
            finally:
                if self.deadline is not None:
                    self.deadline.resume()
                self.elicitations.discard(scope)
                if not self.elicitations and self._settled is not None:
                    self._settled.set()

    async def finish(self) -> None:
        """The call ended (answered, timed out or cancelled): the elicitations still waiting are cancelled, and
        the call's own answer waits until each has been resolved to its client (``serverRequest/resolved`` first,
        on every path). In the 2025 era they run in the session's task, not the call's, hence the wait."""
        if not self.elicitations:
            return
        self._settled = anyio.Event()
        for scope in tuple(self.elicitations):
            scope.cancel()
        with anyio.move_on_after(SETTLE_S, shield=True):
            await self._settled.wait()


current_call: contextvars.ContextVar[Call | None] = contextvars.ContextVar("mcp_thread_call", default=None)
"""The call whose task is running: in the 2026 era the SDK drives input-required rounds inside that task."""


RELATED_TASK = "io.modelcontextprotocol/related-task"


def attribute(owner: object, server: str, calls: list[Call], params: Any = None) -> Call | None:
    """The one waiting call an elicitation belongs to, or None (then it is declined): the running call in the
    2026 era; in the 2025 era the request arrives on the session's own loop, so it is the call whose task it
    names (a task's request for input says which task), else the single call in flight on that server."""
    call = current_call.get()
    if call is not None:
        return call if call.owner is owner and call.server == server and call in calls else None
    meta = getattr(params, "meta", None)
    related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
    task_id = related.get("taskId") if isinstance(related, dict) else None
    if isinstance(task_id, str):
        return next((call for call in calls if call.task_id == task_id), None)
    return calls[0] if len(calls) == 1 else None


async def elicit(thread_id: str, server: str, call: Call | None, params: Any, urls: UrlElicitations) -> Any:
    """Ask the calling client and pass its judged answer upstream. A form outside MCP's primitive fields, or a URL
    that fails the checks, is declined without asking anyone."""
    from mcp_types import ElicitResult

    if call is None or call.channel is None:
        log.info("elicitation_declined_unattributed", server=server, thread_id=thread_id)
        return ElicitResult(action="decline")
    asked: dict[str, Any]  # what the request asks, by mode: the URL to open and its id, or the form to fill
    if getattr(params, "mode", "form") == "url":
        if not acceptable_url(params.url):
            log.info("elicitation_declined_unsafe_url", server=server, thread_id=thread_id)
            return ElicitResult(action="decline")
        asked = {"mode": "url", "url": params.url, "elicitation_id": params.elicitation_id}
        urls.remember(server, params.elicitation_id, call.channel.notify)
    else:
        raw_schema = params.requested_schema
        schema: Any = (
            raw_schema.model_dump(by_alias=True, mode="json", exclude_none=True)
            if hasattr(raw_schema, "model_dump")
            else raw_schema
        )
        if not _form_check().is_valid(schema):
            log.info("elicitation_declined_unsupported_form", server=server, thread_id=thread_id)
            return ElicitResult(action="decline")
        asked = {"mode": "form", "requested_schema": schema}
    request = ElicitationRequest(
        thread_id=thread_id, turn_id=call.turn_id, server_name=server, message=params.message, **asked
    )
    resolution = CANCELLED
    with call.waiting():
        resolution = await call.channel.ask(request, call.ending)
    return resolution.result()
