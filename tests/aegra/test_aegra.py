"""The compiled graph, unchanged, on two Aegra servers sharing one Postgres and one Redis
(SPEC §20): a pause on one is resumed on the other, 30 concurrent threads spread over
both all finish, and a server killed with SIGKILL mid-run loses no run and repeats no
side effect, nor a background task's notice. The capabilities of
tests/embedding/test_parity.py are checked here over HTTP too (tests/studio/parity_checks.py).

Aegra needs Python 3.12+: `bench.aegra` builds `.venv-aegra` (pyenv's or the PATH's
python3.12, `aegra-api` / `aegra-cli` 0.11 and this project) once, and reuses it.
"""

from __future__ import annotations

import asyncio
import random
import re
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from bench.aegra import aegra_command, aegra_env, aegra_server, free_port, kill_server, server_alive, write_config
from tests.conftest import fresh_postgres
from tests.studio import parity_checks as parity
from tests.studio.background_graph import answered_on_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def aegra() -> str:
    """The `aegra` command of a Python 3.12 venv with this project installed."""
    command = aegra_command()
    if command is None:
        message = "AEGRA TEST SKIPPED: no Python 3.12+ interpreter found (pyenv 3.12, python3.12 on PATH, or SUPERVISOR_GRAPH_PY312)"
        print(f"\n{'!' * 20} {message} {'!' * 20}", file=sys.stderr)
        pytest.skip(message)
    return command


