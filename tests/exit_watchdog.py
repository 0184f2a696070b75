"""A suite that passed must also exit: a pytest plugin (tests/conftest.py loads it).

Python joins every non-daemon thread before it exits, so one thread a test leaves
running (an unclosed aiosqlite connection's, before `checkpointers/connections.py`) kept
CI waiting 90 minutes after the suite had passed, and nothing landed. Once pytest is
done, a daemon thread waits `GRACE_S`; if the process is still there, it prints the
threads that hold it, with the test each one was started in, and ends the process with
`EXIT_CODE`. A process that exits normally takes the watchdog with it, silently.
`SUPERVISOR_GRAPH_TEST_EXIT_GRACE_S` changes the wait.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from collections.abc import Generator
from typing import Any

import pytest

GRACE_S = float(os.environ.get("SUPERVISOR_GRAPH_TEST_EXIT_GRACE_S", "60"))
EXIT_CODE = 3

# thread -> the test it was started in (threads the test left running)
_started_in: dict[threading.Thread, str] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    before = set(threading.enumerate())
    try:
        return (yield)
    finally:
        for thread in threading.enumerate():
            if thread not in before and not thread.daemon:
                _started_in.setdefault(thread, item.nodeid)


def holders() -> list[threading.Thread]:
    """The non-daemon threads still alive besides the main one (what an exit waits for)."""
    return [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]


def report(threads: list[threading.Thread]) -> str:
    frames = sys._current_frames()
    lines = [
        f"!!!!!!!! the test process did not exit {GRACE_S:.0f} s after the suite ended: "
        f"{len(threads)} non-daemon thread(s) keep it alive !!!!!!!!"
    ]
    for thread in threads:
        lines.append(f"- {thread.name}, started in {_started_in.get(thread, 'no test (a fixture or the session)')}")
        frame = frames.get(thread.ident or -1)
        if frame is not None:
            lines.extend(
                "    " + line for entry in traceback.format_stack(frame)[-3:] for line in entry.rstrip().splitlines()
            )
    return "\n".join(lines)


def _watch() -> None:
    time.sleep(GRACE_S)
    print(report(holders()), file=sys.stderr, flush=True)
    os._exit(EXIT_CODE)


def pytest_unconfigure(config: pytest.Config) -> None:
    threading.Thread(target=_watch, name="exit-watchdog", daemon=True).start()
