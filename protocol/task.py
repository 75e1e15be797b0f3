"""Background tool calls (SPEC §16): a call left running in its thread and read later, and its notifications.

`mcpServer/tool/call {…, background: true}` answers at once with the task; `mcpServer/task/*` list, read, wait
for and cancel a thread's tasks; `mcpServer/task/updated` tells the connection that started one how it goes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, RootModel

from protocol.base import WireModel
from protocol.errors import ErrorDetails
from protocol.tool import ToolCallResult

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]


class TaskInfo(WireModel):
    """One background call: where it is, and what it runs."""

    task_id: str = Field(description="The task's id in its thread.")
    status: TaskStatus = Field(
        description="`working`, `input_required` (a form waits on the user), `completed`, `failed` or `cancelled`."
    )
    created_at: str = Field(description="When it started (ISO 8601, UTC).")
    last_updated_at: str | None = Field(default=None, description="When its status last changed (ISO 8601, UTC).")
    status_message: str | None = Field(default=None, description="What it is doing, in plain words.")
    server: str | None = Field(default=None, description="The server running the tool.")
    tool: str | None = Field(default=None, description="The tool's name on that server.")
    ttl_ms: int | None = Field(
        default=None, description="How long it is kept once finished, in milliseconds (then `unknownTask`)."
    )


class BackgroundCall(WireModel):
    """The answer to a background `mcpServer/tool/call`: the task, at once."""

    task: TaskInfo = Field(description="The task now running.")


class ToolCallAnswer(RootModel[ToolCallResult | BackgroundCall]):
    """`mcpServer/tool/call`'s answer: the result, or with `background: true` the task that will produce it."""


class TaskListParams(WireModel):
    """`mcpServer/task/list`: the background calls of a thread (running, and finished ones still kept)."""

    thread_id: str = Field(min_length=1, description="The thread.")


class TaskListResult(WireModel):
    """The thread's tasks, oldest first."""

    data: list[TaskInfo] = Field(description="The tasks.")


class TaskParams(WireModel):
    """`mcpServer/task/get|result|cancel`: one task of a thread."""

    thread_id: str = Field(min_length=1, description="The thread that started it.")
    task_id: str = Field(min_length=1, max_length=64, description="The task.")


class TaskResult(WireModel):
    """`mcpServer/task/get` and `mcpServer/task/cancel`: the task as it is now."""

    task: TaskInfo = Field(description="The task.")


class TaskUpdated(WireModel):
    """`mcpServer/task/updated`: a background call's status changed (sent to the connection that started it)."""

    thread_id: str = Field(description="The thread of the task.")
    task: TaskInfo = Field(description="The task as it is now.")
    error: ErrorDetails | None = Field(default=None, description="With `failed`: why, as the call's error data.")