@pytest.fixture(scope="module")
def cluster(aegra: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """Two Aegra servers on one fresh Postgres database and one Redis queue."""
    work = tmp_path_factory.mktemp("aegra")
    config = write_config(
        work,
        {
            "supervisor": str(ROOT / "supervisor_graph/examples/research_write.py") + ":graph",
            "slow": str(ROOT / "tests/aegra/slow_graph.py") + ":graph",
            # remote subagents (SPEC §21) on Aegra too
            "echo": str(ROOT / "tests/remote/graphs.py") + ":echo",
            "approver": str(ROOT / "tests/remote/graphs.py") + ":approver",
            # background delegations hosted by the servers (SPEC §12)
            "background": str(ROOT / "tests/studio/background_graph.py") + ":graph",
            # one small graph per capability (tests/studio/parity_graphs.py)
            **parity.GRAPHS,
        },
    )
    # Aegra offers no in-process client: background runs are started through the second
    # server's URL (the one the crash test keeps alive), from whichever server runs them
    ports = free_port(), free_port()
    ledger = work / "ledger"
    with fresh_postgres() as database, ExitStack() as servers:
        env = aegra_env(
            database,
            random.randint(1, 15),
            N_JOBS_PER_WORKER="10",
            # fast crash recovery for the test (defaults: 30 s lease, 15 s reaper)
            LEASE_DURATION_SECONDS="5",
            HEARTBEAT_INTERVAL_SECONDS="2",
            REAPER_INTERVAL_SECONDS="2",
            SG_AEGRA_LEDGER=str(ledger),
            SUPERVISOR_GRAPH_SERVER_URL=f"http://127.0.0.1:{ports[1]}",
        )
        # the first server runs the migrations; the second starts once it answers
        first = servers.enter_context(aegra_server(aegra, config, env, ports[0]))
        second = servers.enter_context(aegra_server(aegra, config, env, ports[1]))
        yield {
            "urls": [first[0], second[0]],
            "procs": [first[1], second[1]],
            "logs": [first[2], second[2]],
            "ledger": ledger,
            "config": config,
            "env": env,
            "database": database,
        }


def client(url: str):
    from langgraph_sdk import get_client

    return get_client(url=url)


def live(cluster: dict) -> Any:
    """A client of a server still up (the crash test kills the first one)."""
    return client(next(u for u, proc in zip(cluster["urls"], cluster["procs"], strict=True) if server_alive(proc)))


async def test_a_run_paused_on_one_server_is_resumed_on_the_other(cluster: dict) -> None:
    a, b = (client(u) for u in cluster["urls"])
    thread = await a.threads.create()
    prompt = {"messages": [{"role": "user", "content": "Research bees, write a short article and publish it"}]}
    await a.runs.wait(thread["thread_id"], "supervisor", input=prompt)
    state = await b.threads.get_state(thread["thread_id"])
    [interrupt] = state["interrupts"]
    assert interrupt["value"]["tool_name"] == "publish"
    await b.runs.wait(thread["thread_id"], "supervisor", command={"resume": {"approved": True}})
    final = await a.threads.get_state(thread["thread_id"])
    assert "Published 'Bees" in final["values"]["messages"][-1]["content"] and not final["interrupts"]
    # working memory (SPEC §8) lives in the platform's store (Aegra's store API scopes
    # namespaces per user, so it is checked through the agent): a second run on the other
    # server finds the topic already noted and does not note it again
    again = {"messages": [{"role": "user", "content": "Research bees"}]}
    await a.runs.wait(thread["thread_id"], "supervisor", input=again)
    messages = (await b.threads.get_state(thread["thread_id"]))["values"]["messages"]
    notes = [m for m in messages if m["type"] == "tool" and m.get("name") == "update_working_memory"]
    assert len(notes) == 1 and messages[-1]["content"].startswith("Here is your article on bees.")


async def test_thirty_concurrent_threads_over_both_servers_all_finish(cluster: dict) -> None:
    clients = [client(u) for u in cluster["urls"]]

    async def one(i: int) -> str:
        c = clients[i % 2]
        thread = await c.threads.create()
        prompt = {"messages": [{"role": "user", "content": f"Research topic {i} and write an article"}]}
        out = await c.runs.wait(thread["thread_id"], "supervisor", input=prompt)
        return out["messages"][-1]["content"]

    answers = await asyncio.gather(*(one(i) for i in range(30)))
    assert all(answer.startswith(f"Here is your article on topic {i}") for i, answer in enumerate(answers)), answers


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def in_flight(log: Path, graph_id: str) -> set[str]:
    """Run ids a server's workers picked up and have not finished, from its log."""
    picked, finished = set(), set()
    for line in ANSI.sub("", log.read_text(errors="replace")).splitlines():
        run = re.search(r"\brun_id=([0-9a-f-]{36})", line)
        if run is None:
            continue
        if "Worker picked up run" in line and f"graph_id={graph_id} " in line:
            picked.add(run.group(1))
        elif "Worker finished run" in line:
            finished.add(run.group(1))
    return picked - finished


async def test_a_background_delegation_is_a_run_on_the_cluster_answered_once(cluster: dict) -> None:
    """SPEC §12 on Aegra: the background task is a run of the graph on a thread of its own
    (any server's worker may take it), and its outcome comes back to the parent thread as a
    new run, answered once."""
    a, b = (client(u) for u in cluster["urls"])
    thread = await a.threads.create()
    tid = thread["thread_id"]
    await a.runs.wait(tid, "background", input={"messages": [{"role": "user", "content": "go"}]})
    await answered_on_server(b, tid)


async def until_dead(proc: Any) -> None:
    """Until every process of the killed server's group has exited: polled with a bounded
    but generous deadline, not assumed after a fixed 0.5 s."""
    deadline = time.monotonic() + 30
    while server_alive(proc):
        assert time.monotonic() < deadline, "the killed server still runs"
        await asyncio.sleep(0.05)


async def test_a_server_killed_mid_run_loses_no_run(cluster: dict) -> None:
    a, b = (client(u) for u in cluster["urls"])
    started: list[tuple[str, str]] = []
    victim_runs: set[str] = set()
    for _ in range(10):  # the queue is shared: add slow runs until the first server is working on some
        for _ in range(4):
            thread = await b.threads.create()
            run = await b.runs.create(
                thread["thread_id"], "slow", durability="sync",
                input={"messages": [{"role": "user", "content": f"entry {len(started)}"}]},
            )
            started.append((thread["thread_id"], run["run_id"]))
        await asyncio.sleep(0.8)
        victim_runs = in_flight(cluster["logs"][0], "slow") & {run_id for _, run_id in started}
        if victim_runs:
            break
    assert victim_runs, "the first server never took a run from the shared queue"
    kill_server(cluster["procs"][0])  # SIGKILL to the server and its worker processes, mid-run
    cluster["procs"][0].wait(10)
    await until_dead(cluster["procs"][0])
    for thread_id, run_id in started:
        done = await b.runs.join(thread_id, run_id)
        assert done["messages"][-1]["content"].startswith("finished: done: recorded entry"), done
    entries = cluster["ledger"].read_text().split()
    assert len(entries) == len(set(entries)) == len(started)  # every run's side effect, each once


async def test_a_remote_subagent_on_aegra_answers_and_its_interrupt_is_resumed(cluster: dict) -> None:
    """SPEC §21 against an Aegra server: a delegation to a graph it serves, and a remote
    interrupt answered through the local parent."""
    from langchain_core.messages import ToolMessage

    from supervisor_graph import Agent, Memory, RemoteAgent
    from supervisor_graph.testing import ScriptedChatModel, delegate

    def parent(graph_id: str) -> Agent:
        model = ScriptedChatModel(
            policy=lambda m: f"boss: {m[-1].content}" if isinstance(m[-1], ToolMessage) else delegate("remote", "hi there")
        )
        # a server still up (the crash test kills the first one)
        url = next(u for u, proc in zip(cluster["urls"], cluster["procs"], strict=True) if server_alive(proc))
        remote = RemoteAgent(url=url, graph_id=graph_id, description="On Aegra.")
        return Agent(id="boss", model=model, agents={"remote": remote}, memory=Memory(":memory:"))

    echoed = await parent("echo").generate("go", request_context={"topic": "aegra"})
    assert echoed.text.startswith("boss: echo: hi there") and echoed.delegations[0].success
    approver = parent("approver")
    paused = await approver.generate("go", memory={"thread": "aegra-remote"})
    [item] = paused.suspended
    assert (item.kind, item.tool_name) == ("approval", "transfer")
    done = await approver.approve_tool_call(interrupt_id=item.interrupt_id, memory={"thread": "aegra-remote"})
    assert done.text == "boss: transfer done"


def ran(log: Path, run_id: str) -> bool:
    """Whether a server's worker ran `run_id` to its end, from its log."""
    lines = ANSI.sub("", log.read_text(errors="replace")).splitlines()
    return any("Worker finished run" in line and f"run_id={run_id}" in line for line in lines)


async def test_a_background_task_whose_server_is_killed_finishes_on_another_answered_once(
    aegra: str, cluster: dict
) -> None:
    """SPEC §12 and §20: a background task whose server is SIGKILLed while the task runs
    is run again by another server, and the parent thread hears of it once.

    The server killed here is a third one, started by this test: the crash test above kills
    the first server of the cluster, which has two, and this test must not depend on the
    order. The third server shares the cluster's database but takes runs from a queue of its
    own (`WORKER_QUEUE_KEY`) and starts background tasks through its own URL, so the parent
    run and the task's run both surely run on it; once it is killed and the task's lease
    expires, a surviving server's lease reaper puts the run back on the cluster's queue
    (a reaper re-enqueues on its own server's queue), where a surviving worker runs it."""
    port = free_port()
    env = {
        **cluster["env"],
        "WORKER_QUEUE_KEY": f"sg:{uuid.uuid4().hex[:8]}",
        "SUPERVISOR_GRAPH_SERVER_URL": f"http://127.0.0.1:{port}",
    }
    with aegra_server(aegra, cluster["config"], env, port) as (url, proc, log):
        doomed = client(url)
        tid = (await doomed.threads.create())["thread_id"]
        prompt = {"messages": [{"role": "user", "content": "go"}]}
        async for part in doomed.runs.stream(tid, "parity_background_slow", input=prompt):  # `runs.wait` polls every 2 s
            assert part.event != "error", part.data
        [record] = (await doomed.threads.get_state(tid))["values"]["background_tasks"].values()
        deadline = asyncio.get_running_loop().time() + 20
        while record["server_run"] not in in_flight(log, "parity_background_slow"):
            assert asyncio.get_running_loop().time() < deadline, "the third server never took the task's run"
            await asyncio.sleep(0.1)
        kill_server(proc)  # SIGKILL mid-task: its researcher takes 3 s
        proc.wait(10)
        await until_dead(proc)
        assert not ran(log, record["server_run"])  # killed mid-task
    survivor = live(cluster)
    task_id, record, values = await answered_on_server(survivor, tid)  # the notice, once
    assert values["background_tasks"][task_id]["status"] == "completed"
    assert any(ran(log, record["server_run"]) for log in cluster["logs"])  # finished by a surviving server
    task_thread = await survivor.threads.get_state(record["server_thread"])
    assert task_thread["values"]["messages"][-1]["content"] == "server facts"


# -- the capabilities of tests/embedding/test_parity.py, over HTTP (SPEC §23) -------------


async def test_delegation_hooks_from_default_options(cluster: dict) -> None:
    await parity.check_hooks(live(cluster))


async def test_result_references_from_default_options(cluster: dict) -> None:
    await parity.check_references(live(cluster))


async def test_scorers_from_default_options_loop_until_they_pass(cluster: dict) -> None:
    await parity.check_scorer(live(cluster))


async def test_suspend_in_a_subagents_tool_resumed_with_a_command(cluster: dict) -> None:
    await parity.check_suspend(live(cluster))


async def test_a_client_tool_ends_the_run_with_the_call_pending(cluster: dict) -> None:
    await parity.check_client_tool(live(cluster))


async def test_decisions_on_approvals_at_depth_one_and_two_by_command(cluster: dict) -> None:
    await parity.check_decisions(live(cluster))


async def test_the_request_context_comes_from_the_runs_context(cluster: dict) -> None:
    await parity.check_request_context(live(cluster))


async def test_the_subagent_set_is_chosen_per_run_from_its_context(cluster: dict) -> None:
    await parity.check_dynamic(live(cluster))


async def test_usage_reaches_the_client_in_the_runs_output(cluster: dict) -> None:
    await parity.check_usage(live(cluster))


async def test_a_budget_comes_from_the_runs_context(cluster: dict) -> None:
    await parity.check_budget(live(cluster))


async def test_langchain_middleware_runs_in_the_served_graph(cluster: dict) -> None:
    await parity.check_middleware(live(cluster))


async def test_a_long_conversation_compacts(cluster: dict) -> None:
    await parity.check_compaction(live(cluster))


async def test_output_schemas_declared_and_from_the_runs_context(cluster: dict) -> None:
    await parity.check_structured_output(live(cluster))


async def test_a_version_in_the_servers_store_is_selected_by_the_runs_context(cluster: dict) -> None:
    """Aegra's store API scopes every namespace per user, so the version is written to the
    cluster's Postgres store directly, the store the graphs read."""
    from langgraph.store.postgres.aio import AsyncPostgresStore

    async def put(namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
        async with AsyncPostgresStore.from_conn_string(cluster["database"]) as store:
            await store.aput(namespace, key, value, index=False)

    await parity.check_versions(live(cluster), put)


async def test_a_run_cancelled_mid_delegation_is_closed_by_the_next_run(cluster: dict) -> None:
    await parity.check_cancel(live(cluster))


async def test_an_approval_inside_a_server_hosted_task_waits_on_the_tasks_thread(cluster: dict) -> None:
    await parity.check_background_approval(live(cluster))


async def test_the_control_tools_check_update_and_cancel_a_server_hosted_task(cluster: dict) -> None:
    await parity.check_background_control(live(cluster))


async def test_time_travel_forks_and_edits_through_the_sdk(cluster: dict) -> None:
    """As under `langgraph dev`, but for `threads.copy`: Aegra 0.11 has no such endpoint."""
    await parity.check_time_travel(live(cluster), copies=False)
