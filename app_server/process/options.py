"""The command line (SPEC §1): its one parser and the data-dir rule, read by the start-up path and by ``cli``.

Standard library only, so the start-up path can read the command line before it answers ``initialize`` and still
answer it first.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
from collections.abc import Mapping, Sequence
from typing import NoReturn

from protocol.constants import NAME, TRANSPORTS, VERSION

LOG_LEVELS = ("debug", "info", "warning", "error")
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))
"""Each ends the daemon alike, exit 0: a closed terminal's SIGHUP gets the same orderly stop as SIGTERM."""
EVENT_LOOPS = ("auto", "asyncio")
PATH_FROM_SHELL = ("auto", "never")
SECRET_STORES = ("auto", "keychain", "file")
WATCH_CHILDREN = "watch-children"
"""The hidden mode the daemon starts itself in as its child watcher (``mcp_runtime``'s orphan guard)."""


class UsageError(Exception):
    """A command line the parser refuses; ``report`` prints the usage and the reason and exits 2."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message

    def report(self) -> NoReturn:
        argparse.ArgumentParser.error(self.parser, self.message)


class _Parser(argparse.ArgumentParser):
    """Raises instead of exiting, so that the start-up path can leave a bad command line to ``cli``'s report."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


def socket_path(text: str) -> str:
    """``--listen unix:PATH``: the socket's path."""
    if not text.startswith("unix:") or len(text) <= len("unix:"):
        raise argparse.ArgumentTypeError("takes unix:PATH")
    return text[len("unix:") :]


def transports(text: str) -> frozenset[str]:
    """``--transports stdio,http``: the transports this deployment allows."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names or set(names) - set(TRANSPORTS):
        raise argparse.ArgumentTypeError(f"takes a comma-separated list of {', '.join(TRANSPORTS)}")
    return frozenset(names)


def stdio_sandbox(text: str) -> tuple[str, ...]:
    """``--stdio-sandbox '["bwrap", ...]'``: the argv prefix of every stdio server, its wrapper named by absolute
    path, looked up here once in the daemon's own PATH: a server config's ``env.PATH`` never chooses it."""
    try:
        argv = json.loads(text)
    except ValueError:
        raise argparse.ArgumentTypeError("is not valid JSON") from None
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
        raise argparse.ArgumentTypeError("must be a JSON list of one or more non-empty strings")
    import shutil  # here: only a deployment that names a wrapper pays for the import before initialize

    wrapper: str | None = shutil.which(argv[0])
    if wrapper is None:
        raise argparse.ArgumentTypeError(f"{argv[0]} is not an executable found in the daemon's PATH")
    return (os.path.abspath(wrapper), *argv[1:])


def https_document(text: str) -> str:
    """``--oauth-client-metadata-url URL``: an https URL with a path (the authorization server fetches it)."""
    from urllib.parse import urlsplit  # here: only when the option is given

    parts = urlsplit(text)
    plain = not parts.fragment and "@" not in parts.netloc
    if parts.scheme != "https" or not parts.hostname or parts.path in ("", "/") or not plain:
        raise argparse.ArgumentTypeError("takes an https URL with a path, without userinfo or fragment")
    return text


def credential_dir(text: str) -> tuple[str, str]:
    """``--credential-dir DIR``: a folder credential files may be read from, as given (absolute) and resolved."""
    given = os.path.normpath(os.path.abspath(os.path.expanduser(text)))
    if not os.path.isdir(given):
        raise argparse.ArgumentTypeError(f"{text} is not a directory")
    return given, os.path.realpath(given)


def env_rule(text: str) -> str:
    """``--allow-env NAME`` (or ``PREFIX*``): a daemon variable configs may name."""
    if not text or not all(c.isalnum() or c == "_" for c in text.removesuffix("*")):
        raise argparse.ArgumentTypeError("takes a variable name, or a prefix ending in *")
    return text


DEFAULT_REGISTRY_URL = "https://registry.modelcontextprotocol.io"
"""The official MCP Registry (SPEC §15), the documented default of ``--registry-url``."""


def registry_url(text: str) -> str:
    """``--registry-url URL``: https, or http to loopback; no userinfo, query or fragment."""
    from urllib.parse import urlsplit  # here: only when the option is given

    parts = urlsplit(text)
    loopback = parts.hostname in ("localhost", "::1") or (parts.hostname or "").startswith("127.")
    plain = not parts.fragment and not parts.query and "@" not in parts.netloc and bool(parts.hostname)
    if not plain or not (parts.scheme == "https" or (parts.scheme == "http" and loopback)):
        raise argparse.ArgumentTypeError("takes an https URL (or http to loopback), without userinfo or query")
    return text.rstrip("/")


def policy_path(value: str | None) -> str | None:
    """``--policy FILE``, else the platform's managed policy file when one exists there, else None."""
    if value is not None:
        return value
    import sys

    if sys.platform == "darwin":
        default = "/Library/Application Support/mcp-app-server/policy.json"
    elif sys.platform == "win32":
        default = os.path.join(os.environ.get("ProgramData", r"C:\ProgramData"), "mcp-app-server", "policy.json")
    else:
        default = "/etc/mcp-app-server/policy.json"
    return default if os.path.lexists(default) else None


def parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=NAME, description="Serve on stdio (the default), or write the protocol's schema or types.")
    parser.add_argument("--data-dir", help="where mcps.json, threads and credentials live")
    parser.add_argument(
        "--listen", type=socket_path, metavar="unix:PATH", help="also accept client connections on a Unix socket"
    )
    parser.add_argument(
        "--log-level", default="info", choices=LOG_LEVELS, help="info: the session's story; debug: one line per request"
    )
    parser.add_argument(
        "--trace",
        metavar="FILE",
        help="append every message in and out to FILE (0600, secrets redacted; past 64 MiB it becomes FILE.1)",
    )
    parser.add_argument(
        "--transports",
        type=transports,
        default=frozenset(TRANSPORTS),
        metavar="stdio,http",
        help="the MCP transports this deployment allows",
    )
    parser.add_argument(
        "--stdio-sandbox", type=stdio_sandbox, default=(), metavar="JSON", help="argv prefix for every stdio server"
    )
    parser.add_argument(
        "--path-from-shell",
        default="auto",
        choices=PATH_FROM_SHELL,
        help="auto: also look stdio commands up in the login shell's PATH (read once, bounded)",
    )
    parser.add_argument(
        "--secret-store",
        default="auto",
        choices=SECRET_STORES,
        help="where secrets are kept: auto (the OS keychain when one answers, else 0600 files), keychain, file",
    )
    parser.add_argument(
        "--oauth-client-metadata-url",
        type=https_document,
        metavar="URL",
        help="the client ID metadata document OAuth logins use where a server's config names none",
    )
    parser.add_argument(
        "--credential-dir",
        type=credential_dir,
        action="append",
        default=[],
        metavar="DIR",
        help="a folder OAuth credential files (idTokenFile, assertionFile) may be read from; repeatable; none: no file",
    )
    parser.add_argument(
        "--allow-env",
        type=env_rule,
        action="append",
        metavar="NAME",
        help="a daemon variable configs may name (envVars, envHeaders, *EnvVar), or PREFIX*; repeatable; none: any",
    )
    parser.add_argument(
        "--registry-url",
        type=registry_url,
        default=DEFAULT_REGISTRY_URL,
        metavar="URL",
        help="the MCP Registry (read API v0.1) that registry search and install use",
    )
    parser.add_argument(
        "--policy", metavar="FILE", help="the administrator's policy file (default: the platform's managed path)"
    )
    parser.add_argument(
        "--event-loop",
        default="auto",
        choices=EVENT_LOOPS,
        help="auto: uvloop where it is installed, else asyncio's own loop",
    )
    parser.add_argument("--version", action="version", version=f"{NAME} {VERSION}")
    commands = parser.add_subparsers(dest="command")
    schema = commands.add_parser("generate-json-schema", help="write the protocol's JSON Schema files")
    schema.add_argument("--out", required=True)
    typescript = commands.add_parser("generate-ts", help="write the protocol's TypeScript bindings (index.ts)")
    typescript.add_argument("--out", required=True)
    return parser


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The options (``UsageError`` for a command line the parser refuses; ``--help`` and ``--version`` print
    and exit 0 as usual)."""
    return parser().parse_args(argv)


class DataDirUnusable(Exception):
    """The data dir cannot be created or written; the message names the path and the cause (exit 2)."""


def prepare_data_dir(path: str) -> None:
    """Create the data dir (0700) and prove it writable with a file made and removed again, before anything is
    served from it."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        probe = os.path.join(path, f".probe.{os.urandom(8).hex()}.tmp")  # a temp-file name start-up sweeps
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # O_EXCL: never through a link
        os.unlink(probe)
    except OSError as exc:
        raise DataDirUnusable(f"cannot use the data dir {path}: {exc.strerror or exc}") from None


def data_dir(value: str | None, env: Mapping[str, str]) -> str:
    """``--data-dir``, else ``MCP_APP_SERVER_HOME``, else ``$XDG_DATA_HOME/mcp-app-server``, else
    ``~/.local/share/mcp-app-server``; made absolute."""
    if value is None:
        if env.get("MCP_APP_SERVER_HOME"):
            value = env["MCP_APP_SERVER_HOME"]
        elif env.get("XDG_DATA_HOME"):
            value = os.path.join(env["XDG_DATA_HOME"], NAME)
        else:
            value = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "share", NAME)
    return os.path.abspath(os.path.expanduser(value))
