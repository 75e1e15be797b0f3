"""Per-thread diagnostics facts: append-only and durable, ``<dataDir>/threads/<id>.facts.jsonl``.

A fact is one compact JSON line appended with ``O_APPEND`` and fsynced; a torn last line (a crash mid-write)
is skipped when reading. Facts carry digests and sizes only, never a resource body (SPEC §6). The file is
reached through the sealed data dir: a planted symlink fails with ``unsafePath`` and is never followed.

A hostile server decides how many contents a read returns and what their MIME types say, so a fact keeps at most
64 refs and 16 short MIME types, and a thread's file stops growing at 1 MiB (``thread/read`` says its facts are
truncated): reading them back is then always a small, bounded read, paged to the client.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from app_server.process.logs import get_logger
from mcp_runtime import safe_fs
from protocol.encoding import model_json
from protocol.jsonrpc import AppError
from protocol.thread import ResourceReadFact

log = get_logger("app_server.read_model")

FOLDER = "threads"
MAX_FACT_REFS = 64
MAX_FACT_MIME_TYPES = 16
MAX_MIME_TYPE_CHARS = 127
TRUNCATED_LINE = b'{"kind":"factsTruncated"}\n'
"""Written once, past the cap, when the first fact is not kept."""
FACTS_CAP_BYTES = 1024 * 1024
"""A thread's facts file never grows past this; reads after it leave no fact."""


@dataclass(frozen=True)
class Facts:
    """A thread's facts, oldest first, and whether its file reached the cap."""

    facts: list[ResourceReadFact]
    truncated: bool


def bounded(fact: ResourceReadFact) -> ResourceReadFact:
    """The fact as kept: its first refs and short MIME types only, the count of contents when refs were left out."""
    mime_types = [mime for mime in fact.mime_types if len(mime) <= MAX_MIME_TYPE_CHARS][:MAX_FACT_MIME_TYPES]
    if len(fact.content_refs) <= MAX_FACT_REFS and mime_types == fact.mime_types:
        return fact
    count = len(fact.content_refs) if len(fact.content_refs) > MAX_FACT_REFS else None
    return fact.model_copy(
        update={"content_refs": fact.content_refs[:MAX_FACT_REFS], "mime_types": mime_types, "content_count": count}
    )


class ReadModel:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.directory = data_dir / FOLDER

    @staticmethod
    def relative(thread_id: str) -> str:
        return f"{FOLDER}/{thread_id}.facts.jsonl"

    def path(self, thread_id: str) -> Path:
        return self.data_dir / self.relative(thread_id)

    def append(self, thread_id: str, fact: ResourceReadFact) -> None:
        line = model_json(bounded(fact)) + b"\n"
        try:
            kept = safe_fs.append(self.data_dir, self.relative(thread_id), line, cap=FACTS_CAP_BYTES)
        except AppError as exc:
            if exc.reason != "storageFull":
                raise
            log.warning("fact_not_kept", thread_id=thread_id, reason="storageFull")  # the read itself succeeded
            return
        if not kept:
            marked = safe_fs.append(
                self.data_dir, self.relative(thread_id), TRUNCATED_LINE, cap=FACTS_CAP_BYTES + len(TRUNCATED_LINE)
            )
            if marked:
                log.info("facts_capped", thread_id=thread_id, cap_bytes=FACTS_CAP_BYTES)

    def facts(self, thread_id: str) -> Facts:
        limit = FACTS_CAP_BYTES + len(TRUNCATED_LINE)
        data = safe_fs.read_file(self.data_dir, self.relative(thread_id), limit=limit)
        if data is None:
            return Facts([], truncated=False)
        truncated = len(data) > limit  # a file from before the cap: its first megabyte only
        data = data[:limit]
        facts: list[ResourceReadFact] = []
        for line in data.splitlines():
            if not line.strip():
                continue
            if line + b"\n" == TRUNCATED_LINE:
                truncated = True
                continue
            try:
                facts.append(ResourceReadFact.model_validate(json.loads(line)))
            except ValueError:
                log.warning("fact_line_skipped", thread_id=thread_id)
        return Facts(facts, truncated)
