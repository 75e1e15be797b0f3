"""What a thread record's ``***`` stands for: the secrets the app's config of that server records now, while it has
the thread's destination (a kept value never follows a server elsewhere, SPEC §5)."""

from __future__ import annotations

import threading
from pathlib import Path

from mcp_runtime.config.edits import destination
from mcp_runtime.secrets.configs import secret_fields
from mcp_runtime.secrets.store import AppSecrets
from mcp_runtime.storage.store import ConfigStore
from protocol.config import McpServerConfig
from protocol.jsonrpc import AppError


def stored_secrets(data_dir: Path) -> AppSecrets:
    """The lookup over the data dir's store (its own reader: lookups run in worker threads)."""
    lock = threading.Lock()
    reader: list[ConfigStore] = []

    def lookup(name: str, config: McpServerConfig) -> dict[str, str]:
        with lock:
            if not reader:
                reader.append(ConfigStore(data_dir))
            try:
                server = reader[0].get(name)
            except AppError:
                return {}
        if server is None or server.config.type != config.type or destination(server.config) != destination(config):
            return {}
        return secret_fields(server.config)

    return lookup
