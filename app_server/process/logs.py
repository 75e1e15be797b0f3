"""Logging: structlog JSON lines on stderr only (stdout carries protocol), secrets redacted.

structlog is imported on the first log call, not at start-up, so that ``initialize`` is answered
fast; ``get_logger`` hands out a proxy that binds the real logger then.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from protocol.secrets import is_secret_name

if TYPE_CHECKING:
    from structlog.typing import Processor

MAX_CHAINED = 16
"""Exceptions of one chain (causes, contexts, a group's members) written out at most."""

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
"""The stdlib levels (``logging`` itself is imported with structlog, after ``initialize``)."""
_level = _LEVELS["info"]
_configured = False

def _redact(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key in list(event):
        if key != "event" and is_secret_name(key):
            event[key] = "***"
    return event


def _traceback(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """``exc_info`` as ``exception``: the calls and the exception types, without the messages, which may quote
    what a client or a server sent (a token in a URL, a config value) and so never reach a log line."""
    exc_info = event.pop("exc_info", None)
    if exc_info is True:
        exc_info = sys.exc_info()
    error = exc_info if isinstance(exc_info, BaseException) else exc_info[1] if exc_info else None
    if error is not None:
        event["exception"] = "\n".join(_chain(error, set()))
    return event


def _chain(error: BaseException, seen: set[int]) -> list[str]:
    import traceback

    if id(error) in seen or len(seen) >= MAX_CHAINED:
        return []
    seen.add(id(error))
    lines: list[str] = []
    if error.__cause__ is not None:
        lines += [*_chain(error.__cause__, seen), "The above exception was the direct cause of:"]
    elif error.__context__ is not None and not error.__suppress_context__:
        lines += [*_chain(error.__context__, seen), "During handling of the above exception, another occurred:"]
    lines.append("Traceback (most recent call last):")
    lines += [frame.rstrip("\n") for frame in traceback.format_list(traceback.extract_tb(error.__traceback__))]
    lines.append(f"{type(error).__module__}.{type(error).__qualname__}")
    for member in getattr(error, "exceptions", ()):
        lines += _chain(member, seen)
    return lines


def debug_enabled() -> bool:
    """Whether ``debug`` lines are written (checked before building one on a hot path)."""
    return _level <= _LEVELS["debug"]


def set_level(level: str) -> None:
    global _level
    _level = _LEVELS.get(level.lower(), _LEVELS["info"])


class _Stderr:
    """Where log lines go: file descriptor 2, one unbuffered write per line (a line is on disk when the call returns,
    so a daemon killed with SIGKILL has logged up to its last line), and a write that fails (a full disk, a closed
    pipe) costs that line, never the request that logged it."""

    def write(self, text: str) -> int:
        data = text.encode(errors="backslashreplace")
        try:
            while data:
                data = data[os.write(2, data) :]
        except OSError:
            pass
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered."""


STDERR = _Stderr()


def _configure() -> None:
    """structlog and the stdlib root logger (the SDK and httpx log there) both write JSON lines to stderr."""
    global _configured
    import logging

    import structlog

    shared: list[Processor] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _redact,
        _traceback,
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.JSONRenderer()],
        wrapper_class=structlog.make_filtering_bound_logger(_level),
        logger_factory=structlog.PrintLoggerFactory(file=STDERR),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(STDERR)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.JSONRenderer(),
            ],
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(_level, logging.WARNING))
    _configured = True


class LazyLogger:
    """Looks like a structlog logger; imports and configures structlog on first use."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, method: str) -> Any:
        if self._logger is None:
            if not _configured:
                _configure()
            import structlog

            self._logger = structlog.get_logger(self._name)
        return getattr(self._logger, method)


def get_logger(name: str) -> LazyLogger:
    return LazyLogger(name)


def configure_if_loaded() -> None:
    """Configure once anything has imported structlog (a handler module of the runtime), before it can log."""
    if not _configured and "structlog" in sys.modules:
        _configure()


def configure() -> None:
    """Configure logging now, before code that logs through structlog or stdlib directly (mcp_runtime, the SDK)
    runs: unconfigured structlog would print to stdout, which carries only protocol."""
    if not _configured:
        _configure()
