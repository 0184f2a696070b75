"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, server mode,
its client speaking protocol 2025-11-25) against `supervisor-graph serve ... --mcp`
(SPEC §27): every scenario passes except those listed in `NOT_APPLICABLE`, each with
why. The suite runs once, all its server scenarios (`--suite all`) in one invocation,
against one server process.

The server here has no token: the suite's server mode cannot send one (it takes only
`--url`). The token path is tested with the `mcp` client in `test_serve_mcp.py`.

Most of the suite's scenarios call the suite's reference server's fixtures by name
(`test_image_content`, `test_simple_prompt`, `test://static-text`, ...): a real server has
its own tools and no such prompts or resources, so those scenarios cannot pass here and
say nothing about it. What the server declares, `tools` and `logging`, is covered by
the scenarios that do not need them; progress and log lines of our own tool are tested
with the `mcp` client in `test_mcp_progress.py`.

The test installs the suite itself (`npm install`, the version pinned below) into
`tests/mcp/.conformance/` (git-ignored), reused while it is there. Without Node 20+,
npm or the registry it is skipped locally and fails in CI (`CI` set), saying what is
missing (the convention of `tests/agui/test_ts_client.py`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.npm import npm_install, unavailable

pytest.importorskip("mcp")

from bench.aegra import free_port, running  # noqa: E402

# 0.1.14 and later import `fs.globSync` (Node 22); 0.1.13 has the same server scenarios
# and runs on Node 20, what CI has.
VERSION = "0.1.13"
SUITE = f"@modelcontextprotocol/conformance@{VERSION}"
HERE = Path(__file__).parent
CACHE = HERE / ".conformance"
SERVED = HERE.parent / "agui" / "served.py"

_REFERENCE_TOOL = "calls the suite's reference tool {} (a fixture of its own test server, not ours)"
_NO_RESOURCES = "needs the resources capability, which the server does not declare (it has no resources)"
_NO_PROMPTS = "needs the prompts capability, which the server does not declare (it has no prompts)"
_NEEDS_ELICITATION = "calls a reference tool ({}) that asks the client for input (elicitation); the server never does"

# scenario -> why it is not expected to pass against this server
NOT_APPLICABLE = {
    "completion-complete": "needs the completions capability, which the server does not declare",
    "tools-call-simple-text": _REFERENCE_TOOL.format("test_simple_text")
    + " (it passes on our 'Unknown tool' error text, which proves nothing, so it is not counted)",
    "tools-call-image": _REFERENCE_TOOL.format("test_image_content"),
    "tools-call-audio": _REFERENCE_TOOL.format("test_audio_content"),
    "tools-call-embedded-resource": _REFERENCE_TOOL.format("test_embedded_resource"),
    "tools-call-mixed-content": _REFERENCE_TOOL.format("test_multiple_content_types"),
    "tools-call-with-logging": _REFERENCE_TOOL.format("test_tool_with_logging")
    + "; our tool's log lines: test_mcp_progress.py",
    "tools-call-with-progress": _REFERENCE_TOOL.format("test_tool_with_progress")
    + "; our tool's progress: test_mcp_progress.py",
    "tools-call-sampling": _REFERENCE_TOOL.format("test_sampling") + " that asks the client's model (sampling)",
    "tools-call-elicitation": _NEEDS_ELICITATION.format("test_elicitation"),
    "elicitation-sep1034-defaults": _NEEDS_ELICITATION.format("test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": _NEEDS_ELICITATION.format("test_elicitation_sep1330_enums"),
    "json-schema-2020-12": _REFERENCE_TOOL.format("json_schema_2020_12_tool"),
    "server-sse-polling": _REFERENCE_TOOL.format("test_reconnection")
    + " that closes its stream mid-call; a stateless server has no event store to resume from",
    "resources-list": _NO_RESOURCES,
    "resources-read-text": _NO_RESOURCES,
    "resources-read-binary": _NO_RESOURCES,
    "resources-templates-read": _NO_RESOURCES,
    "resources-subscribe": _NO_RESOURCES,
    "resources-unsubscribe": _NO_RESOURCES,
    "prompts-list": _NO_PROMPTS,
    "prompts-get-simple": _NO_PROMPTS,
    "prompts-get-with-args": _NO_PROMPTS,
    "prompts-get-embedded-resource": _NO_PROMPTS,
    "prompts-get-with-image": _NO_PROMPTS,
}

# scenario -> check ids that may warn (a warning is not a failure, but only these may warn)
EXPECTED_WARNINGS = {
    # stateless streamable HTTP (any worker answers any request) hands out no session id
    "server-sse-multiple-streams": {"server-sse-multiple-streams-session"},
}


def _unavailable(reason: str) -> None:
    unavailable("the MCP conformance suite", reason)


@pytest.fixture(scope="module")
def suite() -> list[str]:
    """The command that runs the installed suite (`node .../dist/index.js`)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        _unavailable("node and npm must be on PATH (Node 20 or newer)")
    assert node is not None and npm is not None
    major = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip().lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < 20:
        _unavailable(f"the conformance suite needs Node 20 or newer, not {major!r}")
    package = CACHE / "node_modules" / "@modelcontextprotocol" / "conformance"
    installed = package / "package.json"
    if not (installed.is_file() and json.loads(installed.read_text()).get("version") == VERSION):
        manifest = '{"name": "mcp-conformance-check", "private": true}\n'
        npm_install(npm, CACHE, SUITE, manifest, installed, "the MCP conformance suite")
    return [node, str(package / "dist" / "index.js")]


def _scenarios(suite: list[str]) -> set[str]:
    listed = subprocess.run([*suite, "list", "--server"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    return set(re.findall(r"^\s+- (\S+)$", listed.stdout, flags=re.MULTILINE))


def test_the_official_conformance_suite_passes_for_what_the_server_declares(suite: list[str], tmp_path: Path) -> None:
    scenarios = _scenarios(suite)
    assert len(scenarios) > 20 and set(NOT_APPLICABLE) <= scenarios, sorted(set(NOT_APPLICABLE) - scenarios)

    port = free_port()
    command = [
        sys.executable,
        "-m",
        "supervisor_graph.cli",
        "serve",
        f"{SERVED}:supervisor",
        "--port",
        str(port),
        "--mcp",
    ]
    url = f"http://127.0.0.1:{port}"
    out = tmp_path / "results"
    with running(command, f"{url}/agent/health", env=dict(os.environ), log=tmp_path / "serve.log"):
        # the exit code is not 0 (the scenarios above fail); the results say which
        proc = subprocess.run(
            [*suite, "server", "--url", f"{url}/mcp", "--suite", "all", "-o", str(out)],
            capture_output=True,
            text=True,
            timeout=240,
        )

    results: dict[str, list[dict[str, object]]] = {}
    for checks in out.glob("server-*/checks.json"):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks.parent.name)
        results[scenario] = json.loads(checks.read_text())
    assert set(results) == scenarios, (
        f"ran {sorted(results)}, the suite lists {sorted(scenarios)}:\n{proc.stdout[-3000:]}"
    )

    problems = []
    for scenario in sorted(scenarios - set(NOT_APPLICABLE)):
        checks = results[scenario]
        failed = [c for c in checks if c["status"] == "FAILURE"]
        warned = {str(c["id"]) for c in checks if c["status"] == "WARNING"} - EXPECTED_WARNINGS.get(scenario, set())
        if failed or warned or not any(c["status"] in ("SUCCESS", "WARNING") for c in checks):
            problems.append(f"{scenario}: {json.dumps(failed or checks, default=str)[:1500]}")
    assert not problems, "\n".join(problems)
    # what the server declares stays counted (the list above must not swallow it)
    counted = {
        "server-initialize",
        "ping",
        "tools-list",
        "tools-call-error",
        "logging-set-level",
        "dns-rebinding-protection",
    }
    assert counted <= scenarios - set(NOT_APPLICABLE)
