"""A separate process for the concurrent-publish test: opens the shared database, says
it is ready, then for each round waits for the round's go file and publishes its version
of that round at once.

    python tests/reliability/publish_worker.py STORAGE DIR INDEX VERSION_ID...

Round r publishes the r-th VERSION_ID; `DIR/ready-INDEX` says the database is open,
`DIR/go-r` starts round r, `DIR/done-r-INDEX` says this process finished it.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel


def wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.001)


async def main(storage: str, folder: Path, index: str, version_ids: list[str]) -> None:
    memory = Memory(storage)
    Agent(id="research-agent", model=ScriptedChatModel(), memory=memory)
    await memory.opened()
    await memory.versions.list("research-agent")  # every connection is warm before the race
    (folder / f"ready-{index}").touch()
    for round_, version_id in enumerate(version_ids):
        wait_for(folder / f"go-{round_}")
        await memory.versions.publish("research-agent", version_id)
        (folder / f"done-{round_}-{index}").touch()
    await memory.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4:]))
