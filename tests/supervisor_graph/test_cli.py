"""The `supervisor-graph` command, run as a user runs it: in a subprocess (SPEC §16)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from supervisor_graph.cli.main import EXIT_PAUSED, CLIError, load_agent, main

EXAMPLE = "supervisor_graph.examples.research_write:agent"
PUBLISH = "Research bees, write an article and publish it"

COUNTER = """
from langchain_core.messages import HumanMessage
from supervisor_graph import Agent
from supervisor_graph.testing import ScriptedChatModel

def count(messages):
    return f"user messages seen: {sum(isinstance(m, HumanMessage) for m in messages)}"

agent = Agent(id="counter", model=ScriptedChatModel(policy=count))
not_an_agent = 42
"""

# Two calls that need approval and one that suspends, all in one turn.
JANITOR = """
from langchain_core.messages import ToolMessage
from pydantic import BaseModel
from supervisor_graph import Agent, create_tool, suspend
from supervisor_graph.testing import ScriptedChatModel, tool_call

class Path(BaseModel):
    path: str

class Question(BaseModel):
    question: str

class Answer(BaseModel):
    answer: str

def ask(args):
    return f"user said {suspend({'question': args.question}).answer}"

def policy(messages):
    done = sorted(m.content for m in messages if isinstance(m, ToolMessage))
    if done:
        return " | ".join(done)
    return [
        tool_call("delete_file", {"path": "a.txt"}),
        tool_call("delete_file", {"path": "b.txt"}),
        tool_call("ask_user", {"question": "Which colour?"}),
    ]

agent = Agent(
    id="janitor",
    model=ScriptedChatModel(policy=policy),
    tools=[
        create_tool(id="delete_file", description="Delete a file.", input_schema=Path,
                    execute=lambda a: f"deleted {a.path}", require_approval=True),
        create_tool(id="ask_user", description="Ask the user.", input_schema=Question, execute=ask,
                    resume_schema=Answer),
    ],
)
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
    (tmp_path / "janitor.py").write_text(JANITOR)
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
    assert "parent-agent updated its working memory: " in out and "- AI in education" in out
    assert "update_working_memory" not in out  # shown as what it did, not as a tool call
    assert "finish: stop | tokens: 60 in, 30 out, 90 total" in out
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
    assert chunks[-1]["finish_reason"] == "stop" and chunks[-1]["usage"]["total_tokens"] == 90
    assert all(c["run_id"] == chunks[0]["run_id"] for c in chunks)
    assert ["parent-agent", "research-agent"] in [c["agent_path"] for c in chunks]


def test_run_shows_the_live_view(workdir: Path) -> None:
    proc = cli("run", EXAMPLE, "Research owls", "--max-steps", "5", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert "parent-agent -> research-agent:" in proc.stdout
    assert "Here is your article on owls." in proc.stdout


def test_run_prints_usage_by_agent_when_several_agents_used_tokens(workdir: Path) -> None:
    proc = cli("run", EXAMPLE, "Research owls", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("finish: stop | tokens: 60 in, 30 out, 90 total"))
    assert lines[at + 1 :] == [
        "  parent-agent: 40 in, 20 out, 60 total",
        "  parent-agent/research-agent: 10 in, 5 out, 15 total",
        "  parent-agent/writing-agent: 10 in, 5 out, 15 total",
    ]
    solo = cli("run", "counter.py:agent", "hi", cwd=workdir)
    assert solo.returncode == 0, solo.stderr
    assert solo.stdout.splitlines()[-1].startswith("finish: stop | tokens: 10 in, 5 out, 15 total")  # nothing to split
    as_json = cli("run", EXAMPLE, "Research owls", "--json", cwd=workdir)
    finish = json.loads(as_json.stdout.splitlines()[-1])
    assert finish["payload"]["usage_by_agent"]["parent-agent/writing-agent"] == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}


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
    assert_one_error_line(proc, "pip install pygraphviz", "pyppeteer")  # a fixable mistake: status 2
    assert not (workdir / "graph.png").exists()


