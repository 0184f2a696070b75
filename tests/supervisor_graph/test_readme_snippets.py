"""Every python block of README.md and of the documentation site's pages (`docs/*.md`)
runs as written, and so do the command lines that use `my_agents.py` (issue 26 item 6,
issue 30 item 2).

Blocks are named after their section (`quick-start-1`), whatever page holds them; a block
found twice (the quick start, in the README and on its page) must read the same in both
places and runs once. Each block is pasted into `snippet.py` in a fresh folder beside the
files the pages show in full (`<!-- file: my_agents.py -->` above a block), and run there
as a script.
Blocks that use model strings (or `my_agents.py`) talk to the fake OpenAI server; the
others run with no OpenAI variables at all. `<!-- not run: reason -->` marks a block that
cannot run offline: it is only compiled, and reported as a skip and a warning, and
`NOT_RUN` below must list it. The blocks run concurrently (the whole file takes about
half a minute); each test waits for its own.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from supervisor_graph.testing.openai_server import FakeOpenAI, default_reply

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
# The README first, then the site's pages (the API pages hold no code; notebooks run in tests/notebooks).
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
CLI = str(Path(sys.executable).with_name("supervisor-graph"))

# The blocks that cannot run offline, by id, and why (the page's marker says it too).
NOT_RUN = {"scale-out-1": "needs two Aegra servers, PostgreSQL and Redis"}

# What some blocks must print, beyond exiting with 0.
EXPECT = {
    "quick-start-1": "stop",
    "the-compiled-graph-1": "research_agent.start",
    "approvals-suspend-and-client-tools-1": "Paid invoice 7: 120.00 EUR",  # approved, then run
    # an edit refused, then run with the edited args once; a rejection whose reason the model sees
    "decisions-approve-edit-reject-with-a-reason-1": "refused: True []\n[(120, 'acme')] sent 120 to acme\n"
    "[(120, 'acme')] Result: The user declined this tool call; it did not run. Their reason: Already paid this month.",
    "one-answer-everywhere-1": "[1] ['refunded 1', 'The user declined this tool call; it did not run. Their reason: Order 2",
    "embedding-in-your-app-1": "Published",
    "memory-and-threads-1": "user-42",
    "observability-1": "['invoke_agent Editor', 'invoke_agent Researcher']",
    "what-a-subagent-sees-and-what-its-supervisor-sees-of-it-1": "True True True",
    "budgets-1": "[Budget exceeded] tokens\nstop 90",
    "prompt-caching-1": "{'type': 'ephemeral'} {'type': 'ephemeral'} {'type': 'ephemeral'}\nTrue True",
    "compaction-1": "turn 10: 2095 -> 721 tokens\nturn 16: 2113 -> 721 tokens",
    "a-supervisor-that-answers-an-object-1": "Report ['adaptive tutors', 'faster marking']",
    "subagents-with-a-schema-1": "[{'facts': ['water boils at 100 C']}] Water boils at 100 C.",
    "streaming-partial-objects-1": "city='Oslo' forecast='light snow all day'",
    "the-compiled-graph-servers-and-protocols-1": "{'count': 3}",
    # the demo dataset: four cases pass, the one written to fail fails with its difference
    "a-case-file-1": "5 cases: 4 passed, 1 failed, 0 errored\nresearch-then-write passed",
    "the-report-and-the-gate-1": "ok",
    # guardrails: redacted before the model and the thread; a retry's feedback; a tripwire and the
    # conversation after it; a poisoned tool result stopping a subagent; an escalation approved;
    # a streamed answer that only ever held checked windows
    "guardrails-1": "My card is [REDACTED_CREDIT_CARD], mail me at [REDACTED_EMAIL]\n"
    "stop Noted: My card is [REDACTED_CREDIT_CARD], mail me at [REDACTED_EMAIL]",
    "verdicts-1": "Water boils at 100 C (https://example.org/water).\nYour answer was not sent: Cite the page you used (its URL).",
    "tripwires-1": "tripwire pii input pii: found secret at input\nstop Happy to help.",
    "indirect-prompt-injection-tool-results-and-subagent-results-1": "False [Delegation Failed] the guardrail "
    "'prompt_injection' stopped reader at its tool_result boundary. Try another approach or explain the failure.\n"
    "1 I could not check the hours.\n['boss', 'boss/reader', 'boss/reader/guard:prompt_injection']",
    "escalating-to-a-person-1": "suspended guard\nstop Refund done.",
    "modes-1": "Your invoice went to [REDACTED_EMAIL] on Monday; write to [REDACTED_EMAIL].",
    "tool-arguments-and-results-1": 'redact {"to": "[REDACTED_EMAIL]", "card": "[REDACTED_CREDIT_CARD]", "amount": 12.5}\n'
    'mask {"to": "**@******e.com", "card": "************1111", "amount": 12.5}\n'
    'hash {"to": "<email:f4e19df2>", "card": "<credit_card:9bbef194>", "amount": 12.5}\n'
    "block pii: found email, credit_card at tool_args",
    "the-pii-guard-1": "[('secret', 'ghp_abcdefghijklmnopqrstuvwxyz0123456789')]",
}

_MARKER = re.compile(r"<!--\s*(file|not run):\s*(.*?)\s*-->")
_FENCE = re.compile(r"( *)```(\w*)\s*")
_HEADING = re.compile(r"#{1,3} (.+)")


@dataclass(frozen=True)
class Block:
    page: str  # where it is, relative to the repository
    id: str
    lang: str
    source: str
    marker: tuple[str, str] | None  # ("file", name) or ("not run", reason)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def page_blocks(page: Path) -> list[Block]:
    """Every fenced block of `page`, named after its section and its place among the
    section's blocks of the same language (`quick-start-1`)."""
    blocks: list[Block] = []
    counts: Counter[tuple[str, str]] = Counter()
    section, previous = "top", ""
    lines = iter(page.read_text().splitlines())
    for line in lines:
        fence = _FENCE.fullmatch(line)
        if fence is None:
            heading = _HEADING.fullmatch(line)
            if heading:
                section = _slug(heading.group(1))
            if line.strip():
                previous = line.strip()
            continue
        indent, lang = fence.group(1), fence.group(2)
        body = []
        for inner in lines:
            if inner.rstrip() == indent + "```":
                break
            body.append(inner[len(indent) :])
        counts[(section, lang)] += 1
        marker = _MARKER.fullmatch(previous)
        blocks.append(
            Block(str(page.relative_to(REPO)), f"{section}-{counts[(section, lang)]}", lang, "\n".join(body) + "\n", (marker.group(1), marker.group(2)) if marker else None)
        )
        previous = ""
    return blocks


