"""Launches kept from the last start, so the children start the moment a host says ``initialized``, before the
daemon has imported what reads its store.

When autostart has planned its stdio servers (``early``, by the store's and the launch's own rules), the launches
are kept in the data dir with a key: the store file's digest and the deployment's settings (``identity``). At the
next start a thread reads them with the standard library; if the store file and the settings are the same, it
starts those processes once ``initialized`` arrives, and autostart holds each one whose launch is still the one its
server's config plans now (any other is stopped): the kept file only says what to start early, never whether a
server starts. Only launches whose every value the store itself records are kept (none with a daemon variable
passed on or a keychain reference), and only where a child dies with the daemon (Linux's parent-death signal).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_runtime.platform import children
from mcp_runtime.storage import safe_fs

KEPT_FILE = "launches.json"
KEPT_VERSION = 1
MAX_KEPT_BYTES = 1 << 20


@dataclass(frozen=True)
class Planned:
    """What ``exec`` gets for one server, as its config planned it: program, argv, environment, folder."""

    executable: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    cwd: str | None


@dataclass
class Started:
    """A child started from a kept launch and not yet held by the loop: the process and our ends of its pipes
    (each handed over once)."""

    planned: Planned
    popen: subprocess.Popen[bytes]
    fds: dict[str, int] = field(default_factory=dict)

    def hand_over(self, name: str) -> int:
        """Our end of the ``stdin``, ``stdout`` or ``stderr`` pipe, now the caller's to close."""
        return self.fds.pop(name)

    def discard(self) -> None:
        """Kill the child's group, reap it, and close the ends not handed over (blocks briefly)."""
        if sys.platform != "win32":  # never started there: stdio servers need process groups
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait()
        while self.fds:
            os.close(self.fds.popitem()[1])


def launch_identity(settings: Sequence[object], policy_file: str | None) -> str:
    """The deployment's share of the key: the command-line settings that decide whether and how a server starts
    (each as its ``str``, so no set among them), and the administrator's policy file as it is now."""
    digest = hashlib.sha256(json.dumps([list(map(str, settings))]).encode())
    if policy_file is not None:
        try:
            with open(policy_file, "rb") as file:
                digest.update(file.read(MAX_KEPT_BYTES))
        except OSError:
            digest.update(b"\0unreadable")
    return digest.hexdigest()


def key(identity: str, store_digest: str) -> str:
    return hashlib.sha256(f"{identity}\0{store_digest}".encode()).hexdigest()


class KeptLaunches:
    """The thread that starts the kept launches at ``initialized``; one per daemon, begun before the event loop."""

    current: KeptLaunches | None = None

    def __init__(self, data_dir: Path, identity: str, initialized: threading.Event) -> None:
        self.data_dir = data_dir
        self.identity = identity
        self.read: list[Planned] = []
        """The launches the kept file held for this store (empty when it was missing or stale)."""
        self.matched = False
        """Whether the kept file was kept for this store and deployment (else it is replaced, whatever it held)."""
        self._started: list[Started] = []
        self._go = initialized
        self._spawned = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kept-launches", daemon=True)

    @classmethod
    def begin(cls, data_dir: Path, identity: str, initialized: threading.Event) -> None:
        """Read the kept launches now and start them once ``initialized`` is set (by the thread that reads the
        host's ``initialized`` before the loop runs, else by :meth:`initialized`); only where a child dies with the
        daemon."""
        if children.dies_with_daemon():
            kept = cls.current = cls(data_dir, identity, initialized)
            kept._thread.start()

    @classmethod
    def initialized(cls) -> None:
        """The first client is initialized (the loop read its ``initialized``): start, if not started yet."""
        if cls.current is not None:
            cls.current._go.set()

    def take(self) -> list[Started]:
        """The children started (after :meth:`initialized`: waits for the thread's last spawn); each is the caller's
        from now on."""
        while self._thread.is_alive() and not self._spawned.wait(0.05):
            continue
        started, self._started = self._started, []
        return started

    def _run(self) -> None:
        kept = _load(self.data_dir, self.identity)
        self.read, self.matched = kept or [], kept is not None
        if not self.read:
            return
        options = children.child_setup()
        self._go.wait()
        for planned in self.read:
            with contextlib.suppress(OSError):  # the server's own session starts it and reports why not
                self._started.append(_start(planned, options))
        self._spawned.set()
        if self._started:
            threading.Event().wait()  # Linux's parent-death signal comes when the thread that forked ends: never


def _load(data_dir: Path, identity: str) -> list[Planned] | None:
    """The kept launches, if they were kept for the store file as it is now and for this deployment; else None."""
    try:
        kept = safe_fs.read_file(data_dir, KEPT_FILE, MAX_KEPT_BYTES)
        if kept is None:
            return None
        document = json.loads(kept)
        store = safe_fs.read_file(data_dir, document["store"], MAX_KEPT_BYTES)
        if store is None or document.get("version") != KEPT_VERSION:
            return None
        if document.get("key") != key(identity, digest(store)):
            return None
        return [
            Planned(entry["executable"], tuple(entry["argv"]), tuple(map(tuple, entry["env"])), entry["cwd"])
            for entry in document["launches"]
        ]
    except Exception:  # an unsafe path too (``safe_fs``): whatever is wrong, the servers start the ordinary way
        return None


def digest(data: bytes) -> str:
    """The store file's share of the key."""
    return hashlib.sha256(data).hexdigest()


def _start(planned: Planned, options: dict[str, object]) -> Started:
    fds: dict[str, int] = {}
    child_ends: list[int] = []
    try:
        for name in ("stdout", "stderr"):
            fds[name], child_end = os.pipe()
            child_ends.append(child_end)
        popen, fds["stdin"] = children.start_server(
            *planned.argv, executable=planned.executable, stdout=child_ends[0], stderr=child_ends[1],
            env=dict(planned.env), cwd=planned.cwd, **options,
        )  # fmt: skip
    except BaseException:
        for fd in fds.values():
            os.close(fd)
        raise
    finally:
        for fd in child_ends:
            os.close(fd)
    return Started(planned, popen, fds)


def keep(data_dir: Path, identity: str, store: tuple[str, str], launches: Sequence[Planned]) -> None:
    """Keep ``launches`` for the next start of a daemon with this ``identity`` and ``store`` (its file's name and
    the :func:`digest` of the bytes the launches were planned from); blocks."""
    document = {
        "version": KEPT_VERSION,
        "store": store[0],
        "key": key(identity, store[1]),
        "launches": [
            {"executable": p.executable, "argv": list(p.argv), "env": [list(pair) for pair in p.env], "cwd": p.cwd}
            for p in launches
        ],
    }
    safe_fs.write_file(data_dir, KEPT_FILE, json.dumps(document).encode())
