"""Moving the secrets of thread records into the OS keychain (SPEC §14), beside ``move_in``: a record written while
the secrets lived in files holds values (an inline server's, or an app server's from before records named them by
``***``). Each becomes ``***`` when the app's config of that server at the same destination keeps the field, else an
item of the keychain (written and read back first, as every value is), and the record is rewritten to name it.
"""

from __future__ import annotations

import json
from pathlib import Path

from mcp_runtime.config.edits import destination, to_wire
from mcp_runtime.config.rules import parse_server_config
from mcp_runtime.secrets.base import SecretStore, is_reference
from mcp_runtime.secrets.configs import REDACTED, forget, secret_fields, with_values
from mcp_runtime.storage import safe_fs
from mcp_runtime.storage.store import ConfigStore
from protocol.config import McpServerConfig
from protocol.jsonrpc import AppError

THREADS = "threads"
_RECORD_LIMIT = 4 << 20


def move_thread_records(store: SecretStore, configs: ConfigStore, data_dir: Path) -> int:
    """How many thread records were rewritten; a record that does not parse is left as it is. Blocks."""
    folder = data_dir / THREADS
    if not folder.is_dir():
        return 0
    moved = 0
    for path in sorted(folder.glob("thr_*.json")):
        rel = f"{THREADS}/{path.name}"
        try:
            document = json.loads(safe_fs.read_file(data_dir, rel, _RECORD_LIMIT) or b"")
            servers = {name: parse_server_config(name, wire) for name, wire in document["mcpServers"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError, AppError):
            continue
        written: dict[str, dict[str, str]] = {}
        changed = False
        try:
            for name, config in servers.items():
                recorded = _moved(store, configs, name, config, written.setdefault(name, {}))
                if recorded is not None:
                    document["mcpServers"][name] = to_wire(recorded)
                    changed = True
            if not changed:
                continue
            safe_fs.write_file(data_dir, rel, (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode())
        except BaseException:
            for name, items in written.items():
                forget(store, name, items)  # the record does not name them
            raise
        moved += 1
    return moved


def _moved(
    store: SecretStore, configs: ConfigStore, name: str, config: McpServerConfig, written: dict[str, str]
) -> McpServerConfig | None:
    """The config with its values moved (the items written added to ``written``); None when it holds no value."""
    values = {f: v for f, v in secret_fields(config).items() if not is_reference(v) and v != REDACTED}
    if not values:
        return None
    app = configs.get(name)
    same = app is not None and app.config.type == config.type and destination(app.config) == destination(config)
    kept = secret_fields(app.config) if same and app is not None else {}
    recorded: dict[str, str] = {}
    for field, value in values.items():
        if field in kept:
            recorded[field] = REDACTED
        else:
            recorded[field] = written[field] = store.keep(name, field, value)
    return with_values(config, recorded)
