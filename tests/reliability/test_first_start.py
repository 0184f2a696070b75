"""Several processes opening a fresh database at once all succeed (SPEC §19: schema
set-up is serialized)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

PROCESSES = 6

SCRIPT = """
import asyncio, os, sys, time
from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel

async def main(storage, go, n):
    open(f"{go}.ready-{n}", "w").close()
    while not os.path.exists(go):  # start together
        time.sleep(0.005)
    memory = Memory(storage=storage)
    agent = Agent(id="a", model=ScriptedChatModel(policy=lambda m: "ok"), memory=memory)
    result = await agent.generate("hi", memory={"thread": f"t{n}"})
    await memory.aclose()
    print(result.text)

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
"""


def test_concurrent_first_starts_all_succeed(shared_storage: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    procs = [
        subprocess.Popen([sys.executable, "-c", SCRIPT, shared_storage, str(go), str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for n in range(PROCESSES)
    ]
    # every interpreter has imported the library and waits (each says so; not a guessed 2 s)
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("go.ready-*"))) < PROCESSES:
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a process never got ready"
        time.sleep(0.02)
    go.touch()
    outcomes = [p.communicate(timeout=120) for p in procs]
    failures = [err[-1500:] for p, (out, err) in zip(procs, outcomes, strict=True) if p.returncode != 0 or out.strip() != "ok"]
    assert not failures, failures[0]
