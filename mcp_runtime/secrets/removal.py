"""Before a server is deleted: its items in the OS keychain must be removable then (SPEC §14, "delete removes
items"). A locked keychain cannot remove them, and a delete that went on would leave values no file names, so the
delete is refused with ``secretStoreLocked`` before anything changes, as an update whose write fails is."""

from __future__ import annotations

from pathlib import Path

from mcp_runtime.secrets.base import is_reference
from mcp_runtime.secrets.configs import secret_fields
from mcp_runtime.secrets.store import secret_store
from protocol.config import McpServerConfig


def check_removable(data_dir: Path, name: str, config: McpServerConfig) -> None:
    """``secretStoreLocked`` when the server keeps items (its config's or its logins') and the keychain does not
    answer now; blocks (run it in a worker thread). Nothing to check with the file store."""
    store = secret_store()
    if store.kind != "keychain":
        return
    if not any(is_reference(value) for value in secret_fields(config).values()):
        from mcp_runtime.oauth.credentials import CredentialStore

        if not CredentialStore(data_dir).keeps_secrets(name):
            return
    store.check()
