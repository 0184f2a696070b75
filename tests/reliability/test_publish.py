"""SPEC §19 "Consistent writes outside runs" with real processes on one sqlite file or
Postgres database: processes publishing versions of one agent at the same moment leave
exactly one published version."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel

WORKER = Path(__file__).with_name("publish_worker.py")
PROCESSES = 3
ROUNDS = 5


def wait_for(paths: list[Path], procs: list[subprocess.Popen[str]], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        for proc in procs:
            if proc.poll() not in (None, 0):
                raise AssertionError(proc.communicate()[1][-3000:])
        assert time.monotonic() < deadline, [p.name for p in paths if not p.exists()]
        time.sleep(0.01)


async def test_processes_publishing_at_once_leave_one_published(shared_storage: str, tmp_path: Path) -> None:
    memory = Memory(shared_storage)
    Agent(id="research-agent", model=ScriptedChatModel(), memory=memory)
    try:
        # drafts[i][r]: what process i publishes in round r
        drafts = [
            [await memory.versions.save("research-agent", {"instructions": f"p{i} r{r}"}) for r in range(ROUNDS)]
            for i in range(PROCESSES)
        ]
        procs = [
            subprocess.Popen(
                [sys.executable, str(WORKER), shared_storage, str(tmp_path), str(i), *drafts[i]],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(PROCESSES)
        ]
        try:
            wait_for([tmp_path / f"ready-{i}" for i in range(PROCESSES)], procs)
            for r in range(ROUNDS):
                (tmp_path / f"go-{r}").touch()
                wait_for([tmp_path / f"done-{r}-{i}" for i in range(PROCESSES)], procs)
                versions = await memory.versions.list("research-agent")
                published = [v.version_id for v in versions if v.status == "published"]
                assert len(published) == 1, (r, published)
                assert published[0] in {drafts[i][r] for i in range(PROCESSES)}
                # every other version this round published is archived, none left a draft
                assert {v.status for v in versions if v.version_id in {d[r] for d in drafts}} == {"published", "archived"}
            for proc in procs:
                _, err = proc.communicate(timeout=60)
                assert proc.returncode == 0, err[-3000:]
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
    finally:
        await memory.aclose()
