"""The report of an evaluation (SPEC §31): per case pass or fail with every difference,
tokens, cost in USD (SPEC §33), time and finish reason; totals that keep run, scored and errored apart; pass rate
and pass^k with repeats; better and worse against a baseline; JSON and JUnit XML."""

from __future__ import annotations

import json
from collections.abc import Sequence
from math import comb
from pathlib import Path
from typing import Any, Literal
from xml.etree import ElementTree as ET

from pydantic import BaseModel, ConfigDict, Field

from supervisor_graph.evals.matching import Difference
from supervisor_graph.nodes.observability.cost import sum_costs

__all__ = ["BaselineDiff", "CaseReport", "EvalReport", "RunOutcome", "pass_hat_k", "usd"]

Status = Literal["passed", "failed", "errored"]


def usd(cost: float | None) -> str:
    """A cost as the report prints it."""
    return "cost unknown" if cost is None else f"${cost:.4f}"


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k (tau-bench): the chance that k runs drawn from n, c of which passed, all pass."""
    return comb(c, k) / comb(n, k) if 0 < k <= n else 0.0


class RunOutcome(BaseModel):
    """One run of one case."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    case_id: str
    attempt: int = 1
    status: Status
    error: str | None = None
    differences: list[Difference] = Field(default_factory=list)
    tokens: int = 0
    cost: float | None = None
    """USD (SPEC §33); None when a model has no price."""
    seconds: float = 0.0
    finish_reason: str | None = None
    tool_calls: int = 0
    output: str = ""
    scores: list[dict[str, Any]] = Field(default_factory=list)
    trajectory: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = self.model_dump(exclude={"differences"})
        out["differences"] = [d.to_dict() for d in self.differences]
        return out


class CaseReport(BaseModel):
    """A case over its runs: `errored` if any run could not finish (never averaged away),
    else `passed` when its pass rate reaches the gate's minimum (1.0: every run)."""

    id: str
    status: Status
    runs: list[RunOutcome]
    pass_rate: float
    pass_k: float
    """pass^k with k the number of runs: 1.0 only when every run passed."""

    @classmethod
    def of(cls, case_id: str, runs: Sequence[RunOutcome], *, repeat: int, min_pass_rate: float) -> CaseReport:
        runs = sorted(runs, key=lambda r: r.attempt)
        passed = sum(1 for r in runs if r.status == "passed")
        rate = passed / len(runs) if runs else 0.0
        if any(r.status == "errored" for r in runs):
            status: Status = "errored"
        else:
            status = "passed" if rate >= min_pass_rate else "failed"
        return cls(id=case_id, status=status, runs=list(runs), pass_rate=round(rate, 4), pass_k=round(pass_hat_k(len(runs), passed, repeat), 4))

    def summary(self) -> str:
        """Why it did not pass: its errors and differences, each once, first run first."""
        lines: list[str] = []
        for run in self.runs:
            for line in ([run.error] if run.error else []) + [str(d) for d in run.differences]:
                if line not in lines:
                    lines.append(line)
        return "\n".join(lines)


class BaselineDiff(BaseModel):
    better: list[str] = Field(default_factory=list)
    worse: list[str] = Field(default_factory=list)
    new: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)