def readme_blocks() -> list[Block]:
    """The blocks of the README and the site's pages, each once: a block met again under
    the same id on a later page is left out (`test_a_block_found_twice_reads_the_same`)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for page in PAGES:
        for block in page_blocks(page):
            if (block.lang, block.id) not in seen:
                seen.add((block.lang, block.id))
                out.append(block)
    return out


BLOCKS = [b for b in readme_blocks() if b.lang == "python"]
FILES = {b.marker[1]: b.source for b in BLOCKS if b.marker and b.marker[0] == "file"}
SCRIPTS = [b for b in BLOCKS if b.marker is None]
NOT_RUN_BLOCKS = [b for b in BLOCKS if b.marker and b.marker[0] == "not run"]


def cli_lines() -> list[str]:
    """The command lines on `my_agents.py` of the README and the site's pages, optional
    parts (`[...]`) left out and the first of alternatives (`list|show|publish`) taken."""
    out = []
    for block in readme_blocks():
        for line in block.source.splitlines() if block.lang == "bash" else ():
            if line.startswith("supervisor-graph ") and "my_agents.py:" in line:
                line = re.sub(r"\s*\[[^\]]*\]", "", line)
                out.append(re.sub(r"\b(\w+)(\|\w+)+", r"\1", line))
    return out


CLI_LINES = cli_lines()
CLI_RUNS = [*CLI_LINES, *(f"{line} --json" for line in CLI_LINES if " run " in line)]


def _cli_id(line: str) -> str:
    words = [w for w in shlex.split(line)[1:] if ":" not in w and not w.startswith("-") and " " not in w]
    return "cli-" + "-".join(words[:2]) + ("-json" if line.endswith("--json") else "")


def reply(body: dict[str, Any]) -> Any:
    """`default_reply`, except that a model offered a tool the user's request names calls
    it (arguments from its schema), so the approvals block's "Pay invoice 7" pauses on `pay`."""
    last = body["messages"][-1]
    if last["role"] == "user":
        words = str(last.get("content")).lower().split()
        for tool in body.get("tools") or []:
            function = tool["function"]
            if function["name"] in words:
                example = {"integer": 7, "number": 120.0, "boolean": True}
                properties = function.get("parameters", {}).get("properties", {})
                return {"tool": function["name"], "args": {k: example.get(v.get("type"), "x") for k, v in properties.items()}}
    return default_reply(body)


