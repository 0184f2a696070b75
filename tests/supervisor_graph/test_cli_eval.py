"""`supervisor-graph eval` as CI runs it: a subprocess, its exit status (0 every case
passed, 1 a case failed, 2 the harness could not run), its JSON and JUnit files."""

from __future__ import annotations

import json
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


def test_the_demo_dataset_fails_on_its_one_purposeful_case(tmp_path: Path) -> None:
    proc = sg("supervisor_graph.examples.research_write:agent", str(DEMO_CASES), "--json", str(tmp_path / "r.json"),
              "--junit", str(tmp_path / "r.xml"))  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "5 cases: 4 passed, 1 failed, 0 errored" in proc.stdout
    data = json.loads((tmp_path / "r.json").read_text())
    assert [c["status"] for c in data["cases"]] == ["passed"] * 4 + ["failed"]
    assert data["cases"][4]["runs"][0]["differences"][0]["kind"] == "order"
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("5", "1", "0")


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