def test_run_refuses_a_db_in_a_missing_folder(workdir: Path) -> None:
    proc = cli("run", "counter.py:agent", "hi", "--thread", "t", "--db", "no/such/folder/t.db", cwd=workdir)
    assert_one_error_line(proc, "does not exist")
    assert proc.stdout == "" and not (workdir / "no").exists()


def test_demo_with_approve_all_exercises_the_approval(workdir: Path) -> None:
    approved = cli("demo", "--approve-all", cwd=workdir, without_keys=True)
    assert approved.returncode == 0, approved.stderr
    assert "publish approved" in approved.stdout and "Published 'AI in education" in approved.stdout
    declined = cli("demo", "--decline-all", cwd=workdir, without_keys=True)
    assert declined.returncode == 0 and "Not published: The user declined" in declined.stdout


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


def test_bad_run_options_give_one_line_before_anything_is_printed(workdir: Path) -> None:
    proc = cli("run", "counter.py:agent", "hello", "--max-steps", "0", cwd=workdir)
    assert_one_error_line(proc, "--max-steps must be at least 1")
    assert proc.stdout == ""


def test_a_model_without_a_key_fails_with_one_line(workdir: Path) -> None:
    (workdir / "real.py").write_text(
        "from supervisor_graph import Agent\nagent = Agent(id='real', model='openai/gpt-5-mini')\n"
    )
    proc = cli("run", "real.py:agent", "hello", cwd=workdir, without_keys=True)
    assert_one_error_line(proc, "MissingAPIKeyError", "OPENAI_API_KEY")
    assert proc.stdout == ""  # checked before anything is printed


def test_draw_needs_no_key(workdir: Path) -> None:
    (workdir / "real.py").write_text(
        "from supervisor_graph import Agent\nsub = Agent(id='sub', description='Subs.', model='openai/gpt-5-mini')\n"
        "agent = Agent(id='real', model='openai/gpt-5-mini', agents={'sub': sub})\n"
    )
    proc = cli("draw", "real.py:agent", cwd=workdir, without_keys=True)
    assert proc.returncode == 0 and "sub.start" in proc.stdout and proc.stderr == "", proc.stderr


@pytest.mark.parametrize("command", [["run", "slow.py:agent", "hello", "--json"], ["draw", "counter.py:agent"]])
def test_output_piped_into_a_reader_that_stops_ends_quietly(workdir: Path, command: list[str]) -> None:
    """`supervisor-graph run ... --json | head -1`: no traceback when the reader goes away
    (the slow model writes its chunks after `head` has gone)."""
    (workdir / "slow.py").write_text(
        "from supervisor_graph import Agent\nfrom supervisor_graph.testing import ScriptedChatModel\n"
        "agent = Agent(id='slow', model=ScriptedChatModel(responses=['a b c d e f g'], latency=0.5))\n"
    )
    shell = f"{sys.executable} -m supervisor_graph.cli {' '.join(command)} | head -1"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", shell], cwd=workdir, capture_output=True, text=True, timeout=120)
    assert proc.stdout.count("\n") == 1 and proc.stderr == "", proc.stderr
    assert proc.returncode in (0, 141)  # 141: SIGPIPE, as other Unix tools end


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


# -- approvals ----------------------------------------------------------------------


def terminal(*args: str, cwd: Path) -> pexpect.spawn:
    """The command in a real terminal (a pty), as a person runs it."""
    env = {**os.environ, "TERM": "dumb", "COLUMNS": "200", "LINES": "50"}  # plain text, no wrapping
    env.pop("OPENAI_API_KEY", None)
    return pexpect.spawn(
        sys.executable, ["-m", "supervisor_graph.cli", *args], cwd=str(cwd), env=env, encoding="utf-8", timeout=60
    )


def finish(child: pexpect.spawn) -> tuple[str, int]:
    child.expect(pexpect.EOF)
    child.close()
    return child.before, child.exitstatus


