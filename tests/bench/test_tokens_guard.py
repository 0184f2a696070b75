"""The token guard (issue 51): supervisor-graph's two contenders (defaults and
`inherit_context=False`) on one task and five turns, through their real OpenAI client
against the recording fake server, counted exactly and compared with bench/tokens.json.
Any count that goes up fails; a lower one passes and asks for the baseline to be updated
(`python -m bench tokens --update`)."""

from __future__ import annotations

from bench.tokens import check


def test_no_token_count_went_up() -> None:
    report = check()
    print(report.message())
    assert report.ok, report.message()