class EvalReport(BaseModel):
    """Every case's report and the totals; `ok` is the gate."""

    agent: str
    file: str
    repeat: int = 1
    min_pass_rate: float = 1.0
    cases: list[CaseReport]
    baseline: BaselineDiff | None = None

    @property
    def ok(self) -> bool:
        return all(case.status == "passed" for case in self.cases)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def totals(self) -> dict[str, Any]:
        runs = [run for case in self.cases for run in case.runs]
        scored = [run for run in runs if run.status != "errored"]
        return {
            "cases": len(self.cases),
            "passed": sum(1 for c in self.cases if c.status == "passed"),
            "failed": sum(1 for c in self.cases if c.status == "failed"),
            "errored": sum(1 for c in self.cases if c.status == "errored"),
            "runs": len(runs),
            "runs_scored": len(scored),
            "runs_errored": len(runs) - len(scored),
            "pass_rate": round(sum(1 for r in scored if r.status == "passed") / len(scored), 4) if scored else None,
            "tokens": sum(r.tokens for r in runs),
            "cost": sum_costs(r.cost for r in runs),
            "seconds": round(sum(r.seconds for r in runs), 3),
        }

    def compare(self, baseline: dict[str, Any] | str | Path) -> BaselineDiff:
        """What got better and worse than a previous report (its JSON, or its file);
        kept on the report."""
        data: dict[str, Any] = (
            baseline if isinstance(baseline, dict) else json.loads(Path(baseline).read_text(encoding="utf-8"))
        )
        before = {c["id"]: c for c in data.get("cases", [])}
        rank = {"errored": 0, "failed": 1, "passed": 2}
        diff = BaselineDiff()
        for case in self.cases:
            old = before.get(case.id)
            if old is None:
                diff.new.append(case.id)
                continue
            was, rate = old.get("status", "failed"), old.get("pass_rate", 0.0)
            line = f"{case.id}: {was} -> {case.status}"
            if case.pass_rate != rate:
                line += f" (pass rate {rate:.2f} -> {case.pass_rate:.2f})"
            if rank[case.status] > rank.get(was, 1) or rank[case.status] == rank.get(was, 1) and case.pass_rate > rate:
                diff.better.append(line)
            elif rank[case.status] < rank.get(was, 1) or rank[case.status] == rank.get(was, 1) and case.pass_rate < rate:
                diff.worse.append(line)
        diff.removed = sorted(set(before) - {c.id for c in self.cases})
        self.baseline = diff
        return diff

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "agent": self.agent,
            "file": self.file,
            "repeat": self.repeat,
            "min_pass_rate": self.min_pass_rate,
            "ok": self.ok,
            "totals": self.totals(),
            "cases": [
                {**case.model_dump(exclude={"runs"}), "runs": [run.to_dict() for run in case.runs]} for case in self.cases
            ],
            "baseline": self.baseline.model_dump() if self.baseline is not None else None,
        }

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n", encoding="utf-8")

    def to_junit(self) -> str:
        """JUnit XML: one test case per case, `failure` with its differences, `error` when
        a run could not finish."""
        totals = self.totals()
        suites = ET.Element("testsuites", name="supervisor-graph eval")
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=f"{self.agent}: {self.file}",
            tests=str(totals["cases"]),
            failures=str(totals["failed"]),
            errors=str(totals["errored"]),
            skipped="0",
            time=f"{totals['seconds']:.3f}",
        )
        for case in self.cases:
            element = ET.SubElement(
                suite,
                "testcase",
                classname=f"evals.{Path(self.file).stem}",
                name=case.id,
                time=f"{sum(r.seconds for r in case.runs):.3f}",
            )
            if case.status != "passed":
                detail = case.summary()
                tag = "error" if case.status == "errored" else "failure"
                first = detail.splitlines()[0] if detail else case.status
                if self.repeat > 1:
                    first = f"pass rate {case.pass_rate:.2f} over {len(case.runs)} runs: {first}"
                ET.SubElement(element, tag, message=first, type=case.status).text = detail
            out = ET.SubElement(element, "system-out")
            run = case.runs[-1]
            out.text = (
                f"tokens={run.tokens} cost={run.cost} seconds={run.seconds} finish_reason={run.finish_reason} "
                f"tool_calls={run.tool_calls}"
            )
        return ET.tostring(suites, encoding="unicode", xml_declaration=True)

    def write_junit(self, path: str | Path) -> None:
        Path(path).write_text(self.to_junit() + "\n", encoding="utf-8")

    def text(self) -> str:
        """The report as plain text (the pytest entry's message)."""
        lines = [f"{self.agent} on {self.file}: {self.totals_line()}"]
        for case in self.cases:
            rate = f" pass rate {case.pass_rate:.2f}, pass^{self.repeat} {case.pass_k:.2f}" if self.repeat > 1 else ""
            run = case.runs[-1]
            lines.append(
                f"{case.status.upper():8} {case.id}{rate} ({run.tokens} tokens, {usd(run.cost)}, {run.seconds:.2f} s, {run.finish_reason})"
            )
            lines += [f"    - {line}" for line in case.summary().splitlines()] if case.status != "passed" else []
        if self.baseline is not None:
            lines += [f"better: {line}" for line in self.baseline.better] + [f"worse: {line}" for line in self.baseline.worse]
        return "\n".join(lines)

    def totals_line(self) -> str:
        t = self.totals()
        rate = f", pass rate {t['pass_rate']:.2f}" if t["pass_rate"] is not None else ""
        return (
            f"{t['cases']} cases: {t['passed']} passed, {t['failed']} failed, {t['errored']} errored; "
            f"{t['runs']} runs, {t['runs_scored']} scored, {t['runs_errored']} errored{rate}; "
            f"{t['tokens']} tokens, {usd(t['cost'])}, {t['seconds']:.2f} s"
        )
