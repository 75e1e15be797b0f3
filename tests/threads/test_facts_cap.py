"""A hostile server cannot grow a thread's facts without bound (SPEC §4, §6): a read of many contents leaves
one bounded fact (its first 64 refs and the count), the thread's facts file stops at its cap with ``thread/read``
saying so, and ``thread/read`` pages the facts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon
from testing.fixtures import fixture_config
from testing.threads import start_thread

pytestmark = pytest.mark.daemon

CONTENTS = 100
FACTS_CAP = 1024 * 1024


def read_many(daemon: Daemon, thread_id: str) -> None:
    params = {"threadId": thread_id, "server": "fx", "uri": "fixture://many"}
    result = daemon.request("mcpServer/resource/read", params, timeout=60)
    assert len(result["contents"]) == CONTENTS


def all_facts(daemon: Daemon, thread_id: str, limit: int) -> tuple[list[dict[str, Any]], bool]:
    facts: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = {"threadId": thread_id, "limit": limit, **({"cursor": cursor} if cursor else {})}
        page = daemon.request("thread/read", params)
        assert len(page["facts"]) <= limit
        facts += page["facts"]
        cursor = page.get("nextCursor")
        if cursor is None:
            return facts, page["factsTruncated"]


def test_a_read_of_many_contents_leaves_one_bounded_fact(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config("--many-contents", str(CONTENTS))})
    thread_id = start_thread(daemon, servers=["fx"])
    read_many(daemon, thread_id)
    read = daemon.request("thread/read", {"threadId": thread_id})
    [fact] = read["facts"]
    assert (len(fact["contentRefs"]), fact["contentCount"]) == (64, CONTENTS)
    assert fact["mimeTypes"] == []  # each of its types is longer than a fact keeps
    assert read["factsTruncated"] is False and read.get("nextCursor") is None


def test_the_facts_file_stops_at_its_cap_and_thread_read_pages_it(daemon: Daemon, data_dir: Path) -> None:
    daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config("--many-contents", str(CONTENTS))})
    thread_id = start_thread(daemon, servers=["fx"])
    facts_file = data_dir / "threads" / f"{thread_id}.facts.jsonl"
    read_many(daemon, thread_id)
    per_fact = facts_file.stat().st_size
    reads = FACTS_CAP // per_fact + 3  # enough to pass the cap
    for _ in range(reads):
        read_many(daemon, thread_id)
    assert facts_file.stat().st_size <= FACTS_CAP + 64
    facts, truncated = all_facts(daemon, thread_id, limit=25)
    assert truncated is True
    assert FACTS_CAP // per_fact - 1 <= len(facts) < reads + 1
    assert {f["contentCount"] for f in facts} == {CONTENTS}
    # Reads after the cap leave nothing more, and the daemon keeps serving them.
    read_many(daemon, thread_id)
    assert len(all_facts(daemon, thread_id, limit=1000)[0]) == len(facts)