def _env(base_url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    if base_url is not None:
        env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="offline")
    return env


def _folder(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir()
    for file_name, source in FILES.items():
        (folder / file_name).write_text(source)
    return folder


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


class Runs:
    """The selected blocks and command lines, started at once on a few workers."""

    def __init__(self, root: Path, base_url: str, wanted: set[str]) -> None:
        self.pool = ThreadPoolExecutor(max_workers=4)
        self.futures: dict[str, Future[Any]] = {}
        for block in SCRIPTS:
            if block.id in wanted:
                self.futures[block.id] = self.pool.submit(self._script, root, block, base_url)
        for name in FILES:
            if f"file-{name}" in wanted:
                self.futures[f"file-{name}"] = self.pool.submit(self._import, root, name)
        if wanted & {_cli_id(line) for line in CLI_RUNS}:
            chain = self.pool.submit(self._cli, root, base_url)
            for line in CLI_RUNS:
                self.futures[_cli_id(line)] = chain

    def _script(self, root: Path, block: Block, base_url: str) -> subprocess.CompletedProcess[str]:
        folder = _folder(root, block.id)
        (folder / "snippet.py").write_text(block.source)
        online = "openai/" in block.source or "openai:" in block.source or "my_agents" in block.source
        return _run([sys.executable, "snippet.py"], folder, _env(base_url if online else None))

    def _import(self, root: Path, name: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
        folder = _folder(root, f"import-{_slug(name)}")
        module = name.removesuffix(".py")
        proc = _run([sys.executable, "-c", f"import {module}"], folder, _env(None))  # no key, no server
        return proc, sorted(p.name for p in folder.iterdir() if p.name != "__pycache__")

    def _cli(self, root: Path, base_url: str) -> dict[str, subprocess.CompletedProcess[str]]:
        folder = _folder(root, "cli")  # in page order, in one folder, as a user would
        return {_cli_id(line): _run([CLI, *shlex.split(line)[1:]], folder, _env(base_url)) for line in CLI_RUNS}

    def result(self, key: str) -> Any:
        outcome = self.futures[key].result(timeout=600)
        return outcome[key] if isinstance(outcome, dict) else outcome


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    prefixes = {"block_id": "", "file_name": "file-", "cli_id": ""}
    wanted = {
        prefix + item.callspec.params[name]
        for item in request.session.items
        if getattr(item, "module", None) is request.module and hasattr(item, "callspec")
        for name, prefix in prefixes.items()
        if name in item.callspec.params
    }
    with FakeOpenAI(reply) as server:
        started = Runs(tmp_path_factory.mktemp("readme"), server.base_url, wanted)
        yield started
        started.pool.shutdown(wait=True, cancel_futures=True)


def _check(proc: subprocess.CompletedProcess[str], what: str) -> None:
    assert proc.returncode == 0, f"{what} exited with {proc.returncode}:\n{proc.stderr[-4000:]}"
    assert "Traceback" not in proc.stderr and "an error occurred" not in proc.stderr, f"{what}:\n{proc.stderr[-4000:]}"


def test_the_readme_has_blocks_and_every_marker_is_known() -> None:
    assert len(BLOCKS) >= 15 and "my_agents.py" in FILES and CLI_LINES
    assert any(b.page == "README.md" for b in BLOCKS) and any(b.page.startswith("docs/") for b in BLOCKS)
    for block in BLOCKS:
        assert block.marker is None or block.marker[0] in ("file", "not run"), block
    assert len({b.id for b in BLOCKS}) == len(BLOCKS)


def test_a_block_found_twice_reads_the_same() -> None:
    """A block under the same id on two pages (the quick start, in the README and on its
    page) is one example shown twice: it runs once, so both copies must be that one."""
    first: dict[tuple[str, str], Block] = {}
    for page in PAGES:
        for block in page_blocks(page):
            earlier = first.setdefault((block.lang, block.id), block)
            assert block.source == earlier.source and block.marker == earlier.marker, (
                f"{block.id} differs between {earlier.page} and {block.page}: make them the same or rename a section"
            )


def test_the_blocks_not_run_are_few_and_listed() -> None:
    found = {b.id: b.marker[1] for b in NOT_RUN_BLOCKS if b.marker}
    print("\nREADME and docs python blocks NOT RUN (only compiled):", *(f"  {k}: {v}" for k, v in found.items()), sep="\n")
    assert set(found) == set(NOT_RUN), f"update NOT_RUN in this file (and keep it short): {found}"
    assert len(found) <= 2


@pytest.mark.parametrize("block_id", [b.id for b in SCRIPTS])
def test_a_python_block_runs_as_written(runs: Runs, block_id: str) -> None:
    proc = runs.result(block_id)
    _check(proc, f"{next(b.page for b in SCRIPTS if b.id == block_id)} block {block_id}")
    if block_id in EXPECT:
        assert EXPECT[block_id] in proc.stdout, proc.stdout[-3000:]


@pytest.mark.parametrize("file_name", sorted(FILES))
def test_a_file_the_snippets_build_on_runs_nothing_on_import(runs: Runs, file_name: str) -> None:
    proc, files = runs.result(f"file-{file_name}")
    _check(proc, f"import of {file_name}")
    assert proc.stdout == "" and proc.stderr == ""
    assert files == sorted(FILES), f"importing {file_name} created {files}"  # no database opened, nothing run


@pytest.mark.parametrize("cli_id", [_cli_id(line) for line in CLI_RUNS])
def test_a_command_line_on_my_agents_runs(runs: Runs, cli_id: str) -> None:
    proc = runs.result(cli_id)
    _check(proc, cli_id)
    if cli_id.endswith("-json"):
        chunks = [json.loads(line) for line in proc.stdout.splitlines()]
        assert chunks[-1]["type"] == "finish" and chunks[-1]["finish_reason"] == "stop"


@pytest.mark.parametrize("block_id", [b.id for b in NOT_RUN_BLOCKS])
def test_a_block_not_run_still_compiles(block_id: str) -> None:
    block = next(b for b in NOT_RUN_BLOCKS if b.id == block_id)
    compile(block.source, f"{block.page}:{block_id}", "exec")
    reason = block.marker[1] if block.marker else ""
    warnings.warn(f"{block.page} block {block_id} is NOT RUN: {reason}", stacklevel=1)
    pytest.skip(f"{block.page} block {block_id} NOT RUN (compiled only): {reason}")
