"""One secret-name rule (``protocol.secrets``): the config rules, the logs and the trace call the same names secret,
and no module keeps a list of its own."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from mcp_runtime import check_server
from protocol.config import HttpServerConfig
from protocol.jsonrpc import AppError
from protocol.secrets import SECRET_NAME_PARTS, is_secret_name

pytestmark = pytest.mark.daemon

ROOT = Path(__file__).resolve().parents[2]
SECRET = ["private_key", "api-key", "X-Api-Key", "auth", "Authorization", "Proxy-Authorization", "Cookie",
          "X-Session-Id", "clientSecret", "refresh_token", "PASSWORD", "passwd", "x-credential"]  # fmt: skip
PLAIN = ["X-Title", "User-Agent", "name", "text", "X-Request-Id", "question"]


def _header_is_refused(name: str) -> bool:
    config = HttpServerConfig.model_validate({"type": "http", "url": "https://x.example/mcp", "headers": {name: "v"}})
    try:
        check_server("s", config)
    except AppError as exc:
        return exc.reason == "inlineSecret"
    return False


def _log_masks(name: str) -> bool:
    from app_server.process.logs import _redact

    return _redact(None, "info", {"event": "e", name: "v"})[name] == "***"


def _trace_masks(name: str) -> bool:
    from app_server.wire.trace import redact

    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": {name: {"deep": ["v"]}}}
    return redact(message)["params"][name] == "***"


@pytest.mark.parametrize("name", SECRET + PLAIN)
def test_config_rules_logs_and_trace_agree(name: str) -> None:
    expected = name in SECRET
    assert is_secret_name(name) is expected
    assert (_header_is_refused(name), _log_masks(name), _trace_masks(name)) == (expected, expected, expected)


def test_no_module_keeps_its_own_list_of_secret_names() -> None:
    """A tuple, list or set literal naming two of the rule's parts is a second copy of the rule."""
    parts = set(SECRET_NAME_PARTS)
    copies = []
    for package in ("app_server", "mcp_runtime", "protocol"):
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "protocol" / "secrets.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Tuple | ast.List | ast.Set):
                    found = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                    if len(found & parts) >= 2:
                        copies.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert copies == []
