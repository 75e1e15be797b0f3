"""Per-thread diagnostics facts: append-only and durable, ``<dataDir>/threads/<id>.facts.jsonl``.

A fact is one compact JSON line appended with ``O_APPEND`` and fsynced; a torn last line (a crash mid-write)
is skipped when reading. Facts carry digests and sizes only, never a resource body (SPEC §6).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from app_server.logs import get_logger
from protocol.thread import ResourceReadFact

log = get_logger("app_server.read_model")


class ReadModel:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, thread_id: str) -> Path:
        return self.directory / f"{thread_id}.facts.jsonl"

    def append(self, thread_id: str, fact: ResourceReadFact) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        line = fact.model_dump_json().encode() + b"\n"
        fd = os.open(self.path(thread_id), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def facts(self, thread_id: str) -> list[ResourceReadFact]:
        try:
            data = self.path(thread_id).read_bytes()
        except FileNotFoundError:
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
