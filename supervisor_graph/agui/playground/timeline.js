// supervisor-graph playground: the run timeline (SPEC §24), a waterfall of the run's model
// calls ("steps"), delegations and tool calls on one time axis, drawn from the AG-UI
// stream alone with this page's receive times. app.js feeds it: begin() when a run is
// sent, onEvent() for each event, stop() when the stream ends, show() on a thread switch.
// A thread keeps its last run while the page lives; a new run replaces it.
//
// Steps come from STEP_STARTED / STEP_FINISHED (the bridge sends one pair per model call,
// the call's tokens in STEP_FINISHED.metadata.supervisor_graph.usage). A stream without
// them (the Mastra dialect, another server) still gets steps, inferred per agent: one
// starts when the agent starts (RUN_STARTED, SUBAGENT_STARTED) or when the last of its
// open tool calls has its result, and ends with the first event that carries the model
// message it produced (TOOL_CALL_START's parentMessageId, TEXT_MESSAGE_END,
// REASONING_END). Delegations have their tokens from SUBAGENT_FINISHED, the run from
// RUN_FINISHED. A background task is a row from its launch to its outcome (CUSTOM events).
"use strict";

const timeline = (() => {
  const runs = new Map(); // thread id -> its last run
  let shown = null; // the run on screen
  let current = null; // the run the stream feeds
  let ticker = 0;

  const $ = (id) => document.getElementById(id);
  const node = (tag, cls, text) => {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined) n.textContent = text;
    return n;
  };
  const now = () => performance.now();
  const duration = (ms) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`);
  const ours = (metadata) => (metadata && (metadata.supervisor_graph || metadata.mastra)) || {};
  const tokensOf = (usage) => (Array.isArray(usage) && usage.length
    ? usage.reduce((n, u) => n + (u.totalTokens ?? (u.inputTokens || 0) + (u.outputTokens || 0)), 0)
    : null);
  const STATES = { running: "running", done: "", failed: "failed", cancelled: "cancelled", waiting: "waiting" };

  // -- the model: rows (step, delegation, tool, task) nested in the delegation they ran in --

  function row(run, kind, name, parent) {
    const item = { kind, name, label: kind, start: now(), end: null, state: "running", tokens: null, parent, depth: parent ? parent.depth + 1 : 0, children: [], node: null };
    (parent ? parent.children : run.rows).push(item);
    if (run === shown) attach(item);
    return item;
  }

  function end(item, state) {
    if (item.end === null) item.end = now();
    if (item.state === "running") item.state = state;
  }

  function drop(item) {
    const siblings = item.parent ? item.parent.children : current.rows;
    siblings.splice(siblings.indexOf(item), 1);
    if (item.node) item.node.remove();
  }

  function settle(rows, state) {
    for (const item of rows) {
      if (item.end === null) end(item, state);
      settle(item.children, state);
    }
  }

  function agent(run, name, parentRow, openStep) {
    const a = { name, row: parentRow, open: new Set(), steps: 0, step: null, last: null, explicit: false, done: false, seen: now() };
    if (openStep) step(run, a);
    return a;
  }

  function step(run, a) {
    a.steps += 1;
    a.step = row(run, "step", a.name, a.row);
    a.step.label = `step ${a.steps}`;
    if (run === shown) draw(a.step);
  }

  // an event carrying the model message of the agent's step: the model call is over
  function produced(a, messageId) {
    if (a.explicit) return;
    if (a.step) {
      a.step.messageId = messageId;
      end(a.step, "done");
      a.last = a.step;
      a.step = null;
    } else if (messageId && a.last && a.last.messageId === messageId) {
      a.last.end = now(); // more of the same call (text after reasoning, a second tool call)
    }
  }

  function finish(run, state) {
    if (run.end !== null) return;
    settle(run.rows, state);
    run.end = now();
    run.state = state;
    if (run === shown) layout();
  }

  function onEvent(event) {
    const run = current;
    if (!run || run.end !== null) return;
    const a = run.agents.get(event.subagentRunId || "");
    switch (event.type) {
      case "RUN_STARTED":
        run.start = now();
        run.agents.set("", agent(run, $("agent-name").textContent, null, !run.resume));
        if (run === shown) layout();
        break;
      case "STEP_STARTED":
        if (!a) break;
        if (!a.explicit && a.step) { // the inferred step is this one
          a.explicit = true;
          a.step.start = now();
          break;
        }
        a.explicit = true;
        if (a.step) end(a.step, "done");
        step(run, a);
        break;
      case "STEP_FINISHED":
        if (!a || !a.step) break;
        a.step.tokens = tokensOf(ours(event.metadata).usage);
        end(a.step, "done");
        a.last = a.step;
        a.step = null;
        break;
      case "TEXT_MESSAGE_START":
      case "REASONING_START": {
        // output of a model call that began with no sign (the supervisor answering a
        // background task's outcome): it began after the agent's last event
        const id = String(event.messageId || "").replace(/^reasoning-/, "");
        if (!a || a.step || a.explicit || a.done || (a.last && a.last.messageId === id)) break;
        step(run, a);
        a.step.start = a.seen;
        break;
      }
      case "TEXT_MESSAGE_END":
        if (a) produced(a, event.messageId);
        break;
      case "REASONING_END":
        if (a) produced(a, String(event.messageId || "").replace(/^reasoning-/, ""));
        break;
      case "TOOL_CALL_START": {
        if (!a) break;
        produced(a, event.parentMessageId);
        const delegation = event.toolCallName.startsWith("agent-");
        const call = row(run, delegation ? "delegation" : "tool", delegation ? event.toolCallName.slice(6) : event.toolCallName, a.row);
        call.label = delegation ? "delegation" : "tool";
        call.agent = a;
        a.open.add(event.toolCallId);
        run.calls.set(event.toolCallId, call);
        break;
      }
      case "TOOL_CALL_ARGS": {
        const call = run.calls.get(event.toolCallId);
        if (call) call.args = true; // a resumed run reopens a delegation without arguments
        break;
      }
      case "TOOL_CALL_RESULT": {
        const call = run.calls.get(event.toolCallId);
        if (!call) break;
        const closing = typeof event.content === "string" && event.content.startsWith("[no result:");
        call.end = now();
        if (call.state === "running") call.state = closing ? "cancelled" : "done";
        const owner = call.agent;
        owner.open.delete(event.toolCallId);
        if (!owner.open.size && !owner.explicit && !owner.done && !closing) step(run, owner); // back to the model
        break;
      }
      case "SUBAGENT_STARTED": {
        let call = run.calls.get(event.parentToolCallId);
        if (!call) call = row(run, "delegation", event.name, run.agents.get(event.parentSubagentRunId || "")?.row || null);
        call.name = event.name;
        call.label = "delegation";
        if (run === shown) draw(call);
        const reopened = run.resume && !call.args; // it continues after a pause, not a new model call
        run.agents.set(event.subagentRunId, agent(run, event.name, call, !reopened));
        break;
      }
      case "SUBAGENT_FINISHED":
      case "SUBAGENT_ERROR": {
        if (!a) break;
        const kind = event.outcome && event.outcome.type;
        const state = event.type === "SUBAGENT_ERROR" ? (event.code && event.code.endsWith("CANCELLED") ? "cancelled" : "failed") : kind === "suspended" ? "waiting" : "done";
        const meta = ours(event.metadata);
        const launch = meta.background_task_id !== undefined || meta.backgroundTaskId !== undefined;
        a.done = true;
        if (launch) { // it ends at the launch: no model call of its own here
          if (a.step && !a.step.messageId) { drop(a.step); a.step = null; }
          a.row.label = "background launch";
          if (run === shown) draw(a.row);
        }
        settle(a.row.children, state);
        end(a.row, state);
        a.row.tokens = tokensOf(meta.usage);
        break;
      }
      case "CUSTOM": { // a background task (SPEC §12) from its launch to its outcome; a guard (SPEC §30)
        const task = event.value || {};
        const kind = String(event.name || "").replace("supervisor_graph.", "");
        if (kind === "background-task-started" && a) {
          const item = row(run, "task", task.agent_id || task.agent_key || "task", a.row);
          item.label = "background task";
          if (run === shown) draw(item);
          run.tasks.set(task.task_id, item);
        } else if (kind === "guard" || kind === "tripwire") { // a guardrail's verdict, or its trip (SPEC §30)
          const owner = run.agents.get(task.subagent_run_id || "") || a;
          if (!owner) break;
          const item = row(run, "guard", task.guard || "guard", owner.row);
          item.label = kind === "tripwire" ? `tripwire at ${task.boundary}` : `guard ${task.boundary}: ${task.verdict}`;
          end(item, kind === "tripwire" || task.verdict === "block" || task.verdict === "declined" ? "failed" : "done");
          if (run === shown) draw(item);
        } else if (run.tasks.has(task.task_id)) {
          end(run.tasks.get(task.task_id), kind === "background-task-failed" ? "failed" : "done");
        }
        break;
      }
      case "RUN_FINISHED": {
        const kind = (event.outcome && event.outcome.type) || "success";
        run.tokens = tokensOf(event.usage);
        finish(run, kind === "interrupt" ? "waiting" : kind === "cancelled" ? "cancelled" : "done");
        break;
      }
      case "RUN_ERROR":
        run.tokens = tokensOf(event.usage);
        finish(run, "failed");
        break;
      default:
        break;
    }
    if (a) a.seen = now();
  }

  // -- drawing ---------------------------------------------------------------------

  function attach(item) {
    const list = item.parent ? item.parent.node.querySelector(":scope > ol") : $("timeline");
    list.append(build(item));
    $("timeline-summary").classList.remove("empty");
    layout();
  }

  function build(item) {
    const li = node("li", "tl-row");
    li.dataset.kind = item.kind;
    const line = node("div", "tl-line");
    line.style.setProperty("--depth", item.depth);
    line.append(node("span", "tl-name"), " ", node("span", "tl-kind"), node("span", "tl-meta"));
    const track = node("div", "tl-track");
    track.setAttribute("aria-hidden", "true");
    track.append(node("span", `tl-bar ${item.kind}`));
    li.append(line, track, node("ol", "tl"));
    item.node = li;
    draw(item);
    for (const child of item.children) li.lastChild.append(build(child));
    return li;
  }

  // the row's words (name, kind): they change when a subagent is named
  function draw(item) {
    if (!item.node) return;
    item.node.dataset.name = item.name;
    item.node.querySelector(".tl-name").textContent = item.name;
    item.node.querySelector(".tl-kind").textContent = item.label;
  }

  function place(item, t0, span, t) {
    const li = item.node;
    const stop = item.end ?? t;
    const offset = item.start - t0;
    const bar = li.querySelector(":scope > .tl-track > .tl-bar");
    bar.style.left = `${(offset / span) * 100}%`;
    bar.style.width = `${((stop - item.start) / span) * 100}%`;
    bar.className = `tl-bar ${item.kind} ${item.state}`;
    bar.title = `starts at +${duration(offset)}`;
    const words = [STATES[item.state], duration(stop - item.start)];
    if (item.tokens !== null) words.push(`${item.tokens} tokens`);
    li.querySelector(":scope > .tl-line > .tl-meta").textContent = words.filter(Boolean).join(" · ");
    li.dataset.state = item.state;
    li.dataset.start = Math.round(offset);
    li.dataset.duration = Math.round(stop - item.start);
    if (item.tokens !== null) li.dataset.tokens = item.tokens;
    for (const child of item.children) place(child, t0, span, t);
  }

  function layout() {
    const run = shown;
    if (!run) return;
    if (run.start === null) { // no RUN_STARTED: the request itself failed, or is on its way
      $("timeline-summary").textContent = run.end === null ? "Starting…" : `Run · ${STATES[run.state] || "ended"}`;
      return;
    }
    const t = now();
    const span = Math.max((run.end ?? t) - run.start, 1);
    const words = ["Run", STATES[run.state], duration(span)];
    if (run.tokens !== null) words.push(`${run.tokens} tokens`);
    $("timeline-summary").textContent = words.filter(Boolean).join(" · ");
    $("timeline-axis").hidden = false;
    $("timeline-end").textContent = duration(span);
    for (const item of run.rows) place(item, run.start, span, t);
    if (run.end === null && !ticker) ticker = setInterval(layout, 100); // running bars grow
    if (run.end !== null && ticker) { clearInterval(ticker); ticker = 0; }
  }

  function show(threadId) {
    shown = runs.get(threadId) || null;
    $("timeline").replaceChildren();
    $("timeline-axis").hidden = true;
    $("timeline-summary").classList.toggle("empty", !shown || !shown.rows.length);
    $("timeline-summary").textContent = "No run yet on this thread.";
    if (!shown) return;
    for (const item of shown.rows) $("timeline").append(build(item));
    layout();
  }

  // -- what app.js calls -------------------------------------------------------------

  function begin(threadId, { resume = false } = {}) {
    current = { start: null, end: null, state: "running", tokens: null, resume, rows: [], agents: new Map(), calls: new Map(), tasks: new Map() };
    runs.set(threadId, current);
    show(threadId);
  }

  function stop(state) {
    if (current) finish(current, state);
  }

  // -- the tabs beside it (Delegations | Timeline), arrow keys as the ARIA pattern has --

  const tabs = [...document.querySelectorAll('aside [role="tab"]')];
  const select = (tab) => {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute("aria-controls")).hidden = !on;
    }
  };
  for (const tab of tabs) {
    tab.addEventListener("click", () => select(tab));
    tab.addEventListener("keydown", (event) => {
      const at = tabs.indexOf(tab);
      const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[event.key];
      if (to === undefined) return;
      event.preventDefault();
      const next = tabs[(to + tabs.length) % tabs.length];
      select(next);
      next.focus();
    });
  }

  return { begin, onEvent, stop, show };
})();
