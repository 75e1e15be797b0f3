"""Per-thread diagnostics facts: append-only and durable, ``<dataDir>/threads/<id>.facts.jsonl``.

A fact is one compact JSON line appended with ``O_APPEND`` and fsynced; a torn last line (a crash mid-write)
is skipped when reading. Facts carry digests and sizes only, never a resource body (SPEC §6). The file is
reached through the sealed data dir: a planted symlink fails with ``unsafePath`` and is never followed.
"""

from __future__ import annotations

import json
from pathlib import Path

from app_server.process.logs import get_logger
from mcp_runtime import safe_fs
from protocol.thread import ResourceReadFact

log = get_logger("app_server.read_model")

FOLDER = "threads"


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
        safe_fs.append(self.data_dir, self.relative(thread_id), fact.model_dump_json().encode() + b"\n")

    def facts(self, thread_id: str) -> list[ResourceReadFact]:
        data = safe_fs.read_file(self.data_dir, self.relative(thread_id))
        if data is None:
            return []
        facts: list[ResourceReadFact] = []
        for line in data.splitlines():
            if not line.strip():
                continue
            try:
                facts.append(ResourceReadFact.model_validate(json.loads(line)))
            except ValueError:
                log.warning("skipped an unreadable fact line", thread_id=thread_id)
        return facts
