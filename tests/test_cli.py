"""The `supervisor-graph` command, run as a user runs it: in a subprocess (SPEC §16)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from supervisor_graph.cli import CLIError, load_agent, main

EXAMPLE = "supervisor_graph.examples.research_write:agent"

COUNTER = """
from langchain_core.messages import HumanMessage
from supervisor_graph import Agent
from supervisor_graph.testing import ScriptedChatModel

def count(messages):
    return f"user messages seen: {sum(isinstance(m, HumanMessage) for m in messages)}"

agent = Agent(id="counter", model=ScriptedChatModel(policy=count))
not_an_agent = 42
"""


def cli(*args: str, cwd: Path, without_keys: bool = False) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if without_keys:
        env.pop("OPENAI_API_KEY", None)
        env.pop("OPENAI_BASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "supervisor_graph.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "counter.py").write_text(COUNTER)
    (tmp_path / "broken.py").write_text("from supervisor_graph import Agent\nagent = Agent(id='', model='openai/x')\n")
    return tmp_path


def assert_one_error_line(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("supervisor-graph: error: ")
    for word in words:
        assert word in lines[0]


def test_demo_runs_offline_and_shows_each_delegation(workdir: Path) -> None:
    proc = cli("demo", cwd=workdir, without_keys=True)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    asked_research = out.index("parent-agent -> research-agent: 'Gather the key facts about AI in education.")
    research_done = out.index("research-agent answered in ")
    asked_writing = out.index("parent-agent -> writing-agent: 'Write a short article about AI in education")
    writing_done = out.index("writing-agent answered in ")
    assert asked_research < research_done < asked_writing < writing_done
    assert "Here is your article on AI in education." in out
    assert "# AI in education: what we know" in out  # the article, unwrapped when not a terminal
    assert "finish: stop | tokens: 50 in, 25 out, 75 total" in out
    assert proc.stderr == ""


def test_demo_takes_a_prompt(workdir: Path) -> None:
    proc = cli("demo", "--prompt", "Write an article about honeybees", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert "Here is your article on honeybees." in proc.stdout


def test_demo_with_a_model_and_no_key_says_so(workdir: Path) -> None:
    proc = cli("demo", "--model", "openai/gpt-5-mini", cwd=workdir, without_keys=True)
    assert_one_error_line(proc, "OPENAI_API_KEY", "OPENAI_BASE_URL")
    assert proc.stdout == ""


def test_demo_with_an_unknown_provider(workdir: Path) -> None:
    assert_one_error_line(cli("demo", "--model", "acme/model", cwd=workdir), "unknown provider 'acme'")


def test_run_json_prints_one_chunk_per_line(workdir: Path) -> None:
    proc = cli("run", EXAMPLE, "Research bees and write an article", "--json", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    chunks = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [c["type"] for c in chunks]
    assert types[0] == "start" and types[-1] == "finish"
    assert {"delegation-start", "delegation-complete", "text-delta", "step-finish"} <= set(types)
    assert [c["payload"]["agent_id"] for c in chunks if c["type"] == "delegation-start"] == [
        "research-agent",
        "writing-agent",
    ]
    assert chunks[-1]["finish_reason"] == "stop" and chunks[-1]["usage"]["total_tokens"] == 75
    assert all(c["run_id"] == chunks[0]["run_id"] for c in chunks)
    assert ["parent-agent", "research-agent"] in [c["agent_path"] for c in chunks]


def test_run_shows_the_live_view(workdir: Path) -> None:
    proc = cli("run", EXAMPLE, "Research owls", "--max-steps", "5", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert "parent-agent -> research-agent:" in proc.stdout
    assert "Here is your article on owls." in proc.stdout


def test_run_a_file_target_continues_a_thread(workdir: Path) -> None:
    db = workdir / "threads.db"
    first = cli("run", "counter.py:agent", "hello", "--thread", "t1", "--db", str(db), cwd=workdir)
    second = cli("run", "counter.py:agent", "again", "--thread", "t1", "--db", str(db), cwd=workdir)
    other = cli("run", "counter.py:agent", "hi", "--thread", "t2", "--db", str(db), cwd=workdir)
    fresh = cli("run", "counter.py:agent", "hi", cwd=workdir)
    for proc in (first, second, other, fresh):
        assert proc.returncode == 0, proc.stderr
    assert "user messages seen: 1" in first.stdout and "thread: t1" in first.stdout
    assert "user messages seen: 2" in second.stdout
    assert "user messages seen: 1" in other.stdout
    assert "user messages seen: 1" in fresh.stdout
    assert db.is_file()


def test_run_thread_uses_the_default_db_in_the_working_directory(workdir: Path) -> None:
    proc = cli("run", "counter:agent", "hello", "--thread", "t", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert (workdir / "supervisor-graph.db").is_file()


def test_draw_prints_mermaid(workdir: Path) -> None:
    proc = cli("draw", EXAMPLE, cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.lstrip("-\n config:").count("graph TD;") == 1
    for node in ("supervisor", "tools", "iteration", "task_complete", "research_agent", "writing_agent"):
        assert f"({node})" in proc.stdout
    for node in ("research_agent.start", "research_agent.complete", "writing_agent.start", "writing_agent.complete"):
        assert f"({node})" in proc.stdout


@pytest.mark.skipif(
    any(importlib.util.find_spec(name) for name in ("pygraphviz", "pyppeteer")), reason="a PNG renderer is installed"
)
def test_draw_png_without_a_renderer(workdir: Path) -> None:
    proc = cli("draw", EXAMPLE, "--png", "graph.png", cwd=workdir)
    assert proc.returncode == 1
    assert "no local PNG renderer" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (workdir / "graph.png").exists()


@pytest.mark.parametrize("command", ["run", "draw"])
@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("counter", ["must look like module:attr or path/to/file.py:attr"]),
        ("no_such_module_xyz:agent", ["no module named 'no_such_module_xyz'"]),
        ("missing.py:agent", ["file 'missing.py' not found"]),
        ("counter.py:nope", ["has no attribute 'nope'", "agents defined there: agent"]),
        ("counter:not_an_agent", ["is not a supervisor_graph.Agent but a int object"]),
        ("supervisor_graph.examples.research_write:graph", ["not a supervisor_graph.Agent but a CompiledStateGraph"]),
        ("broken.py:agent", ["importing 'broken.py' failed: ValidationError", "id must be a non-empty string"]),
    ],
)
def test_bad_targets_give_one_line(workdir: Path, command: str, target: str, words: list[str]) -> None:
    args = ("run", target, "hello") if command == "run" else ("draw", target)
    proc = cli(*args, cwd=workdir)
    assert_one_error_line(proc, *words)
    assert proc.stdout == ""


def test_bad_run_options_give_one_line(workdir: Path) -> None:
    proc = cli("run", "counter.py:agent", "hello", "--max-steps", "0", cwd=workdir)
    assert_one_error_line(proc, "max_steps")


def test_a_model_without_a_key_fails_with_one_line(workdir: Path) -> None:
    (workdir / "real.py").write_text(
        "from supervisor_graph import Agent\nagent = Agent(id='real', model='openai/gpt-5-mini')\n"
    )
    proc = cli("run", "real.py:agent", "hello", cwd=workdir, without_keys=True)
    assert_one_error_line(proc, "MissingAPIKeyError", "OPENAI_API_KEY")


# -- in process -------------------------------------------------------------------


def test_main_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["draw", EXAMPLE]) == 0
    assert "(research_agent.start)" in capsys.readouterr().out
    assert main(["draw", "nope"]) == 2
    assert capsys.readouterr().err.startswith("supervisor-graph: error: target 'nope'")


def test_load_agent() -> None:
    assert load_agent(EXAMPLE).id == "parent-agent"
    with pytest.raises(CLIError, match="agents defined there: agent"):
        load_agent("supervisor_graph.examples.research_write:nothing")
