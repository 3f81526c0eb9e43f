"""A TCP proxy the fault-injection suite puts between the artifact store's clients and moto's S3 server, so
the store can fail at the network level while moto keeps its (in-memory) objects.

``cut(down_s)`` resets every open connection and, for ``down_s`` seconds, resets each new one as soon as it
is accepted: to a client (s3fs/aiobotocore) the S3 endpoint is gone, as when an object store or its load
balancer fails. ``arm(pattern, skip, down_s)`` does the same at a chosen point of the traffic: the
``skip + 1``-th client request whose bytes contain ``pattern`` (e.g. the ``PUT`` of one job's checkpoint
files) is never forwarded; its connection is reset and the outage starts there. Killing moto instead would
lose every object (it keeps them in memory), and pausing it (SIGSTOP) only delays requests, which then
complete: neither is a store write failing half-way.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

from tests.queue.fault_stack import free_port


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` with a TCP RST (SO_LINGER 0), as a crashed peer would."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


@dataclass
class Trigger:
    """An armed fault: fires on the ``skip + 1``-th client chunk containing ``pattern``."""

    pattern: bytes
    skip: int
    down_s: float
    seen: int = 0
    fired_at: float | None = None  # time.time() of the cut
    request: bytes = b""  # the first line of the request that was cut


@dataclass
class FaultProxy:
    """``127.0.0.1:port`` -> ``127.0.0.1:target_port``, with ``cut`` and ``arm`` (see the module doc)."""

    target_port: int
    port: int = field(default_factory=free_port)
    cuts: int = 0
    refused: int = 0  # connections reset during an outage
    _down_until: float = 0.0
    _trigger: Trigger | None = None
    _conns: set[socket.socket] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _listener: socket.socket | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FaultProxy:
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", self.port))
        ls.listen(128)
        self._listener = ls
        threading.Thread(target=self._accept_loop, name="fault-proxy", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
        self._reset_all()

    # --- faults ------------------------------------------------------------------------------------------

    @property
    def down(self) -> bool:
        return time.monotonic() < self._down_until

    def cut(self, down_s: float) -> None:
        """Reset every open connection now and every new one for ``down_s`` seconds."""
        with self._lock:
            self._down_until = time.monotonic() + down_s
            self.cuts += 1
        self._reset_all()

    def arm(self, pattern: bytes, skip: int, down_s: float) -> Trigger:
        """Cut (for ``down_s`` s) at the ``skip + 1``-th client request containing ``pattern``."""
        with self._lock:
            self._trigger = Trigger(pattern, skip, down_s)
            return self._trigger

    def disarm(self) -> Trigger | None:
        with self._lock:
            trigger, self._trigger = self._trigger, None
            return trigger

    # --- plumbing ----------------------------------------------------------------------------------------

    def _reset_all(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, set()
        for s in conns:
            _reset(s)

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.down:
                self.refused += 1
                _reset(client)
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
                server.settimeout(None)
            except OSError:
                _reset(client)
                continue
            with self._lock:
                self._conns |= {client, server}
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _should_cut(self, chunk: bytes) -> Trigger | None:
        with self._lock:
            t = self._trigger
            if t is None or t.pattern not in chunk:
                return None
            t.seen += 1
            if t.seen <= t.skip:
                return None
            self._trigger = None
            t.fired_at = time.time()
            t.request = chunk.split(b"\r\n", 1)[0][:300]
            return t

    def _pump(self, src: socket.socket, dst: socket.socket, upstream: bool) -> None:
        try:
            while True:
                chunk = src.recv(65536)
                if not chunk:
                    break
                if upstream:
                    fired = self._should_cut(chunk)
                    if fired is not None:
                        self.cut(fired.down_s)  # resets src and dst too: the request never reaches S3
                        return
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            with self._lock:
                self._conns.discard(src)
                self._conns.discard(dst)
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    s.close()
