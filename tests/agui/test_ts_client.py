"""The canonical TypeScript client, `@ag-ui/client`'s `HttpAgent`, against
`supervisor-graph serve` (attributed subagents): a run, an approval interrupt, a resume
that approves and one that cancels, attributed subagents, an abort.

The test installs the client itself (`npm install @ag-ui/client@1`) into a folder under
the temporary directory, reused while it is there. Without Node, npm or the registry it
is skipped locally and fails in CI (`CI` set), saying what is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.npm import npm_install, unavailable

CLIENT = "@ag-ui/client@1"
HERE = Path(__file__).parent


def _unavailable(reason: str) -> None:
    unavailable("the @ag-ui/client test", reason)


@pytest.fixture(scope="session")
def client_dir() -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        _unavailable("node and npm must be on PATH (Node 18 or newer)")
    folder = Path(tempfile.gettempdir()) / "supervisor-graph-ag-ui-client-1"
    installed = folder / "node_modules" / "@ag-ui" / "client" / "package.json"
    if installed.is_file() and json.loads(installed.read_text()).get("version", "").startswith("1."):
        return folder
    manifest = '{"name": "ag-ui-client-check", "private": true, "type": "module"}\n'
    npm_install(npm, folder, CLIENT, manifest, installed, "the @ag-ui/client test")
    return folder


def test_the_typescript_client_runs_approves_cancels_and_sees_subagents(client_dir: Path, served_cli: str) -> None:
    script = client_dir / "ts_client.mjs"
    shutil.copyfile(HERE / "ts_client.mjs", script)
    proc = subprocess.run(["node", str(script), served_cli], cwd=client_dir, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)

    plain = report["plain"]
    assert plain["errors"] == [] and plain["finished"]["outcome"] == "success"
    assert plain["types"][0] == "RUN_STARTED" and plain["types"][-1] == "RUN_FINISHED"
    assert plain["lastMessage"] == "echo: hello from typescript"

    paused = report["approvalPaused"]
    assert paused["errors"] == [] and paused["finished"]["outcome"] == "interrupt"
    [interrupt] = paused["interrupts"]
    assert interrupt["reason"] == "supervisor_graph:tool_approval" and interrupt["subagentRunId"]
    assert [s["kind"] for s in paused["subagents"]] == ["started", "finished"]
    assert paused["subagents"][1]["outcome"] == "suspended"

    approved = report["approvalResumed"]
    assert approved["errors"] == [] and approved["finished"]["outcome"] == "success"
    assert approved["interrupts"] == [] and approved["lastMessage"] == "final: payer: paid 12"
    assert approved["subagents"][0]["id"] == paused["subagents"][0]["id"]  # the same invocation again

    cancelled = report["cancelResumed"]
    assert cancelled["errors"] == [] and cancelled["finished"]["outcome"] == "success"
    assert cancelled["interrupts"] == [] and "declined" in cancelled["lastMessage"]

    research = report["research"]
    assert research["errors"] == [] and research["finished"]["outcome"] == "success"
    assert [(s["kind"], s.get("name")) for s in research["subagents"]] == [("started", "research-agent"), ("finished", None)]
    assert "TEXT_MESSAGE_CONTENT" in research["types"]
    attributed = [m for m in report["researchMessages"] if m["subagentRunId"]]
    assert attributed and {m["subagentRunId"] for m in attributed} == {research["subagents"][0]["id"]}

    assert report["aborted"]["finished"] is None or report["aborted"]["finished"]["outcome"] == "cancelled"
    after = report["afterAbort"]
    assert after["errors"] == [] and after["finished"]["outcome"] == "success"
    assert after["lastMessage"] == "echo: are you there"

    state = report["state"]
    assert state["errors"] == [] and state["lastMessage"] == "remembered"
    assert state["types"][:2] == ["RUN_STARTED", "STATE_SNAPSHOT"] and "STATE_DELTA" in state["types"]
    assert "TOOL_CALL_START" not in state["types"]  # the update tool stays hidden
    assert report["stateAfter"] == {"notes": ["from the client"], "favourite": "tea"}
