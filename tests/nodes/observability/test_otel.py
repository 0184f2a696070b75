"""OpenTelemetry GenAI agent spans (SPEC §24), read from a process that set an SDK tracer
provider (`otel_worker.py`): under the facade and the compiled graph, into background
tasks, to a remote subagent as `traceparent`, and through a real OTLP/HTTP exporter."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

WORKER = Path(__file__).with_name("otel_worker.py")


def run_worker(mode: str, *extra: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, str(WORKER), mode, *extra], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def by_name(spans: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {span["name"]: span for span in spans}


@pytest.mark.parametrize("mode", ["facade", "graph"])
def test_agents_and_tools_become_nested_genai_spans(mode: str) -> None:
    result = run_worker(mode)
    spans = by_name(result["spans"])
    assert set(spans) == {"invoke_agent Boss", "invoke_agent Researcher", "execute_tool search", "execute_tool fail"}
    boss, researcher = spans["invoke_agent Boss"], spans["invoke_agent Researcher"]
    assert boss["parent"] is None and researcher["parent"] == boss["id"]
    assert spans["execute_tool search"]["parent"] == spans["execute_tool fail"]["parent"] == researcher["id"]
    assert len({span["trace"] for span in result["spans"]}) == 1
    assert boss["attributes"] | {"gen_ai.usage.input_tokens": 30, "gen_ai.usage.output_tokens": 15} == boss["attributes"]
    assert researcher["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert researcher["attributes"]["gen_ai.agent.id"] == "research-agent"
    assert researcher["attributes"]["gen_ai.agent.name"] == "Researcher"
    assert researcher["attributes"]["gen_ai.tool.call.id"]
    # three model calls of 10 + 5 tokens each (the scripted model's usage)
    assert researcher["attributes"]["gen_ai.usage.input_tokens"] == 30
    assert researcher["attributes"]["gen_ai.usage.output_tokens"] == 15
    search = spans["execute_tool search"]["attributes"]
    assert search["gen_ai.operation.name"] == "execute_tool" and search["gen_ai.tool.name"] == "search"
    assert search["gen_ai.tool.call.id"]
    # a failing tool: error status with the error type only, never the exception's text
    fail = spans["execute_tool fail"]
    assert (fail["status"], fail["description"], fail["attributes"]["error.type"]) == ("ERROR", "ValueError", "ValueError")
    assert "secret" not in json.dumps(result)
    # Agent(tracing=False): the quiet subagent has no span, and its tokens are nobody's
    assert not any("quiet" in name for name in spans)


def test_the_top_agent_span_names_the_conversation_thread_when_it_has_one() -> None:
    spans = by_name(run_worker("facade")["spans"])
    assert spans["invoke_agent Boss"]["attributes"]["gen_ai.conversation.id"].startswith("ephemeral-")


def test_a_background_task_span_continues_the_trace_that_started_it() -> None:
    spans = run_worker("background")["spans"]
    [task] = [s for s in spans if s["name"] == "invoke_agent slow-agent"]
    parents = [s for s in spans if s["name"] == "invoke_agent bg-parent"]
    assert len(parents) == 2  # the run that launched it, and the run that answered its outcome
    launcher = next(s for s in parents if s["id"] == task["parent"])
    assert task["trace"] == launcher["trace"]


def test_a_remote_subagent_gets_the_trace_context_as_traceparent() -> None:
    result = run_worker("remote")
    [near] = result["spans"]
    [headers] = result["headers"]
    version, trace_id, span_id, _flags = headers["traceparent"].split("-")
    assert (version, trace_id, span_id) == ("00", near["trace"], near["id"])


class Collector(BaseHTTPRequestHandler):
    """A minimal OTLP/HTTP trace receiver: decodes each export request's protobuf."""

    received: list[str] = []
    paths: list[str] = []

    def do_POST(self) -> None:  # noqa: N802
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        Collector.paths.append(self.path)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                assert scope.scope.name == "supervisor_graph"
                Collector.received.extend(span.name for span in scope.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    Collector.received, Collector.paths = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1/traces"
    server.shutdown()


def test_spans_reach_a_real_otlp_http_collector(collector: str) -> None:
    run_worker("facade", collector)
    assert set(Collector.paths) == {"/v1/traces"}
    assert sorted(Collector.received) == [
        "execute_tool fail",
        "execute_tool search",
        "invoke_agent Boss",
        "invoke_agent Researcher",
    ]


def test_without_a_tracer_provider_no_handler_is_attached() -> None:
    code = (
        "from supervisor_graph.nodes.observability.otel import span_handler\n"
        "from supervisor_graph import Agent\n"
        "from supervisor_graph.testing import ScriptedChatModel\n"
        "graph = Agent(id='a', model=ScriptedChatModel(responses=['x'])).compile()\n"
        "assert span_handler() is None\n"
        "assert not graph.config.get('callbacks'), graph.config\n"
        "print(graph.config['metadata'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "'agent_id': 'a'" in proc.stdout