def test_run_asks_for_approval_at_the_terminal(workdir: Path) -> None:
    child = terminal("run", EXAMPLE, PUBLISH, cwd=workdir)
    prompt = r'approve publish \{"title": "Bees: what we know", .*\(called by parent-agent\)\? \[y\]es / \[e\]dit / \[n\]o / \[a\]rgs: '
    child.expect("publish waits for approval")
    child.expect(prompt)
    child.sendline("a")  # show the arguments, in full
    child.expect("  title: Bees: what we know")
    child.expect("In short, bees is worth following closely")
    child.expect(prompt)
    child.sendline("later")
    child.expect(r"answer y \(approve\), e \(edit the arguments\), n \(reject, with a reason\), a \(show the arguments\)")
    child.expect(prompt)
    child.sendline("y")
    child.expect("publish approved")
    child.expect(r"publish returned: \"Published 'Bees: what we know' at /blog/bees-what-we-know")
    out, status = finish(child)
    assert status == 0, out
    assert "Here is your article on bees." in out and "Published 'Bees: what we know'" in out
    assert "finish: stop | tokens: 70 in, 35 out, 105 total" in out


def test_run_asks_for_each_pending_item_then_resumes_once(workdir: Path) -> None:
    child = terminal("run", "janitor.py:agent", "tidy up", cwd=workdir)
    answers = {}
    for _ in range(2):
        child.expect(r'approve delete_file \{"path": "(\w)\.txt"\} \(called by janitor\)\? ')
        path = child.match.group(1)
        answers[path] = "y" if path == "a" else "n"
        child.sendline(answers[path])
        if path == "b":
            child.expect(r"reason, for the agent \(Enter for none\): ")
            child.sendline("")
    child.expect("ask_user \\(called by janitor\\) is suspended and asks:")
    child.expect('"question": "Which colour\\?"')
    child.expect("resume data \\(JSON\\): ")
    child.sendline("blue")
    child.expect("not JSON")
    child.expect("resume data \\(JSON\\): ")
    child.sendline('{"colour": "blue"}')  # JSON, but not what the tool's resume schema asks for
    child.expect("does not match its resume schema")
    child.expect("resume data \\(JSON\\): ")  # asked again, and only this: the approvals are kept
    child.sendline('{"answer": "blue"}')
    out, status = finish(child)
    assert status == 0, out
    assert "The user declined this tool call; it did not run. | deleted a.txt | user said blue" in out
    assert sorted(answers) == ["a", "b"]


def test_run_edits_the_arguments_and_rejects_with_a_reason(workdir: Path) -> None:
    """SPEC §29 at the terminal: edit asks for JSON arguments until the tool's input schema
    takes them; reject asks for a reason, which the model sees as the call's result."""
    child = terminal("run", "janitor.py:agent", "tidy up", cwd=workdir)
    for _ in range(2):
        child.expect(r'approve delete_file \{"path": "(\w)\.txt"\} \(called by janitor\)\? \[y\]es / \[e\]dit / \[n\]o / \[a\]rgs: ')
        if child.match.group(1) == "a":
            child.sendline("e")
            child.expect(r'now: \{"path": "a.txt"\}')
            child.expect(r"new arguments \(JSON object, Enter to go back\): ")
            child.sendline("{path: c}")
            child.expect("not JSON")
            child.sendline('{"path": 3}')
            child.expect("path: Input should be a valid string")
            child.expect(r"new arguments \(JSON object, Enter to go back\): ")
            child.sendline('{"path": "c.txt"}')
            child.expect(r"delete_file approved with \{\"path\": \"c.txt\"\}")
        else:
            child.sendline("n")
            child.expect(r"reason, for the agent \(Enter for none\): ")
            child.sendline("b.txt is still in use")
            child.expect("delete_file declined")
    child.expect("resume data \\(JSON\\): ")
    child.sendline('{"answer": "red"}')
    out, status = finish(child)
    assert status == 0, out
    assert "Their reason: b.txt is still in use" in out
    assert "deleted c.txt" in out and "deleted a.txt" not in out and "deleted b.txt" not in out


