"""Running cases (SPEC §31): each case K times, N at once, each run checked against its
case (the tree, the answer, how it ended, its cost, its scorers); `run` gives the report."""

from __future__ import annotations

import asyncio
import importlib
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from supervisor_graph.evals.cases import Case, OutputExpect, ScorerSpec, value_problems
from supervisor_graph.evals.loading import EvalFileError, load_cases, parse_cases
from supervisor_graph.evals.matching import Difference, compare_tree
from supervisor_graph.evals.report import CaseReport, EvalReport, RunOutcome
from supervisor_graph.evals.targets import AgentTarget, GraphTarget, HarnessError, Transcript
from supervisor_graph.nodes.gates.scoring import RunView, ScoringContext
from supervisor_graph.nodes.scope.context import RequestContext

__all__ = ["check", "load_scorer", "prepare", "rouge1", "run"]

Progress = Callable[[RunOutcome], None]


def load_scorer(path: str, *, file: str = "<cases>", case: str | None = None, field: str = "scorer") -> Any:
    """The scorer object `module:attr` names (anything with `async score(context)`)."""
    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # noqa: BLE001 - any import failure is the file's mistake to report
        raise EvalFileError(f"scorer {path!r} does not import ({type(exc).__name__}: {exc})", file=file, case=case, field=field) from None
    if not callable(getattr(obj, "score", None)):
        raise EvalFileError(
            f"{path!r} is a {type(obj).__name__}, not a scorer (create_scorer(...) or create_rubric_scorer(...))",
            file=file,
            case=case,
            field=field,
        )
    return obj


def prepare(target: Any, cases: Any, file: str | None = None) -> tuple[Any, list[Case], str, dict[str, Any]]:
    """The target, the cases (from a path, data or `Case` objects), the file's name and
    the scorers they name, every mistake found before anything runs."""
    if isinstance(cases, str | Path):
        file = file or str(cases)
        loaded = load_cases(cases)
    else:
        file = file or "<cases>"
        loaded = parse_cases(list(cases) if not isinstance(cases, dict) else cases, file=file)
    if isinstance(target, AgentTarget | GraphTarget) or hasattr(target, "run") and hasattr(target, "check"):
        runner = target
    elif hasattr(target, "generate") and hasattr(target, "approve_tool_call"):
        runner = AgentTarget(target)
    elif hasattr(target, "ainvoke"):
        runner = GraphTarget(target)
    else:
        raise HarnessError(f"cannot run cases against a {type(target).__name__}: give an Agent or a compiled graph")
    scorers: dict[str, Any] = {}
    for case in loaded:
        runner.check(case, file)
        for index, spec in enumerate(case.expect.scorers):
            if spec.scorer not in scorers:
                scorers[spec.scorer] = load_scorer(spec.scorer, file=file, case=case.id, field=f"expect.scorers[{index}].scorer")
    return runner, loaded, file, scorers


async def run(
    agent: Any,
    cases: Any,
    *,
    repeat: int = 1,
    concurrency: int = 4,
    min_pass_rate: float = 1.0,
    baseline: str | Path | dict[str, Any] | None = None,
    url: str | None = None,
    headers: dict[str, str] | None = None,
    file: str | None = None,
    on_result: Progress | None = None,
) -> EvalReport:
    """Run `cases` (a case file's path, a list of case dicts or `Case`s) against `agent`
    (an `Agent`, its compiled graph with a checkpointer, or None with `url=` an AG-UI
    endpoint, sent `headers`) and report. `repeat`: runs per case, at most `concurrency`
    at once; a case passes when its pass rate reaches `min_pass_rate`. `baseline`: a
    previous report's JSON to compare with. `file`: the cases' name in the report;
    `on_result`: told of each run as it ends."""
    if url is not None:
        from supervisor_graph.evals.remote import RemoteTarget

        agent = RemoteTarget(url, agent=agent, headers=headers)
    elif headers is not None:  # refused, never dropped unsent
        raise TypeError("headers= goes with url= (the endpoint they are sent to)")
    if repeat < 1 or concurrency < 1:
        raise ValueError("repeat and concurrency must be at least 1")
    runner, loaded, file, scorers = prepare(agent, cases, file)
    gate = asyncio.Semaphore(concurrency)

    async def one(case: Case, attempt: int) -> RunOutcome:
        async with gate:
            outcome = await _run_one(runner, case, attempt, scorers)
        if on_result is not None:
            on_result(outcome)
        return outcome

    outcomes = await asyncio.gather(*(one(case, k + 1) for case in loaded for k in range(repeat)))
    reports = [
        CaseReport.of(case.id, [o for o in outcomes if o.case_id == case.id], repeat=repeat, min_pass_rate=min_pass_rate)
        for case in loaded
    ]
    report = EvalReport(agent=runner.name, file=file, repeat=repeat, min_pass_rate=min_pass_rate, cases=reports)
    if baseline is not None:
        report.compare(baseline)
    return report


