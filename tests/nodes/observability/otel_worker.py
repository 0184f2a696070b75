"""Runs a team under an OpenTelemetry SDK tracer provider and prints the spans it made as
JSON (a process of its own: a process sets its global tracer provider once).

    python otel_worker.py facade|graph|background|remote|cost [OTLP endpoint]
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

exporter = InMemorySpanExporter()
provider = TracerProvider()


def install(endpoint: str | None) -> None:
    """The process's tracer provider: set when run as a script only (pytest's doctest
    collection imports this module, and a provider is set once per process)."""
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    trace.set_tracer_provider(provider)


from supervisor_graph import Agent, Memory, RemoteAgent, create_tool  # noqa: E402
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call  # noqa: E402


class Query(BaseModel):
    q: str


def broken(query: Query) -> str:
    raise ValueError("secret customer data in the provider's message")


def team() -> Agent:
    search = create_tool(id="search", description="Searches.", input_schema=Query, execute=lambda q: f"found {q.q}")
    fail = create_tool(id="fail", description="Fails.", input_schema=Query, execute=broken)
    researcher = Agent(
        id="research-agent",
        name="Researcher",
        description="Finds facts.",
        model=ScriptedChatModel(responses=[tool_call("search", {"q": "bees"}), tool_call("fail", {"q": "x"}), "bees dance"]),
        tools=[search, fail],
    )
    quiet = Agent(id="quiet-agent", description="Untraced.", model=ScriptedChatModel(responses=["shh"]), tracing=False)
    return Agent(
        id="parent-agent",
        name="Boss",
        model=ScriptedChatModel(responses=[delegate("research", "bees"), delegate("quiet", "hush"), "done"]),
        agents={"research": researcher, "quiet": quiet},
    )


class FakeServer(BaseHTTPRequestHandler):
    """Just enough of a LangGraph server for a remote delegation to send its run."""

    seen: list[dict[str, str]] = []

    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.endswith("/runs/stream"):
            FakeServer.seen.append({k.lower(): v for k, v in self.headers.items()})
            self._json(500, {"detail": "no"})
        else:
            self._json(200, {"thread_id": "t"})

    def do_GET(self) -> None:  # noqa: N802
        self._json(200, {"values": {}, "interrupts": []})

    def log_message(self, *args: Any) -> None:
        pass


async def main(mode: str) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if mode == "facade":
        assert (await team().generate("bees?")).text == "done"
    elif mode == "graph":
        await team().compile().ainvoke({"messages": [("user", "bees?")]})
    elif mode == "background":
        slow = Agent(id="slow-agent", description="Slow.", model=ScriptedChatModel(responses=["slow result"]))
        parent = Agent(
            id="bg-parent",
            model=ScriptedChatModel(responses=[delegate("slow", "work"), "started it", "reported it"]),
            agents={"slow": slow},
            background_tasks={"tools": {"slow": {"enabled": True}}},
            memory=Memory(storage=":memory:"),
        )
        await parent.generate_until_idle("go", memory={"thread": "bg"})
    elif mode == "cost":  # SPEC §33: a priced model, and a subagent whose model has no price
        local = Agent(id="local-agent", name="Local", description="Local.", model=ScriptedChatModel(responses=["ok"]))
        priced = ScriptedChatModel(model_name="gpt-4o", provider="openai", responses=[delegate("local", "go"), "done"])
        await Agent(id="priced-agent", name="Priced", model=priced, agents={"local": local}).generate("go")
    elif mode == "remote":
        server = ThreadingHTTPServer(("127.0.0.1", 0), FakeServer)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        far = RemoteAgent(url=f"http://127.0.0.1:{server.server_port}", graph_id="g", description="Far away.")
        parent = Agent(id="near", model=ScriptedChatModel(responses=[delegate("far", "hi"), "done"]), agents={"far": far})
        await parent.generate("go")
        server.shutdown()
        extra["headers"] = FakeServer.seen
    provider.shutdown()  # flushes the OTLP exporter
    spans = [
        {
            "name": span.name,
            "trace": format(span.context.trace_id, "032x"),
            "id": format(span.context.span_id, "016x"),
            "parent": format(span.parent.span_id, "016x") if span.parent is not None else None,
            "attributes": dict(span.attributes or {}),
            "status": span.status.status_code.name,
            "description": span.status.description,
        }
        for span in exporter.get_finished_spans()
    ]
    return {"spans": spans, **extra}


if __name__ == "__main__":
    install(sys.argv[2] if len(sys.argv) > 2 else None)
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
