"""Double texting over AG-UI on real HTTP, `serve --workers 2` on one database (SPEC §29):
`forwardedProps.on_busy` per run, `--on-busy` for the server's default. Which worker
takes which request is uvicorn's choice: the thread lease decides across them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from tests.agui.test_endpoint import body, post
from tests.agui.test_workers import serve


def sent(thread: str, text: str, on_busy: str | None = None) -> dict[str, Any]:
    payload = body(thread, text)
    if on_busy is not None:
        payload["forwardedProps"] = {"on_busy": on_busy}
    return payload


def answer(events: list[dict]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT" and not e.get("subagentRunId"))


async def holding(url: str, payload: dict[str, Any]) -> asyncio.Future[list[dict]]:
    """Start a run that delegates to the slow subagent and return once its delegation has
    begun (so it surely holds the thread), not after a guessed sleep: on a busy machine a
    second message sent after a fixed second could reach the thread first. The future
    gives the run's events."""
    begun: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def stream() -> list[dict]:
        events: list[dict] = []
        async with httpx.AsyncClient(timeout=60) as client:
            async with client.stream("POST", url, json=payload, headers={"accept": "text/event-stream"}) as response:
                buffer = ""
                async for chunk in response.aiter_text():
                    buffer += chunk
                    *frames, buffer = buffer.split("\n\n")
                    for frame in frames:
                        if frame.startswith("data: "):
                            events.append(json.loads(frame.removeprefix("data: ")))
                            if events[-1]["type"] == "TOOL_CALL_START" and not begun.done():
                                begun.set_result(None)
        if not begun.done():
            begun.set_exception(AssertionError(f"the run never delegated: {events}"))
        return events

    run = asyncio.ensure_future(stream())
    await asyncio.wait_for(asyncio.shield(begun), 60)
    return run


async def history(url: str, thread: str) -> list[tuple[str, str]]:
    base = url.rsplit("/", 1)[0]
    async with httpx.AsyncClient() as client:
        found = (await client.get(f"{base}/_playground/agent/threads/{thread}")).json()
    return [(m["role"], m["content"]) for m in found["messages"] if m["role"] in ("user", "assistant") and m["content"]]


async def test_interrupt_and_enqueue_with_two_workers(shared_storage: str) -> None:
    with serve(shared_storage, "--workers", "2") as url:
        # interrupt: the slow run stops (cancelled), the new message runs with its context
        slow = await holding(url, sent("t-interrupt", "slow work please"))
        events, _, _ = await post(url, sent("t-interrupt", "hello", "interrupt"))
        assert events[-1]["type"] == "RUN_FINISHED" and answer(events) == "echo: hello"
        stopped = await slow
        assert stopped[-1]["type"] == "RUN_FINISHED" and stopped[-1]["outcome"]["type"] == "cancelled"
        assert await history(url, "t-interrupt") == [("user", "slow work please"), ("user", "hello"), ("assistant", "echo: hello")]

        # enqueue: the new message waits for the slow run, then runs; nothing lost
        slow = await holding(url, sent("t-enqueue", "slow work please"))
        events, _, _ = await post(url, sent("t-enqueue", "hello", "enqueue"))
        assert events[-1]["type"] == "RUN_FINISHED" and answer(events) == "echo: hello"
        done = await slow
        assert done[-1]["type"] == "RUN_FINISHED" and answer(done) == "final: finally done"
        assert await history(url, "t-enqueue") == [
            ("user", "slow work please"),
            ("assistant", "final: finally done"),
            ("user", "hello"),
            ("assistant", "echo: hello"),
        ]

        # an unknown strategy is refused before anything runs
        events, _, _ = await post(url, sent("t-enqueue", "again", "later"))
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "INVALID_ON_BUSY"
        assert all(name in events[-1]["message"] for name in ("reject", "enqueue", "interrupt", "rollback"))
        assert len(await history(url, "t-enqueue")) == 4


async def test_the_server_default_and_rollback(shared_storage: str) -> None:
    with serve(shared_storage, "--workers", "2", "--on-busy", "rollback") as url:
        events, _, _ = await post(url, sent("t-rollback", "hi"))
        assert answer(events) == "echo: hi"
        slow = await holding(url, sent("t-rollback", "slow work please"))
        events, _, _ = await post(url, sent("t-rollback", "hello"))  # the server's --on-busy
        assert events[-1]["type"] == "RUN_FINISHED" and answer(events) == "echo: hello"
        stopped = await slow
        assert stopped[-1]["outcome"]["type"] == "cancelled"
        assert await history(url, "t-rollback") == [
            ("user", "hi"), ("assistant", "echo: hi"), ("user", "hello"), ("assistant", "echo: hello")
        ]
        # a request may still ask for reject
        slow = await holding(url, sent("t-rollback", "slow work please"))
        events, _, _ = await post(url, sent("t-rollback", "hello", "reject"))
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "THREAD_BUSY"
        assert (await slow)[-1]["type"] == "RUN_FINISHED"
