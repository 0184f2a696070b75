"""A process of its own holding a run on the shared thread, for the cross-process tests:

    python tests/double_texting/worker.py STORAGE LEDGER PROMPT [ON_BUSY]

`SG_WAIT` sets how long the `wait` tool sleeps. Prints one JSON line: the result's text
and finish reason, or the error's type."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from supervisor_graph import Memory  # noqa: E402
from tests.double_texting.agent import build  # noqa: E402


async def main(storage: str, ledger: str, prompt: str, on_busy: str = "reject") -> None:
    memory = Memory(storage)
    agent = build(memory, Path(ledger), wait=float(os.environ.get("SG_WAIT", "30")))
    try:
        result = await agent.generate(prompt, memory={"thread": "chat", "resource": "user"}, on_busy=on_busy)
        print(json.dumps({"text": result.text, "finish_reason": result.finish_reason}), flush=True)
    except Exception as exc:  # noqa: BLE001 - reported to the test
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}), flush=True)
    finally:
        await memory.aclose()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
