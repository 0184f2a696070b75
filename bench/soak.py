"""`python -m bench soak`: `supervisor-graph serve --workers W` under mixed AG-UI load for
minutes, watching each worker's memory and every thread's history (issue 46).

    python -m bench soak --minutes 15 --workers 2 [--storage sqlite|postgres] [--clients 6]

The server is the real command in a subprocess, serving `agent` below: a supervisor that
delegates to a subagent and calls a tool per turn, or, on a message starting "pay",
calls a tool that needs an approval. `--clients` conversations run concurrently, each
picking its next action at random:

- a conversation: a new thread, then two more runs on it;
- a client cancel: a new thread whose first run the client cuts (it closes the event
  stream mid-run), then two runs on the same thread straight away;
- an approval: "pay" pauses on the approval (`RUN_FINISHED` with an interrupt), and a
  second request resumes it (`RunAgentInput.resume`, approved);
- double texting: a run, and while it streams a second message on the same thread with
  `forwardedProps.on_busy` = reject, enqueue, interrupt or rollback (in turn).

Every 30 s (`--sample`) each worker's RSS, open fds and database connections (sqlite:
fds open on the database's files; Postgres: `pg_stat_activity` rows of the database)
are sampled. At the end every thread's stored history is checked against what the
clients were told: the message of each run that ended `RUN_FINISHED` success is stored
exactly once and answered, and every tool call is answered exactly once. Exit status 1 on
any loss, any transcript out of step, or a worker whose RSS grew more than `--max-growth`
MB between the first sample at or after the first minute and the last one.

`SG_SOAK_TRACE=DIR` in the environment makes each worker trace its allocations
(tracemalloc) and write, every 60 s, the 40 sites that grew most since its first minute
(`DIR/trace-<pid>.txt`): how the leaks of issue 46 were found. It slows the workers down.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

__all__ = ["SoakResult", "agent", "main", "run_soak"]

ROOT = Path(__file__).resolve().parents[1]
STORAGE_ENV = "SG_SOAK_STORAGE"
TRACE_ENV = "SG_SOAK_TRACE"
LEASE_TTL_ENV = "SG_SOAK_LEASE_TTL"  # seconds (default 2, as bench.serve_load: a stalled worker's lease lapses soon)
PATH = "/agent"
RESOURCE = "soak"
MODES = ("reject", "enqueue", "interrupt", "rollback")
MB = 1024 * 1024
RUN_LIMIT = 120.0  # seconds a run may take before the client counts it stuck


# -- the served agent ---------------------------------------------------------------------


class _Text(BaseModel):
    text: str


class _Amount(BaseModel):
    amount: int


async def _lookup(args: _Text) -> str:
    await asyncio.sleep(0.01)
    return f"found {args.text}"


def _pay(args: _Amount) -> str:
    return f"paid {args.amount}"


def _boss(messages: list[BaseMessage]) -> Any:
    last = messages[-1]
    if isinstance(last, HumanMessage):
        if str(last.content).startswith("pay"):
            return tool_call("pay", {"amount": 3})
        return [delegate("research", "dig"), tool_call("lookup", {"text": "top"})]
    return "done"


def _sub(messages: list[BaseMessage]) -> Any:
    return "answer" if isinstance(messages[-1], ToolMessage) else tool_call("lookup", {"text": "sub"})


def _agent() -> Agent:
    lookup = create_tool(id="lookup", description="Look up.", input_schema=_Text, execute=_lookup)
    pay = create_tool(id="pay", description="Pay.", input_schema=_Amount, execute=_pay, require_approval=True)
    research = Agent(
        id="research-agent", description="The research.", tools=[lookup],
        model=ScriptedChatModel(policy=_sub, latency=0.02, record_calls=False),
    )  # fmt: skip
    return Agent(
        id="boss", tools=[lookup, pay], agents={"research": research},
        memory=Memory(os.environ.get(STORAGE_ENV, ":memory:"), lease_ttl=float(os.environ.get(LEASE_TTL_ENV, "2"))),
        model=ScriptedChatModel(policy=_boss, latency=0.02, record_calls=False),
    )  # fmt: skip


agent = _agent()


def _trace(folder: str) -> None:
    """In a worker: allocation sites that keep growing, written every minute."""
    import tracemalloc

    tracemalloc.start(12)

    def loop() -> None:
        time.sleep(60)
        base = tracemalloc.take_snapshot()
        counts = Counter(type(o).__qualname__ for o in gc.get_objects())
        while True:
            time.sleep(60)
            now = tracemalloc.take_snapshot()
            top = now.compare_to(base, "traceback")[:40]
            lines = [f"# {time.strftime('%H:%M:%S')} traced {tracemalloc.get_traced_memory()[0] / MB:.1f} MB"]
            for stat in top:
                lines.append(f"{stat.size_diff / 1024:+.0f} KiB {stat.count_diff:+d} blocks")
                lines.extend(f"    {frame}" for frame in stat.traceback.format()[-12:])
            lines.extend(_object_counts(counts))
            Path(folder, f"trace-{os.getpid()}.txt").write_text("\n".join(lines) + "\n")

    threading.Thread(target=loop, daemon=True).start()


def _object_counts(base: Counter[str]) -> list[str]:
    """The object types whose count grew most since `base`, and what the caches of this
    process hold (the delta cache's threads, the bridge's per-thread maps)."""
    objects = gc.get_objects()
    now = Counter(type(o).__qualname__ for o in objects)
    lines = ["# object counts, growth since the first minute"]
    lines += [f"{n:+d} {name}" for name, n in (now - base).most_common(25)]
    from supervisor_graph.agui.agent import AGUIAgent
    from supervisor_graph.checkpointers.delta_cache import DeltaHistoryCache

    for o in objects:
        if isinstance(o, DeltaHistoryCache):
            threads = o.__dict__.get("_sg_delta_threads") or {}
            lines.append(f"# delta cache of {type(o).__name__}: {len(threads)} threads, {o.delta_cache_size} bytes (estimated)")
        elif isinstance(o, AGUIAgent):
            lines.append(f"# AGUIAgent: stopping {len(o._stopping)}, settling {len(o._settling)}, controllers {len(o._controllers)}")
    return lines


if os.environ.get(TRACE_ENV) and os.environ.get(STORAGE_ENV):
    _trace(os.environ[TRACE_ENV])


# -- the clients ----------------------------------------------------------------------------


@dataclass
class SoakResult:
    storage: str
    workers: int
    clients: int
    minutes: float
    actions: Counter[str] = field(default_factory=Counter)  # what the clients did
    outcomes: Counter[str] = field(default_factory=Counter)  # terminal events they got
    sent: dict[str, list[str]] = field(default_factory=dict)  # thread -> texts of runs that ended success
    threads: set[str] = field(default_factory=set)
    samples: list[dict[str, Any]] = field(default_factory=list)  # {"t": s, "rss": {pid: MB}, "fds": {pid: n}, "db": n}
    threads_losing: dict[str, list[str]] = field(default_factory=dict)
    threads_out_of_step: dict[str, list[str]] = field(default_factory=dict)
    server_notes: list[str] = field(default_factory=list)
    never_retrieved: int = 0  # "Task exception was never retrieved" in the server log
    taken_over: int = 0  # leases taken from a run still holding them (its renewals came too late)
    max_growth_mb: float = 20.0

    def growth(self) -> dict[int, float]:
        """Per worker, MB of RSS gained from its first sample at or after 60 s to its last."""
        out: dict[int, float] = {}
        pids = {pid for s in self.samples for pid in s["rss"]}
        for pid in pids:
            mine = [(s["t"], s["rss"][pid]) for s in self.samples if pid in s["rss"]]
            after = [rss for t, rss in mine if t >= 60]
            if len(after) >= 2:
                out[pid] = after[-1] - after[0]
        return out

    @property
    def failed(self) -> bool:
        return bool(self.threads_losing or self.threads_out_of_step or self.leaking or not self.sent or self.outcomes["stuck"])

    @property
    def leaking(self) -> dict[int, float]:
        return {pid: g for pid, g in self.growth().items() if g > self.max_growth_mb}

    def summary(self) -> dict[str, Any]:
        return {
            "storage": self.storage, "workers": self.workers, "clients": self.clients, "minutes": self.minutes,
            "actions": dict(self.actions), "outcomes": dict(self.outcomes), "threads": len(self.threads),
            "runs_checked": sum(len(v) for v in self.sent.values()),
            "threads_losing_messages": len(self.threads_losing), "threads_out_of_step": len(self.threads_out_of_step),
            "stuck_runs": self.outcomes["stuck"],
            "rss_growth_mb_after_1_min": {str(p): round(g, 1) for p, g in self.growth().items()},
            "never_retrieved": self.never_retrieved, "leases_taken_over": self.taken_over,
        }  # fmt: skip

    def table(self) -> list[str]:
        """The curve: one row per sample, a column per worker."""
        pids = sorted({pid for s in self.samples for pid in s["rss"]})
        head = " | ".join(f"worker {i + 1} RSS MB" for i in range(len(pids)))
        rows = [f"| t (s) | {head} | fds (all workers) | DB connections |", "|---:|" + "---:|" * (len(pids) + 2)]
        for s in self.samples:
            cells = " | ".join(f"{s['rss'][p]:.0f}" if p in s["rss"] else "-" for p in pids)
            rows.append(f"| {s['t']:.0f} | {cells} | {sum(s['fds'].values())} | {s['db']} |")
        return rows


def _body(thread: str, text: str | None, *, on_busy: str | None = None, resume: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "threadId": thread, "runId": f"run-{uuid.uuid4().hex}", "state": {}, "tools": [], "context": [],
        "messages": [] if text is None else [{"id": uuid.uuid4().hex, "role": "user", "content": text}],
        "forwardedProps": {"on_busy": on_busy} if on_busy else {},
        **({"resume": resume} if resume else {}),
    }  # fmt: skip


ACTIONS = ("conversation", "cancel", "approval", "double")
# how often each action is picked
WEIGHTS = {"conversation": 0.3, "cancel": 0.25, "approval": 0.2, "double": 0.25}


class _Clients:
    def __init__(self, url: str, result: SoakResult, actions: tuple[str, ...] = ACTIONS) -> None:
        self.url = url
        self.result = result
        self.rng = random.Random(46)
        self.turn = 0
        self.actions = list(actions)
        self.weights = [WEIGHTS[a] for a in actions]

    async def run(self, client: Any, body: dict[str, Any], *, retry_busy: bool = True) -> dict[str, Any]:
        """One request to its terminal event (THREAD_BUSY retried unless told not to). A
        run with no terminal event within `RUN_LIMIT` seconds is `stuck` (keep-alives
        keep its stream open: the client's read timeout never fires)."""
        from bench.load_clients import last_event

        async def one() -> bytes:
            async with client.stream("POST", self.url, json=body, headers={"accept": "text/event-stream"}) as response:
                if response.status_code != 200:
                    return f'data: {{"type": "HTTP {response.status_code}"}}'.encode()
                return b"".join([chunk async for chunk in response.aiter_bytes()])

        for _ in range(100):
            try:
                last = last_event(await asyncio.wait_for(one(), RUN_LIMIT))
            except TimeoutError:
                return {"type": "stuck"}
            except Exception as exc:  # noqa: BLE001 - counted as an outcome
                return {"type": type(exc).__name__}
            if retry_busy and last.get("code") == "THREAD_BUSY":
                await asyncio.sleep(0.2)
                body = {**body, "runId": f"run-{uuid.uuid4().hex}"}
                continue
            return last
        return {"type": "busy forever"}

    def told(self, thread: str, text: str, last: dict[str, Any]) -> str:
        kind = str(last.get("type"))
        if kind == "RUN_FINISHED":
            kind = f"finished {(last.get('outcome') or {}).get('type', 'success')}"
        elif kind == "RUN_ERROR":
            kind = f"error {last.get('code')}"
        self.result.outcomes[kind] += 1
        if kind == "finished success":
            self.result.sent.setdefault(thread, []).append(text)
        return kind

    def thread(self, kind: str) -> str:
        thread = f"soak-{kind}-{uuid.uuid4().hex[:10]}"
        self.result.threads.add(thread)
        return thread

    async def conversation(self, client: Any) -> None:
        thread = self.thread("conv")
        for turn in range(3):
            text = f"turn {turn} {uuid.uuid4().hex[:6]}"
            self.told(thread, text, await self.run(client, _body(thread, text)))

    async def cancel(self, client: Any) -> None:
        """The first run is cut by its client mid-stream; two more follow at once."""
        thread = self.thread("cancel")
        body = _body(thread, f"cut {uuid.uuid4().hex[:6]}")
        try:
            async with client.stream("POST", self.url, json=body, headers={"accept": "text/event-stream"}) as response:
                seen = 0
                async for chunk in response.aiter_bytes():
                    seen += chunk.count(b"data:")
                    if seen >= 2 + self.rng.randrange(6):  # RUN_STARTED and a few events in
                        break
        except Exception:  # noqa: BLE001 - the cut itself
            pass
        self.result.outcomes["cancelled by client"] += 1
        for turn in range(2):
            text = f"after cut {turn} {uuid.uuid4().hex[:6]}"
            self.told(thread, text, await self.run(client, _body(thread, text)))

    async def approval(self, client: Any) -> None:
        thread = self.thread("pay")
        text = f"pay {uuid.uuid4().hex[:6]}"
        last = await self.run(client, _body(thread, text))
        if self.told(thread, text, last) != "finished interrupt":
            return
        items = (last.get("outcome") or {}).get("interrupts") or []
        resume = [{"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}} for i in items]
        if self.told(thread, "", await self.run(client, _body(thread, None, resume=resume))) == "finished success":
            # the resume's success answers the paused message: it must be stored and answered
            self.result.sent[thread][-1] = text

    async def double_text(self, client: Any, mode: str) -> None:
        thread = self.thread(f"dt{mode}")
        first, second = f"first {uuid.uuid4().hex[:6]}", f"second {mode} {uuid.uuid4().hex[:6]}"
        running = asyncio.ensure_future(self.run(client, _body(thread, first)))
        await asyncio.sleep(0.03 + self.rng.random() * 0.1)
        last = await self.run(client, _body(thread, second, on_busy=mode), retry_busy=False)
        self.told(thread, second, last)
        self.told(thread, first, await running)

    async def client(self, client: Any, deadline: float) -> None:
        while time.monotonic() < deadline:
            action = self.rng.choices(self.actions, self.weights)[0]
            if action == "conversation":
                self.result.actions["conversation"] += 1
                await self.conversation(client)
            elif action == "cancel":
                self.result.actions["client cancel"] += 1
                await self.cancel(client)
            elif action == "approval":
                self.result.actions["approval"] += 1
                await self.approval(client)
            else:
                mode = MODES[self.turn % len(MODES)]
                self.turn += 1
                self.result.actions[f"double text {mode}"] += 1
                await self.double_text(client, mode)


# -- samples of the server's processes ------------------------------------------------------


def _workers(server: subprocess.Popen[bytes]) -> list[Any]:
    import psutil

    try:
        kids = psutil.Process(server.pid).children()
    except psutil.Error:
        return []
    return [k for k in kids if "resource_tracker" not in " ".join(_cmd(k))] or [psutil.Process(server.pid)]


def _cmd(proc: Any) -> list[str]:
    try:
        return list(proc.cmdline())
    except Exception:  # noqa: BLE001 - a process gone meanwhile
        return []


def _sample(server: subprocess.Popen[bytes], began: float, db_files: str | None, pg: tuple[str, str] | None) -> dict[str, Any]:
    rss: dict[int, float] = {}
    fds: dict[int, int] = {}
    db = 0
    for proc in _workers(server):
        try:
            rss[proc.pid] = proc.memory_info().rss / MB
            fds[proc.pid] = proc.num_fds()
            if db_files is not None:
                db += sum(1 for f in proc.open_files() if f.path.startswith(db_files))
        except Exception:  # noqa: BLE001 - a worker replaced meanwhile
            continue
    if pg is not None:
        import psycopg

        admin, name = pg
        with psycopg.connect(admin, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)).fetchone()
            db = int(row[0]) if row else 0
    return {"t": round(time.monotonic() - began, 1), "rss": rss, "fds": fds, "db": db}


async def _load(
    url: str, result: SoakResult, server: subprocess.Popen[bytes], sample_s: float, db: Any, pg: Any, actions: tuple[str, ...]
) -> None:
    import httpx

    from bench.load_clients import limits

    clients = _Clients(url, result, actions)
    began = time.monotonic()
    deadline = began + result.minutes * 60

    async def sampler() -> None:
        while True:
            result.samples.append(await asyncio.to_thread(_sample, server, began, db, pg))
            print(json.dumps(result.samples[-1]), flush=True)
            if time.monotonic() >= deadline:
                return
            await asyncio.sleep(min(sample_s, max(0.0, deadline - time.monotonic())))

    async with httpx.AsyncClient(timeout=120, limits=limits(result.clients * 2)) as client:
        watch = asyncio.ensure_future(sampler())
        await asyncio.gather(*(clients.client(client, deadline) for _ in range(result.clients)))
        await watch
    # the last sample once the load is done, so the curve ends where the runs ended
    result.samples.append(await asyncio.to_thread(_sample, server, began, db, pg))


async def _check(storage: str, result: SoakResult) -> None:
    from bench.serve_load import lost, problems

    async with Memory(storage) as memory:
        for thread in sorted(result.threads):
            messages = await memory.get_messages(thread)
            found = problems(messages)
            if found:
                # the transcript itself, to see which run wrote what
                result.threads_out_of_step[thread] = found[:3] + [_brief(m) for m in messages][:40]
            missing = lost(messages, result.sent.get(thread, []))
            if missing:
                result.threads_losing[thread] = missing[:3]


def _brief(message: BaseMessage) -> str:
    calls = [c["id"] for c in getattr(message, "tool_calls", None) or []]
    extra = f" calls={calls}" if calls else f" answers={message.tool_call_id}" if isinstance(message, ToolMessage) else ""
    return f"{type(message).__name__}({str(message.content)[:60]!r}{extra})"


def run_soak(
    storage_kind: str = "sqlite", minutes: float = 2.0, workers: int = 2, clients: int = 6, *, sample_s: float = 30.0,
    max_growth_mb: float = 20.0, postgres: str | None = None, trace: str | None = None,
    actions: tuple[str, ...] = ACTIONS, log_path: str | None = None,
) -> SoakResult:
    """The soak: the served agent under `clients` mixed clients for `minutes`, sampled
    every `sample_s`, then the history check."""
    from bench.serve_load import PG_ADMIN, _free_port, _postgres, _wait_up

    result = SoakResult(storage_kind, workers, clients, minutes, max_growth_mb=max_growth_mb)
    with ExitStack() as stack:
        pg = None
        db_files = None
        if storage_kind == "postgres":
            admin = postgres or PG_ADMIN
            storage = stack.enter_context(_postgres(admin))
            pg = (admin, storage.rsplit("/", 1)[1])
        else:
            folder = stack.enter_context(tempfile.TemporaryDirectory())
            storage, db_files = f"file:{folder}/soak.db", f"{folder}/"
        port = _free_port()
        env = {**os.environ, STORAGE_ENV: storage, "PYTHONPATH": str(ROOT)}
        if trace:
            env[TRACE_ENV] = trace
        log = stack.enter_context(tempfile.TemporaryFile())
        server = subprocess.Popen(
            [str(Path(sys.executable).with_name("supervisor-graph")), "serve", "bench.soak:agent", "--workers",
             str(workers), "--port", str(port), "--resource", RESOURCE],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT,
        )  # fmt: skip
        stack.callback(lambda: os.killpg(server.pid, signal.SIGKILL) if server.poll() is None else None)
        _wait_up(port, server, log, workers)
        asyncio.run(_load(f"http://127.0.0.1:{port}{PATH}", result, server, sample_s, db_files, pg, actions))
        asyncio.run(_check(storage, result))
        log.seek(0)
        text = log.read().decode(errors="replace")
        if log_path:
            Path(log_path).write_text(text)
        lines = text.splitlines()
        result.taken_over = sum("was taken over" in line for line in lines)
        result.never_retrieved = sum("never retrieved" in line for line in lines)
        result.server_notes = [line for line in lines if "Error" in line or "Traceback" in line or "never retrieved" in line][:20]
    return result


def report(result: SoakResult) -> str:
    """The markdown of one soak: the verdict line and the curve."""
    growth = ", ".join(f"{g:+.1f}" for _, g in sorted(result.growth().items())) or "n/a"
    checked = sum(len(v) for v in result.sent.values())
    head = (
        f"**{result.storage}, `--workers {result.workers}`, {result.clients} clients, {result.minutes:g} min**: "
        f"{sum(result.actions.values())} actions ({', '.join(f'{k} {v}' for k, v in sorted(result.actions.items()))}); "
        f"{checked} successful runs checked on {len(result.threads)} threads: {len(result.threads_losing)} losing a message, "
        f"{len(result.threads_out_of_step)} out of step, {result.outcomes['stuck']} runs stuck; worker RSS growth after the first minute (MB): {growth}; "
        f"{'FAILED' if result.failed else 'passed'}."
    )
    return "\n".join([head, "", *result.table()])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench soak", description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--minutes", type=float, default=15.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--storage", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--sample", type=float, default=30.0, help="seconds between samples (default 30)")
    parser.add_argument("--max-growth", type=float, default=20.0, help="MB a worker may grow after the first minute (default 20)")
    parser.add_argument("--postgres", help="an existing database to create the soak's one beside")
    parser.add_argument("--trace", help="a folder: the workers trace their allocations there (slow)")
    parser.add_argument("--out", help="also write the markdown report here")
    parser.add_argument("--log", help="keep the server's log here")
    parser.add_argument("--actions", default=",".join(ACTIONS), help=f"the actions picked among (default {','.join(ACTIONS)})")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.clients < 1 or args.minutes <= 0:
        parser.error("--workers and --clients must be at least 1, --minutes above 0")
    actions = tuple(a.strip() for a in args.actions.split(",") if a.strip())
    if not actions or set(actions) - set(ACTIONS):
        parser.error(f"--actions: some of {', '.join(ACTIONS)}")
    print(f"{os.cpu_count()} cores; soak of {args.minutes:g} min, {args.storage}, {args.workers} workers, {args.clients} clients", flush=True)
    result = run_soak(
        args.storage, args.minutes, args.workers, args.clients, sample_s=args.sample, max_growth_mb=args.max_growth,
        postgres=args.postgres, trace=args.trace, actions=actions, log_path=args.log,
    )  # fmt: skip
    print(json.dumps(result.summary()), flush=True)
    for found in (result.threads_losing, result.threads_out_of_step, result.leaking):
        if found:
            print(json.dumps(found)[:3000], flush=True)
    for line in result.server_notes:
        print(f"server: {line}", flush=True)
    text = report(result)
    print(text, flush=True)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 1 if result.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
