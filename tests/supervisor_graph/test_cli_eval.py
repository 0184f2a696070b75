"""`supervisor-graph eval` as CI runs it: a subprocess, its exit status (0 every case
passed, 1 a case failed, 2 the harness could not run), its JSON and JUnit files."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("supervisor-graph"))
DEMO_CASES = REPO / "supervisor_graph" / "examples" / "research_write_cases.yaml"
TEAM = "tests.supervisor_graph.evals_team:team"


def sg(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, "eval", *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def documented_example_command() -> list[str]:
    """The `eval --example` line of docs/evaluations.md's bash block, as written there."""
    page = (REPO / "docs" / "evaluations.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", page, flags=re.DOTALL)
    lines = [line for block in blocks for line in block.splitlines() if line.startswith("supervisor-graph eval --example")]
    assert len(lines) == 1, f"docs/evaluations.md should show one `supervisor-graph eval --example` command: {lines}"
    return shlex.split(lines[0])


def test_the_documented_command_runs_as_written_from_any_folder(tmp_path: Path) -> None:
    # the packaged cases are found inside the installed package, not next to where it runs
    argv = documented_example_command()
    assert argv[0] == "supervisor-graph"
    proc = subprocess.run([CLI, *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # its last case fails on purpose
    assert "cannot read it" not in proc.stderr
    assert "5 cases: 4 passed, 1 failed, 0 errored" in proc.stdout
    data = json.loads((tmp_path / "report.json").read_text())
    assert [c["status"] for c in data["cases"]] == ["passed"] * 4 + ["failed"]
    assert data["cases"][4]["runs"][0]["differences"][0]["kind"] == "order"
    suite = ET.parse(tmp_path / "report.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("5", "1", "0")


def test_the_example_runs_the_same_cases_as_naming_the_file(tmp_path: Path) -> None:
    proc = sg("supervisor_graph.examples.research_write:agent", str(DEMO_CASES), "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 1, proc.stderr
    assert [c["id"] for c in json.loads((tmp_path / "r.json").read_text())["cases"]] == [
        "research-then-write", "publish-approved", "publish-edited", "publish-rejected", "writes-before-research",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "args", [["--example", TEAM], ["--example", "cases.yaml", "--url", "http://127.0.0.1:9/agent"], [TEAM]]
)
def test_example_with_a_target_or_no_cases_at_all_exits_2(args: list[str]) -> None:
    proc = sg(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("supervisor-graph: error: ")


def test_a_piped_table_never_cuts_a_case_id(tmp_path: Path) -> None:
    ids = ["the-team-researches-bees-before-it-writes-anything-at-all", "a-delegation-to-a-poet-that-never-happens-here"]
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        f"- id: {ids[0]}\n  input: Research bees\n  expect: {{delegations: [research_agent, writer_agent]}}\n"
        f"- id: {ids[1]}\n  input: Research bees\n  expect: {{delegations: [writer_agent], output: not-in-the-answer}}\n"
    )
    env = {**os.environ, "COLUMNS": "30", "TERM": "dumb"}
    proc = subprocess.run([CLI, "eval", TEAM, str(cases)], cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for case_id in ids:  # whole, on one line: what a reader greps a CI log for
        assert any(case_id in line for line in proc.stdout.splitlines()), proc.stdout
    assert any("extra delegation to research_agent" in line for line in proc.stdout.splitlines()), proc.stdout


def test_passing_cases_exit_0_and_a_baseline_is_compared(tmp_path: Path) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text("- id: bees\n  input: Research bees\n  expect: {delegations: [research_agent, writer_agent], output: bees}\n")
    first = sg(TEAM, str(cases), "--json", str(tmp_path / "before.json"))
    assert first.returncode == 0, first.stdout + first.stderr
    again = sg(TEAM, str(cases), "--repeat", "2", "--concurrency", "2", "--baseline", str(tmp_path / "before.json"))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "pass^2" in again.stdout and "no case got better or worse than the baseline" in again.stdout


@pytest.mark.parametrize(
    ("args", "content", "message"),
    [
        ([TEAM], "- id: c\n  input: hi\n  expect: {output: {startswith: x}}\n", "case 'c': expect.output.startswith: unknown matcher 'startswith'"),
        ([TEAM], "- id: c\n  input: hi\n  expect: {delegations: [poet]}\n", "case 'c': expect.delegations[0].agent: 'parent-agent' has no subagent 'poet'"),
        ([TEAM], "- id: c\n  input: hi\n  expect: {scorers: ['nowhere.at_all:scorer']}\n", "scorer 'nowhere.at_all:scorer' does not import"),
        ([TEAM], "cases: [\n", "not YAML"),
        (["tests.supervisor_graph.nowhere:team"], "- id: c\n  input: hi\n", "cannot import 'tests.supervisor_graph.nowhere'"),
    ],
)
def test_the_harness_that_cannot_run_exits_2(tmp_path: Path, args: list[str], content: str, message: str) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text(content)
    proc = sg(*args, str(cases))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and proc.stderr.startswith("supervisor-graph: error: ")


def test_against_a_served_agent_over_agui(tmp_path: Path) -> None:
    from fastapi import FastAPI

    from supervisor_graph.agui import AGUIAgent, add_agui_endpoint
    from tests.agui.conftest import ThreadServer
    from tests.supervisor_graph.evals_team import build_team

    app = FastAPI()
    add_agui_endpoint(app, AGUIAgent(build_team(), resource_id="u", subagent_visibility="attributed"), "/agent")
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        '{"id": "tree", "input": "Research bees", "expect": {"delegations": [{"agent": "research_agent", "delegations": ["fact_agent"]}, "writer_agent"]}}\n'
        '{"id": "wrong", "input": "Research bees", "expect": {"delegations": ["writer_agent"]}}\n'
    )
    with ThreadServer(app) as server:
        proc = sg(str(cases), "--url", server.url + "/agent", "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert [c["status"] for c in data["cases"]] == ["passed", "failed"]
    assert data["cases"][1]["runs"][0]["differences"][0]["message"].startswith("extra delegation to research_agent")