def test_no_answer_at_the_prompt_leaves_the_run_paused(workdir: Path) -> None:
    child = terminal("run", EXAMPLE, PUBLISH, cwd=workdir)
    child.expect(r"\[a\]rgs: ")
    child.sendeof()
    out, status = finish(child)
    assert status == EXIT_PAUSED
    assert "supervisor-graph: paused: waiting for publish (approval, interrupt " in out


def test_json_stops_at_a_pause_with_status_3(workdir: Path) -> None:
    proc = cli("run", EXAMPLE, PUBLISH, "--json", cwd=workdir)
    assert proc.returncode == EXIT_PAUSED, proc.stderr
    chunks = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [c["type"] for c in chunks[-2:]] == ["tool-call-approval", "finish"]
    approval = chunks[-2]["payload"]
    assert approval["tool_name"] == "publish" and approval["interrupt_id"]
    assert chunks[-1]["finish_reason"] == "suspended"
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"supervisor-graph: paused: waiting for publish (approval, interrupt {approval['interrupt_id']})")
    assert "--approve-all / --decline-all" in line


def test_json_with_approve_all_resumes_and_streams_on(workdir: Path) -> None:
    proc = cli("run", EXAMPLE, PUBLISH, "--json", "--approve-all", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    chunks = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [c["type"] for c in chunks]
    assert types.count("start") == 2 and types.count("finish") == 2  # the run, then its resumption
    assert [c["finish_reason"] for c in chunks if c["type"] == "finish"] == ["suspended", "stop"]
    (published,) = [c["payload"] for c in chunks if c["type"] == "tool-result" and c["payload"]["tool_name"] == "publish"]
    assert published["result"].startswith("Published 'Bees: what we know'")
    assert proc.stderr.startswith("supervisor-graph: approved publish (interrupt ")


def test_decline_all_without_a_terminal(workdir: Path) -> None:
    proc = cli("run", EXAMPLE, PUBLISH, "--decline-all", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert "publish declined (--decline-all)" in proc.stdout
    assert "Not published: The user declined this tool call; it did not run." in proc.stdout


def test_approve_all_cannot_answer_a_suspended_tool(workdir: Path) -> None:
    db = workdir / "threads.db"
    proc = cli("run", "janitor.py:agent", "tidy up", "--approve-all", "--thread", "t1", "--db", str(db), cwd=workdir)
    assert proc.returncode == EXIT_PAUSED
    assert "finish: suspended" in proc.stdout and "approved" not in proc.stdout  # nothing was answered
    (line,) = proc.stderr.splitlines()
    assert "delete_file (approval, " in line and "ask_user (suspend, " in line
    assert "it stays paused in thread 't1'" in line


def test_approve_and_decline_all_exclude_each_other(workdir: Path) -> None:
    proc = cli("run", EXAMPLE, "hi", "--approve-all", "--decline-all", cwd=workdir)
    assert proc.returncode == 2 and "not allowed with argument" in proc.stderr


def test_main_in_process_gives_back_the_callers_sigpipe_handler() -> None:
    import signal

    before = signal.getsignal(signal.SIGPIPE)
    assert main(["draw", EXAMPLE]) == 0
    assert signal.getsignal(signal.SIGPIPE) == before  # a test suite calling main() must not die on a closed socket later


def test_serve_takes_a_read_timeout(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`--read-timeout S` (default 30, 0 for none) reaches the app; a negative one is a
    one-line mistake before anything is served (the deadline itself: tests/agui/test_deadline.py)."""
    from supervisor_graph.cli.main import build_parser

    assert build_parser().parse_args(["serve", "x:y"]).read_timeout == 30.0
    assert build_parser().parse_args(["serve", "x:y", "--read-timeout", "2.5"]).read_timeout == 2.5
    monkeypatch.delenv("SUPERVISOR_GRAPH_AUTH_TOKEN", raising=False)
    assert main(["serve", "tests/agui/served.py:supervisor", "--read-timeout", "-1"]) == 2
    assert "--read-timeout must be 0 (no deadline) or more, not -1" in capsys.readouterr().err
