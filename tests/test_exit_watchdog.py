"""The exit watchdog (tests/exit_watchdog.py) turns a suite that cannot exit into a loud failure."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_probe.py").write_text(textwrap.dedent(body))
    env = {**os.environ, "SUPERVISOR_GRAPH_TEST_EXIT_GRACE_S": "2", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.exit_watchdog", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_thread_left_running_fails_the_suite_and_names_its_test(tmp_path) -> None:
    done = _run(
        tmp_path,
        """
        import threading, time

        def test_leaves_a_thread():
            threading.Thread(target=time.sleep, args=(600,), name="left-behind").start()
        """,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "did not exit" in done.stderr
    assert "left-behind, started in test_probe.py::test_leaves_a_thread" in done.stderr


def test_a_suite_that_exits_is_left_alone(tmp_path) -> None:
    done = _run(tmp_path, "def test_nothing():\n    pass\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "did not exit" not in done.stderr
