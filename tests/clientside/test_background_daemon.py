"""Background calls (SPEC §16) through the real daemon against the SDK fixture server: answered at once with a
task, read later, listed, cancelled (upstream too), asking the starting connection for input, and bounded."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon, DaemonError
from testing.fixtures import fixture_config
from testing.threads import START_TIMEOUT, call, start_thread

pytestmark = pytest.mark.daemon


def background(daemon: Daemon, thread_id: str, tool: str, arguments: dict[str, Any], **extra: Any) -> Any:
    params = {"threadId": thread_id, "server": "fx", "tool": tool, "arguments": arguments, "background": True}
    return daemon.request("mcpServer/tool/call", {**params, **extra}, timeout=START_TIMEOUT)["task"]


def updated(daemon: Daemon, task_id: str, status: str) -> Any:
    return daemon.wait_notification(
        "mcpServer/task/updated",
        lambda p: p["task"]["taskId"] == task_id and p["task"]["status"] == status,
        timeout=START_TIMEOUT,
    )


def test_a_background_call_answers_at_once_and_is_read_later(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    task = background(daemon, thread_id, "echo", {"text": "later"})
    assert task["status"] == "working" and task["createdAt"].endswith("Z")
    done = updated(daemon, task["taskId"], "completed")
    assert done["threadId"] == thread_id
    params = {"threadId": thread_id, "taskId": task["taskId"]}
    result = daemon.request("mcpServer/task/result", params, timeout=START_TIMEOUT)
    assert result["content"][0]["text"] == "later" and "later" in result["projection"]["text"]
    listed = daemon.request("mcpServer/task/list", {"threadId": thread_id})["data"]
    assert [(t["taskId"], t["status"]) for t in listed] == [(task["taskId"], "completed")]
    assert daemon.request("mcpServer/task/get", params)["task"]["status"] == "completed"


def test_a_background_call_that_fails_keeps_its_error(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    task = background(daemon, thread_id, "add", {"a": "not a number"})
    assert updated(daemon, task["taskId"], "failed")["error"]["reason"] == "invalidArguments"
    try:
        daemon.request("mcpServer/task/result", {"threadId": thread_id, "taskId": task["taskId"]})
    except DaemonError as exc:
        assert exc.reason == "invalidArguments"
    else:
        raise AssertionError("the failed task's result should be its error")


def test_cancelling_a_background_call(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    task = background(daemon, thread_id, "sleep", {"ms": 60_000}, timeoutMs=120_000)
    params = {"threadId": thread_id, "taskId": task["taskId"]}
    waiting = daemon.start_request("mcpServer/task/result", params)
    assert daemon.request("mcpServer/task/cancel", params, timeout=START_TIMEOUT)["task"]["status"] == "cancelled"
    assert daemon.wait_response(waiting)["error"]["data"]["reason"] == "cancelled"
    assert call(daemon, thread_id, "fx", "echo", {"text": "free"})["content"][0]["text"] == "free"


def test_a_background_call_asks_the_connection_that_started_it(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    task = background(daemon, thread_id, "ask", {"question": "Who?"})
    request = daemon.wait_server_request("mcpServer/elicitation/request", timeout=START_TIMEOUT)
    assert request["params"]["message"] == "Who?"
    updated(daemon, task["taskId"], "input_required")
    daemon.answer(request["id"], {"action": "decline"})
    updated(daemon, task["taskId"], "completed")
    result = daemon.request("mcpServer/task/result", {"threadId": thread_id, "taskId": task["taskId"]})
    assert result["content"][0]["text"] == '{"action": "decline"}'


def test_unknown_tasks_and_the_running_limit(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    try:
        daemon.request("mcpServer/task/get", {"threadId": thread_id, "taskId": "task-nope"})
    except DaemonError as exc:
        assert (exc.code, exc.reason, exc.data["taskId"]) == (-32010, "unknownTask", "task-nope")
    else:
        raise AssertionError("an unknown task must be refused")
    call(daemon, thread_id, "fx", "echo", {"text": "up"})
    for _ in range(64):
        background(daemon, thread_id, "sleep", {"ms": 60_000}, timeoutMs=120_000)
    try:
        background(daemon, thread_id, "sleep", {"ms": 60_000})
    except DaemonError as exc:
        assert (exc.code, exc.reason) == (-32013, "tooManyTasks")
    else:
        raise AssertionError("the 65th running task must be refused")
    daemon.request("thread/archive", {"threadId": thread_id}, timeout=START_TIMEOUT)


def kept_results(data_dir: Path, thread_id: str, text: str) -> list[Path]:
    """The entries of the thread's archive that hold a result with ``text`` (a finished task's result is there)."""
    folder = data_dir / "threads" / f"{thread_id}.archive"
    entries = sorted(folder.glob("ctx_*")) if folder.is_dir() else []
    return [entry for entry in entries if text.encode() in entry.read_bytes()]


def test_a_finished_task_is_forgotten_after_its_ttl(daemon: Daemon, data_dir: Path) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    task = background(daemon, thread_id, "echo", {"text": "brief-result"}, ttlMs=1500)
    assert task["ttlMs"] == 1500
    updated(daemon, task["taskId"], "completed")
    params = {"threadId": thread_id, "taskId": task["taskId"]}
    [entry] = kept_results(data_dir, thread_id, "brief-result")  # the result is in the archive, read from there
    assert entry.stat().st_mode & 0o777 == 0o600
    assert daemon.request("mcpServer/task/result", params)["content"][0]["text"] == "brief-result"
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            daemon.request("mcpServer/task/get", params)
        except DaemonError as exc:
            assert exc.reason == "unknownTask"
            break
        assert time.monotonic() < deadline, "the task outlived its TTL"
        time.sleep(0.1)
    assert daemon.request("mcpServer/task/list", {"threadId": thread_id})["data"] == []
    while kept_results(data_dir, thread_id, "brief-result"):
        assert time.monotonic() < deadline, "the task's result outlived it in the archive"
        time.sleep(0.05)


def test_archiving_the_thread_forgets_its_tasks_results(daemon: Daemon, data_dir: Path) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    task = background(daemon, thread_id, "echo", {"text": "kept-until-archived"})
    assert task["ttlMs"] == 3_600_000  # the default: an hour
    updated(daemon, task["taskId"], "completed")
    assert kept_results(data_dir, thread_id, "kept-until-archived")
    daemon.request("thread/archive", {"threadId": thread_id}, timeout=START_TIMEOUT)
    assert not kept_results(data_dir, thread_id, "kept-until-archived")