async def _run_one(runner: Any, case: Case, attempt: int, scorers: dict[str, Any]) -> RunOutcome:
    started = time.perf_counter()
    try:
        transcript = await runner.run(case)
    except Exception as exc:  # noqa: BLE001 - an errored run is reported, never averaged away
        return RunOutcome(
            case_id=case.id,
            attempt=attempt,
            status="errored",
            error=f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}",
            seconds=round(time.perf_counter() - started, 3),
        )
    seconds = time.perf_counter() - started
    differences = check(case, transcript, seconds)
    scores = []
    for spec in case.expect.scorers:
        score, problem = await _score(scorers[spec.scorer], spec, case, transcript)
        scores.append(score)
        if problem:
            differences.append(Difference("", "scorer", problem))
    return RunOutcome(
        case_id=case.id,
        attempt=attempt,
        status="failed" if differences else "passed",
        differences=differences,
        tokens=transcript.tokens,
        cost=transcript.cost,
        seconds=round(seconds, 3),
        finish_reason=transcript.finish_reason,
        tool_calls=transcript.tree.count_tool_calls(),
        output=transcript.text,
        scores=scores,
        trajectory=transcript.tree.to_dict(),
    )


def check(case: Case, transcript: Transcript, seconds: float) -> list[Difference]:
    """Every way `transcript` misses what `case` expects."""
    expect, top = case.expect, transcript.tree.agent_id
    found: list[Difference] = []
    if transcript.waiting:
        found.append(Difference(top, "approval", transcript.waiting))
    elif transcript.unused_decisions:
        found.append(
            Difference(top, "approval", f"{transcript.unused_decisions} of the case's approvals were never asked for")
        )
    found += compare_tree(expect, transcript.tree)
    if expect.output is not None:
        found += _output(expect.output, transcript, top)
    if expect.finish_reason is not None:
        allowed = [expect.finish_reason] if isinstance(expect.finish_reason, str) else expect.finish_reason
        if transcript.finish_reason not in allowed:
            found.append(Difference(top, "finish_reason", f"finish reason {transcript.finish_reason!r}, not {' or '.join(map(repr, allowed))}"))
    if expect.max_tokens is not None and transcript.tokens > expect.max_tokens:
        found.append(Difference(top, "tokens", f"used {transcript.tokens} tokens, more than {expect.max_tokens}"))
    if expect.max_seconds is not None and seconds > expect.max_seconds:
        found.append(Difference(top, "time", f"took {seconds:.2f} s, more than {expect.max_seconds} s"))
    calls = transcript.tree.count_tool_calls()
    if expect.max_tool_calls is not None and calls > expect.max_tool_calls:
        found.append(Difference(top, "tool_calls", f"made {calls} tool calls (delegations included), more than {expect.max_tool_calls}"))
    return found


def _output(expect: OutputExpect, transcript: Transcript, top: str) -> list[Difference]:
    found = [Difference(top, "output", p) for p in expect.problems(transcript.text, "answer")]
    if expect.similar_to is not None:
        similarity = rouge1(transcript.text, expect.similar_to)
        if similarity < expect.similarity:
            found.append(Difference(top, "output", f"answer is {similarity:.2f} similar (ROUGE-1) to the expected one, under {expect.similarity}"))
    if expect.object is not None:
        value = transcript.object
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        if not isinstance(value, dict):
            return [*found, Difference(top, "object", f"no object to check (the answer is {type(value).__name__}): does the agent have an output_schema?")]
        for name, matcher in expect.object.items():
            field_value: Any = value
            for part in name.split("."):
                field_value = field_value.get(part) if isinstance(field_value, dict) else None
            found += [Difference(top, "object", p) for p in value_problems(matcher, field_value, f"object field {name}")]
    return found


def rouge1(candidate: str, reference: str) -> float:
    """ROUGE-1 F1: the unigram overlap of two texts, lowercased (ADK's response match)."""
    words = re.compile(r"\w+")
    got, want = Counter(words.findall(candidate.lower())), Counter(words.findall(reference.lower()))
    overlap = sum((got & want).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / sum(got.values()), overlap / sum(want.values())
    return 2 * precision * recall / (precision + recall)


async def _score(scorer: Any, spec: ScorerSpec, case: Case, transcript: Transcript) -> tuple[dict[str, Any], str | None]:
    """The scorer's verdict on the answer; with `samples`, the majority of its samples."""
    context = ScoringContext(
        run=RunView(input=case.turns[-1], output=transcript.text, messages=transcript.messages, output_object=transcript.object),
        iteration=1,
        request_context=RequestContext(dict(case.request_context)),
    )
    values: list[float] = []
    reasons: list[str] = []
    for _ in range(spec.samples):
        try:
            score = await scorer.score(context)
        except Exception as exc:  # noqa: BLE001 - a broken scorer fails its check, with why
            reasons.append(f"{type(exc).__name__}: {exc}")
            values.append(0.0)
            continue
        values.append(float(score.score))
        if score.reason:
            reasons.append(score.reason)
    passes = sum(1 for v in values if v >= spec.threshold)
    passed = passes * 2 > len(values)
    out = {"scorer": spec.scorer, "score": round(sum(values) / len(values), 4), "samples": values, "threshold": spec.threshold, "passed": passed}
    if passed:
        return out, None
    why = f" ({reasons[-1]})" if reasons else ""
    shown = f"{passes} of {len(values)} samples reached" if len(values) > 1 else f"scored {values[0]:.2f}, under"
    return out, f"scorer {spec.scorer}: {shown} {spec.threshold}{why}"

