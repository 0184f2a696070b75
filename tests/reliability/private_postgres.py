"""A private PostgreSQL server for outage tests: its own cluster (`initdb`) in a temporary
directory, on a free port of 127.0.0.1, that a test may stop and start at will. The
machine's shared server (5432) is never touched.

The binaries come from `PATH` or `/usr/lib/postgresql/<version>/bin` (Debian's layout;
CI installs them: `.ci/run`). Without them the test fails, saying so: it never passes
by skipping. PostgreSQL refuses to run as root, so as root the cluster belongs to the
`postgres` user and its commands run as that user.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["PrivatePostgres", "private_postgres"]


def _bin_dir() -> Path:
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if versions:
        return Path(versions[-1]).parent
    pytest.fail(
        "the Postgres restart test needs PostgreSQL's server binaries (initdb, pg_ctl); none found on PATH or "
        "under /usr/lib/postgresql/*/bin: install the 'postgresql' package",
        pytrace=False,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivatePostgres:
    """One cluster: `url`, `stop(mode)`, `start()`."""

    def __init__(self, bin_dir: Path, root: Path, port: int) -> None:
        self.bin_dir = bin_dir
        self.root = root
        self.data = root / "data"
        self.port = port
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        self._as_postgres = os.geteuid() == 0

    def _run(self, *command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        argv = [str(self.bin_dir / command[0]), *command[1:]]
        if self._as_postgres:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done

    def init(self) -> None:
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off -c max_connections=60"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-o", options, "-w", "-t", "30", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "30", "stop")

    def running(self) -> bool:
        argv = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "status"]
        if self._as_postgres:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        return subprocess.run(argv, capture_output=True, timeout=30).returncode == 0

    def log_tail(self) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A started private cluster, stopped and deleted afterwards."""
    bin_dir = _bin_dir()
    # not under pytest's tmp_path: as root that is private to root, and the server runs as postgres
    root = Path(tempfile.mkdtemp(prefix="sg-private-pg-"))
    server = PrivatePostgres(bin_dir, root, _free_port())
    try:
        server.init()
        server.start()
        yield server
    finally:
        deadline = time.monotonic() + 30
        while server.running() and time.monotonic() < deadline:
            try:
                server.stop("immediate")
            except RuntimeError:
                time.sleep(0.5)
        shutil.rmtree(root, ignore_errors=True)
