"""A loopback TCP proxy the tests can cut: a database outage without touching the real server.

``TcpProxy(listen_port, target_port)`` forwards ``127.0.0.1:listen_port`` to
``127.0.0.1:target_port``. ``cut()`` closes every connection and refuses new ones (the database
"goes away"); ``restore()`` accepts again. ``stall()`` keeps connections open but stops
forwarding (a database that hangs). Threads only; everything stops with ``close()``.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class TcpProxy:
    def __init__(self, listen_port: int, target_port: int, host: str = "127.0.0.1") -> None:
        self.host = host
        self.listen_port = listen_port
        self.target_port = target_port
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._server: socket.socket | None = None
        self._stalled = threading.Event()
        self._closed = False
        self.restore()

    def restore(self) -> None:
        """Accept connections (again)."""
        self._stalled.clear()
        if self._server is not None:
            return
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((self.host, self.listen_port))
        server.listen(64)
        self._server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def cut(self) -> None:
        """Refuse new connections and reset the open ones."""
        server, self._server = self._server, None
        if server is not None:
            with contextlib.suppress(OSError):
                server.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() on Linux
            with contextlib.suppress(OSError):
                server.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def stall(self) -> None:
        """Keep connections open but forward nothing."""
        self._stalled.set()

    def close(self) -> None:
        self._closed = True
        self.cut()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection((self.host, self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                while self._stalled.is_set() and not self._closed:
                    time.sleep(0.05)
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
