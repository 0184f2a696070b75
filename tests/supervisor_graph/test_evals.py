"""Evaluations (SPEC §31, issue 40): cases checked against the delegation tree a run
stored, each order mode passing and failing for a named reason, repeats, baselines,
approvals, scorers, ADK evalsets, a compiled graph and an AG-UI endpoint."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from supervisor_graph import Agent, evals
from supervisor_graph.evals import EvalFileError, assert_cases
from supervisor_graph.evals.matching import match_level
from supervisor_graph.evals.report import pass_hat_k
from supervisor_graph.evals.runner import rouge1
from supervisor_graph.testing import ScriptedChatModel
from tests.supervisor_graph.evals_team import build_team

TEAM = "tests.supervisor_graph.evals_team"
NESTED = {
    "agent": "research_agent",
    "prompt": {"contains": "bees"},
    "tools": [{"name": "lookup", "args": {"topic": "bees"}}],
    "delegations": [{"agent": "fact_agent", "prompt": {"regex": "^check"}, "tools": ["lookup"]}],
}


def run(cases: Any, agent: Agent | None = None, **options: Any) -> evals.EvalReport:
    return evals.run_sync(agent or build_team(), cases, **options)


def diffs(report: evals.EvalReport, case: int = 0) -> list[str]:
    return [str(d) for d in report.cases[case].runs[0].differences]


def test_a_nested_tree_with_parallel_delegations_passes() -> None:
    report = run(
        [
            {
                "id": "ok",
                "input": "Research bees",
                "expect": {
                    "delegations": [NESTED, {"agent": "writer_agent", "prompt": "Outline"}],
                    "tools": [],
                    "output": {"contains": "Done with bees", "regex": r"bees\.$"},
                    "finish_reason": "stop",
                    "max_tool_calls": 5,
                    "max_tokens": 1000,
                    "max_seconds": 30,
                },
            }
        ]
    )
    assert report.ok and report.exit_code == 0, report.text()
    run_ = report.cases[0].runs[0]
    assert run_.tool_calls == 5 and run_.tokens > 0 and run_.finish_reason == "stop"
    fact = run_.trajectory["delegations"][0]["delegations"][0]  # type: ignore[index]
    assert fact == {"agent": "fact_agent", "agent_id": "fact-agent", "prompt": "check bees", "success": True,
                    "tools": [{"name": "lookup", "args": {"topic": "bees"}}], "delegations": []}  # fmt: skip


@pytest.mark.parametrize(
    ("order", "expected", "passes", "reason"),
    [
        # the two delegations were made in one turn (in parallel): either order is strict
        ("strict", ["writer_agent", "research_agent"], True, None),
        ("strict", ["research_agent"], False, "extra delegation to writer_agent"),
        ("strict", ["research_agent", "writer_agent", "writer_agent"], False, "missing delegation to writer_agent"),
        ("unordered", ["writer_agent", "research_agent"], True, None),
        ("unordered", ["research_agent", "research_agent", "writer_agent"], False, "missing delegation to research_agent"),
        ("subset", ["research_agent", "writer_agent", "writer_agent"], True, None),
        ("subset", ["writer_agent"], False, "extra delegation to research_agent"),
        ("superset", ["research_agent"], True, None),
        ("superset", ["research_agent", "research_agent"], False, "missing delegation to research_agent"),
        ("in_order", ["writer_agent"], True, None),
        ("in_order", ["writer_agent", "writer_agent"], False, "missing delegation to writer_agent"),
    ],
)
def test_each_order_mode_passes_and_fails_for_its_reason(order: str, expected: list[str], passes: bool, reason: str | None) -> None:
    report = run([{"id": "c", "input": "Research bees", "expect": {"delegations": expected, "order": order}}])
    assert report.ok is passes, report.text()
    if reason:
        assert any(reason in line and f"(order {order})" in line for line in diffs(report)), diffs(report)


def test_out_of_order_across_turns_is_named() -> None:
    # the tools run in turns of their own: research first, then the parent's own lookup and publish
    from supervisor_graph.evals.trajectory import AgentRun, ToolUse

    actual = [ToolUse("lookup", {}, turn=1), ToolUse("publish", {}, turn=2)]
    from supervisor_graph.evals.cases import ToolExpect

    expected = [ToolExpect(name="publish"), ToolExpect(name="lookup")]
    found = match_level(expected, actual, "strict", "parent")
    assert [d.kind for d in found] == ["order"]
    assert "tool call publish() is out of order: expected as item 1 of 2, made as call 2 of 2" in found[0].message
    assert match_level(expected, actual, "in_order", "parent")[0].kind == "order"
    assert match_level(expected, actual, "unordered", "parent") == []
    assert isinstance(AgentRun(agent_id="x"), AgentRun)


def test_a_wrong_prompt_and_nested_differences_name_their_agent_path() -> None:
    nested = {**NESTED, "prompt": {"contains": "wasps"},
              "delegations": [{"agent": "fact_agent", "tools": [{"name": "lookup", "args": {"topic": {"equals": "x"}}}]}]}  # fmt: skip
    report = run([{"id": "c", "input": "Research bees", "expect": {"delegations": [nested, "writer_agent"]}}])
    assert report.exit_code == 1
    assert diffs(report) == [
        "parent-agent: delegation to research_agent: prompt 'Find facts on bees' does not contain 'wasps'",
        "parent-agent/research-agent/fact-agent: tool call lookup: argument topic 'bees' is not 'x'",
    ]
    assert [d.kind for d in report.cases[0].runs[0].differences] == ["prompt", "args"]


def test_output_finish_reason_and_budgets_fail_with_their_numbers() -> None:
    expect = {"output": {"equals": "x", "not_contains": "bees"}, "finish_reason": ["length", "max_steps"],
              "max_tokens": 10, "max_tool_calls": 2, "tools": ["lookup"]}  # fmt: skip
    lines = diffs(run([{"id": "c", "input": "Research bees", "expect": expect}]))
    assert "parent-agent: missing tool call lookup() (order strict)" in lines
    assert "parent-agent: answer 'Done with bees.' contains 'bees'" in lines
    assert "parent-agent: answer 'Done with bees.' is not 'x'" in lines
    assert "parent-agent: finish reason 'stop', not 'length' or 'max_steps'" in lines
    assert any(line.startswith("parent-agent: used ") and "more than 10" in line for line in lines)
    assert "parent-agent: made 5 tool calls (delegations included), more than 2" in lines


def test_approvals_approve_edit_reject_and_running_out() -> None:
    cases = [
        {"id": "approve", "input": "Research and publish bees", "approvals": ["approve"],
         "expect": {"output": "Done: published Bees", "tools": [{"name": "publish", "args": {"title": "Bees"}}]}},
        {"id": "edit", "input": "Research and publish bees", "expect": {"approvals": [{"edit": {"title": "Wasps"}}],
         "output": "published Wasps", "tools": [{"name": "publish", "args": {"title": "Wasps"}}]}},
        {"id": "reject", "input": "Research and publish bees", "approvals": [{"reject": "not yet"}],
         "expect": {"output": {"contains": "not yet", "not_contains": "published Bees"}}},
        {"id": "out", "input": "Research and publish bees"},
        {"id": "left-over", "input": "Research bees", "approvals": ["approve"]},
    ]  # fmt: skip
    report = run(cases)
    status = {case.id: case.status for case in report.cases}
    assert status == {"approve": "passed", "edit": "passed", "reject": "passed", "out": "failed", "left-over": "failed"}, report.text()
    out = report.cases[3].runs[0]
    assert out.finish_reason == "suspended"
    assert diffs(report, 3) == [
        "parent-agent: waiting for an approval of publish (parent-agent): the case gave no decision for it"
    ]
    assert diffs(report, 4) == ["parent-agent: 1 of the case's approvals were never asked for"]


def test_repeat_gives_pass_rate_and_pass_k(tmp_path: Path) -> None:
    from tests.supervisor_graph.evals_team import flaky

    cases = [{"id": "yes", "input": "Say yes", "expect": {"output": {"equals": "yes"}}}]
    report = run(cases, flaky, repeat=4, concurrency=1)
    case = report.cases[0]
    assert (case.status, case.pass_rate, case.pass_k, len(case.runs)) == ("failed", 0.5, 0.0, 4)
    assert report.totals()["runs"] == 4 and report.totals()["runs_scored"] == 4
    lenient = run(cases, flaky, repeat=4, concurrency=2, min_pass_rate=0.5)
    assert lenient.ok and lenient.cases[0].pass_rate == 0.5
    assert pass_hat_k(5, 4, 2) == pytest.approx(0.6) and pass_hat_k(3, 3, 3) == 1.0


def test_a_baseline_says_what_got_better_and_worse(tmp_path: Path) -> None:
    cases = [
        {"id": "a", "input": "Research bees", "expect": {"output": "bees"}},
        {"id": "b", "input": "Research bees", "expect": {"output": "wasps"}},
        {"id": "c", "input": "Research bees"},
    ]
    before = run(cases)
    before.write_json(tmp_path / "before.json")
    cases[0]["expect"] = {"output": "wasps"}
    cases[1]["expect"] = {"output": "bees"}
    after = run(cases[:2] + [{"id": "d", "input": "Research bees"}], baseline=tmp_path / "before.json")
    assert after.baseline is not None
    assert after.baseline.better == ["b: failed -> passed (pass rate 0.00 -> 1.00)"]
    assert after.baseline.worse == ["a: passed -> failed (pass rate 1.00 -> 0.00)"]
    assert (after.baseline.new, after.baseline.removed) == (["d"], ["c"])


def test_an_errored_case_is_counted_apart_and_never_averaged_away(tmp_path: Path) -> None:
    broken = Agent(id="broken", model=ScriptedChatModel(responses=[]))  # the script runs out at once
    report = run([{"id": "x", "input": "hi"}], broken, repeat=2)
    assert report.cases[0].status == "errored" and report.exit_code == 1
    totals = report.totals()
    assert (totals["errored"], totals["runs_errored"], totals["runs_scored"], totals["pass_rate"]) == (1, 2, 0, None)
    report.write_junit(tmp_path / "r.xml")
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("failures") == "0"
    assert suite.find("testcase/error") is not None


def test_json_and_junit_reports(tmp_path: Path) -> None:
    report = run([{"id": "good", "input": "Research bees"}, {"id": "bad", "input": "Research bees", "expect": {"output": "wasps"}}])
    report.write_json(tmp_path / "r.json")
    report.write_junit(tmp_path / "r.xml")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["ok"] is False and data["totals"]["cases"] == 2 and data["totals"]["failed"] == 1
    bad = data["cases"][1]
    assert bad["status"] == "failed" and bad["runs"][0]["differences"][0]["kind"] == "output"
    assert bad["runs"][0]["trajectory"]["delegations"][0]["agent"] == "research_agent"
    root = ET.parse(tmp_path / "r.xml").getroot()
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["good", "bad"]
    failure = cases[1].find("failure")
    assert failure is not None and "does not contain 'wasps'" in (failure.get("message") or "")


def test_scorers_by_import_path_with_samples_by_majority() -> None:
    cases = [
        {"id": "s", "input": "Research bees", "expect": {"scorers": [f"{TEAM}:mentions_done", {"scorer": f"{TEAM}:wavering", "samples": 3, "threshold": 0.5}]}},
        {"id": "t", "input": "Research bees", "expect": {"scorers": [{"scorer": f"{TEAM}:wavering", "samples": 3, "threshold": 1.0}]}},
    ]  # fmt: skip
    report = run(cases, concurrency=1)
    scores = report.cases[0].runs[0].scores
    assert [s["passed"] for s in scores] == [True, True] and scores[1]["samples"] == [1.0, 0.0, 1.0]
    assert report.cases[0].status == "passed"
    # the cycle goes on: 1, 0, 1 -> 0, 1, 0 on the second case's samples: one of three reached 1.0
    assert diffs(report, 1) == ["scorer tests.supervisor_graph.evals_team:wavering: 1 of 3 samples reached 1.0"]


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ({"expect": {"delegations": [{"agent": "research_agent", "prompt": {"startswith": "x"}}]}},
         "cases.yaml: case 'c': expect.delegations[0].prompt.startswith: unknown matcher 'startswith'"),
        ({"expect": {"delegations": [{"agent": "research_agent", "delegations": ["writer_agent"]}]}},
         "cases.yaml: case 'c': expect.delegations[0].delegations[0].agent: 'research-agent' has no subagent 'writer_agent' (its subagents: fact_agent)"),
        ({"expect": {"scorers": ["tests.nowhere:scorer"]}},
         "cases.yaml: case 'c': expect.scorers[0].scorer: scorer 'tests.nowhere:scorer' does not import (ModuleNotFoundError"),
        ({"expect": {"scorers": [f"{TEAM}:not_a_scorer"]}}, "is a int, not a scorer"),
        ({"expect": {"order": "sorted"}}, "cases.yaml: case 'c': expect.order: Input should be 'strict'"),
        ({"expect": {"output": {"regex": "("}}}, "expect.output.regex: invalid regular expression"),
    ],
)
def test_bad_input_names_the_file_the_case_and_the_field(tmp_path: Path, case: dict[str, Any], message: str) -> None:
    import yaml

    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump([{"id": "c", "input": "Research bees", **case}]))
    with pytest.raises(EvalFileError) as caught:
        run(path)
    assert message in str(caught.value).replace(str(tmp_path) + "/", "")


def test_yaml_with_file_settings_and_jsonl(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        "request_context: {tenant: acme}\nmemory: {resource: someone}\ncases:\n"
        "  - id: one\n    input: Research bees\n    expect: {output: bees}\n"
        "  - id: two\n    input: [Research bees, Research wasps]\n    memory: {thread: shared-thread}\n"
        "    expect: {delegations: [research_agent, writer_agent, research_agent, writer_agent], output: wasps}\n"
    )
    cases = evals.load_cases(tmp_path / "c.yaml")
    assert cases[0].request_context == {"tenant": "acme"} and cases[1].memory.thread == "shared-thread"
    assert cases[1].memory.resource == "someone"
    assert run(tmp_path / "c.yaml").ok
    (tmp_path / "c.jsonl").write_text('{"id": "j", "input": "Research bees", "expect": {"output": "bees"}}\n\n')
    assert run(tmp_path / "c.jsonl").ok


ADK = {
    "eval_set_id": "home",
    "eval_cases": [
        {
            "eval_id": "research",
            "conversation": [
                {
                    "invocation_id": "i-1",
                    "user_content": {"parts": [{"text": "Research bees"}], "role": "user"},
                    "final_response": {"parts": [{"text": "Done with bees."}], "role": "model"},
                    "intermediate_data": {
                        "tool_uses": [
                            {"name": "transfer_to_agent", "args": {"agent_name": "research_agent"}},
                            {"name": "lookup", "args": {"topic": "bees"}},
                            {"name": "agent-fact_agent", "args": {"prompt": "check bees"}},
                            {"name": "lookup", "args": {"topic": "bees"}},
                            {"name": "agent-writer_agent", "args": {"prompt": "Outline bees"}},
                        ]
                    },
                }
            ],
            "session_input": {"app_name": "home", "user_id": "u", "state": {"tier": "gold"}},
        },
        {
            "eval_id": "wrong-answer",
            "conversation": [
                {
                    "user_content": {"parts": [{"text": "Research bees"}]},
                    "final_response": {"parts": [{"text": "Something else entirely."}]},
                    "intermediate_data": {"tool_uses": []},
                }
            ],
        },
    ],
}


def test_an_adk_evalset_is_read_as_cases(tmp_path: Path) -> None:
    (tmp_path / "home.evalset.json").write_text(json.dumps(ADK))
    cases = evals.load_cases(tmp_path / "home.evalset.json")
    assert [c.id for c in cases] == ["research", "wrong-answer"] and cases[0].request_context == {"tier": "gold"}
    report = run(tmp_path / "home.evalset.json")
    assert [c.status for c in report.cases] == ["passed", "failed"], report.text()
    assert any("extra tool call agent-research_agent" in line for line in diffs(report, 1))
    assert any("similar (ROUGE-1)" in line for line in diffs(report, 1))
    assert rouge1("Done with bees.", "done with bees") == 1.0 and rouge1("a", "b") == 0.0


def test_a_compiled_graph_runs_the_same_cases() -> None:
    graph = build_team().compile(checkpointer=InMemorySaver())
    cases = [
        {"id": "tree", "input": "Research bees", "expect": {"delegations": [NESTED, "writer_agent"], "output": "Done with bees"}},
        {"id": "approve", "input": "Research and publish bees", "approvals": [{"edit": {"title": "Wasps"}}], "expect": {"output": "published Wasps"}},
        {"id": "out", "input": "Research and publish bees"},
    ]  # fmt: skip
    report = run(cases, graph)
    assert [c.status for c in report.cases] == ["passed", "passed", "failed"], report.text()
    assert "waiting for an approval of publish" in diffs(report, 2)[0]
    with pytest.raises(evals.HarnessError, match="no checkpointer"):
        run(cases, build_team().compile())


def test_assert_cases_raises_with_the_report() -> None:
    assert_cases(build_team(), [{"id": "fine", "input": "Research bees"}])
    with pytest.raises(AssertionError, match=r"(?s)evaluation failed.*FAILED   bad.*does not contain 'wasps'"):
        assert_cases(build_team(), [{"id": "bad", "input": "Research bees", "expect": {"output": "wasps"}}])


def test_the_cases_run_against_a_served_agent_over_agui() -> None:
    pytest.importorskip("fastapi")
    from fastapi import FastAPI

    from supervisor_graph.agui import AGUIAgent, add_agui_endpoint
    from tests.agui.conftest import ThreadServer

    served = build_team()
    app = FastAPI()
    add_agui_endpoint(app, AGUIAgent(served, resource_id="u", subagent_visibility="attributed"), "/agent")
    add_agui_endpoint(app, AGUIAgent(served, resource_id="u"), "/hidden")
    cases = [
        {"id": "tree", "input": "Research bees", "expect": {"delegations": [NESTED, "writer_agent"], "output": "Done with bees", "finish_reason": "stop"}},
        {"id": "edit", "input": "Research and publish bees", "approvals": [{"edit": {"title": "Wasps"}}],
         "expect": {"output": "published Wasps", "tools": [{"name": "publish", "args": {"title": "Wasps"}}]}},
        {"id": "reject", "input": "Research and publish bees", "approvals": [{"reject": "not yet"}], "expect": {"output": "not yet"}},
        {"id": "out", "input": "Research and publish bees"},
    ]  # fmt: skip
    with ThreadServer(app) as server:
        report = evals.run_sync(served, cases, url=server.url + "/agent")
        hidden = evals.run_sync(None, cases[:1], url=server.url + "/hidden")
    assert [c.status for c in report.cases] == ["passed", "passed", "passed", "failed"], report.text()
    assert report.cases[0].runs[0].tokens > 0
    assert "waiting for an approval of publish" in diffs(report, 3)[0]
    # a server that hides its subagents shows the delegations, not what happened inside them
    assert diffs(hidden) == [
        "agent/research_agent: missing tool call lookup(topic='bees') (order strict)",
        "agent/research_agent: missing delegation to fact_agent (prompt regex '^check') (order strict)",
    ]


def test_the_page_shows_the_demo_dataset_as_shipped() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "evaluations.md").read_text()
    shipped = (Path(__file__).resolve().parents[2] / "supervisor_graph" / "examples" / "research_write_cases.yaml").read_text()
    assert f"```yaml\n{shipped}```" in page


@pytest.mark.parametrize("terminal", [True, False])
def test_the_table_never_cuts_a_case_id_however_narrow(terminal: bool) -> None:
    from rich.console import Console

    from supervisor_graph.evals.console import print_report

    long_id = "the-team-researches-bees-before-it-writes-anything-at-all"
    report = run([{"id": long_id, "input": "Research bees", "expect": {"delegations": ["writer_agent"]}}])
    out = io.StringIO()
    print_report(report, Console(file=out, width=30, force_terminal=terminal, color_system=None))
    lines = out.getvalue().splitlines()
    assert any(long_id in line for line in lines), out.getvalue()
    if terminal:  # as wide as the id and the longest words need, not wider than that
        assert max(len(line) for line in lines) < 200, out.getvalue()
    else:  # piped: each difference whole on one line
        assert any("extra delegation to research_agent" in line for line in lines), out.getvalue()
