"""Moving secrets kept in files into the OS keychain, on the first start that has one (SPEC §14).

Each value is written to the keychain, read back and compared (``KeychainSecretStore.keep``), and only then is the
file rewritten to name it; a crash in between leaves the value in both places, never in neither, and the next
start moves it again. A keychain that is locked moves nothing and is tried again at the next start.
"""

from __future__ import annotations

from pathlib import Path

import structlog

from mcp_runtime.secrets.base import is_reference
from mcp_runtime.secrets.configs import secret_fields
from mcp_runtime.secrets.store import secret_store
from mcp_runtime.storage.store import ConfigStore
from protocol.jsonrpc import AppError

CREDENTIALS_FILE = "credentials.json"

log = structlog.get_logger("mcp_runtime.secrets")


def move_secrets_in(store: ConfigStore, data_dir: Path) -> int:
    """Move every secret still in ``mcps.json``, a thread record or ``credentials.json`` into the keychain; how many
    servers', records' and logins' secrets moved. Blocks: run it in a worker thread. Nothing to do with the file
    store."""
    if secret_store().kind != "keychain":
        return 0
    moved = 0
    try:
        for server in store.list():
            if any(not is_reference(value) for value in secret_fields(server.config).values()):
                store.edit(server.name, lambda config: config)  # the store seals every value it writes
                moved += 1
        from mcp_runtime.secrets.thread_records import move_thread_records

        moved += move_thread_records(secret_store(), store, data_dir)
        if not (data_dir / CREDENTIALS_FILE).exists():
            return moved
        from mcp_runtime.oauth.credentials import SECRET_FIELDS, CredentialStore  # the OAuth package only if needed

        credentials = CredentialStore(data_dir)
        for name, url in credentials.in_files(SECRET_FIELDS):
            credentials.update(name, url, lambda entry: entry)
            moved += 1
    except AppError as exc:
        log.warning("secrets_not_moved_in", reason=exc.reason, moved=moved)
        return moved
    finally:
        if moved:
            log.info("secrets_moved_in", count=moved, backend=secret_store().backend)
    return moved
