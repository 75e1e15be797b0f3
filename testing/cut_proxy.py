"""A TCP forwarder on loopback that a test can cut: every connection through it is closed at once, as a dropped
network would drop them, while new connections still go through (a server that stays up behind a broken link)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

CHUNK = 65536


class CuttableProxy:
    """Forwards 127.0.0.1:<port> to a target port; :meth:`cut` closes every live connection (both sides)."""

    def __init__(self, target_port: int) -> None:
        self._target = target_port
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self._live: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self.cuts = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self._target))
            except OSError:
                client.close()
                continue
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._live.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(CHUNK):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            self._drop(source, sink)

    def _drop(self, *socks: socket.socket) -> None:
        for sock in socks:
            with self._lock:
                self._live.discard(sock)
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def cut(self) -> int:
        """Close every connection through the proxy now; how many sockets were open."""
        with self._lock:
            live = list(self._live)
        self._drop(*live)
        self.cuts += 1
        return len(live)

    def close(self) -> None:
        self._listener.close()
        self.cut()


@contextmanager
def cuttable(url: str) -> Iterator[tuple[str, CuttableProxy]]:
    """A proxy in front of ``http://127.0.0.1:<port>/<path>``: the same URL through the proxy, and the proxy."""
    prefix = "http://127.0.0.1:"
    port_text, _, path = url.removeprefix(prefix).partition("/")
    proxy = CuttableProxy(int(port_text))
    try:
        yield f"{prefix}{proxy.port}/{path}", proxy
    finally:
        proxy.close()
