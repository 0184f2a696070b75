"""`supervisor-graph run` shows what a run cost in USD when the price table knows its
models (SPEC §33), the total and each agent's; a model it lacks shows no cost and no
warning. Run as a user runs it: in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import genai_prices
import pytest

PRICED = """
from supervisor_graph import Agent
from supervisor_graph.testing import ScriptedChatModel, delegate

def on(model_name, provider, responses):
    return ScriptedChatModel(model_name=model_name, provider=provider, responses=responses,
                             input_tokens=1000, output_tokens=100)

researcher = Agent(id="research-agent", description="Finds facts.",
                   model=on("claude-sonnet-4-5", "anthropic", ["owls hunt at night"]))
agent = Agent(id="boss", model=on("gpt-4o", "openai", [delegate("research_agent", "owls"), "Owls hunt at night."]),
              agents={"research_agent": researcher})
solo = Agent(id="solo", model=ScriptedChatModel(responses=["hi"]))
"""


def _usd(model: str, provider: str, calls: int) -> float:
    usage = genai_prices.Usage(input_tokens=1000 * calls, output_tokens=100 * calls)
    return float(genai_prices.calc_price(usage, model, provider_id=provider).total_price)


def _run(target: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "supervisor_graph.cli", "run", target, "owls?"],
        cwd=cwd, env=dict(os.environ), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "priced.py").write_text(PRICED)
    return tmp_path


def test_run_shows_the_cost_of_the_run_and_of_each_agent(workdir: Path) -> None:
    proc = _run("priced.py:agent", workdir)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("finish: stop"))
    boss, researcher = _usd("gpt-4o", "openai", 2), _usd("claude-sonnet-4-5", "anthropic", 1)

    def shown(line: str) -> float:
        return float(line.split("$")[1].split()[0].rstrip("|"))

    assert "tokens: 3000 in, 300 out, 3300 total, $" in lines[at]
    assert shown(lines[at]) == pytest.approx(boss + researcher, rel=1e-2)
    assert lines[at + 1].startswith("  boss: 2000 in, 200 out, 2200 total, $") and shown(lines[at + 1]) == pytest.approx(boss, rel=1e-2)
    assert lines[at + 2].startswith("  boss/research-agent: 1000 in, 100 out, 1100 total, $")
    assert shown(lines[at + 2]) == pytest.approx(researcher, rel=1e-2)


def test_a_model_without_a_price_shows_no_cost_and_no_warning(workdir: Path) -> None:
    proc = _run("priced.py:solo", workdir)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.splitlines()[-1].startswith("finish: stop | tokens: 10 in, 5 out, 15 total | ")
