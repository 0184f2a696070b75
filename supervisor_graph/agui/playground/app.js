// supervisor-graph playground: plain JavaScript, no build step, no request beyond this
// server. It speaks AG-UI to /_playground/agent (subagents attributed) and reads the
// resource's threads from /_playground/agent/threads.
"use strict";

const ENDPOINT = "/_playground/agent";

// Serving safely (SPEC §19): behind `serve --auth-token`, every request to the server
// carries `Authorization: Bearer <token>`. The token comes from `?token=` (then taken out
// of the address bar, as Jupyter does) or is asked for once, on the first 401; it is
// kept in this tab's sessionStorage only.
const TOKEN_KEY = "supervisor-graph-token";
{
  const url = new URL(window.location.href);
  if (url.searchParams.has("token")) {
    sessionStorage.setItem(TOKEN_KEY, url.searchParams.get("token"));
    url.searchParams.delete("token");
    window.history.replaceState(window.history.state, "", url);
  }
  const plainFetch = window.fetch.bind(window);
  const send = (input, init, token) => {
    const headers = new Headers(init.headers || {});
    if (token) headers.set("Authorization", `Bearer ${token}`);
    return plainFetch(input, { ...init, headers });
  };
  let asking = null; // one question, however many requests were refused at once
  const askToken = async (used) => {
    const current = sessionStorage.getItem(TOKEN_KEY);
    if (current && current !== used) return current; // another request got it meanwhile
    const given = (window.prompt("This server needs its access token (supervisor-graph serve --auth-token):") || "").trim();
    if (given) sessionStorage.setItem(TOKEN_KEY, given);
    return given;
  };
  window.fetch = async (input, init = {}) => {
    const used = sessionStorage.getItem(TOKEN_KEY);
    const response = await send(input, init, used);
    if (response.status !== 401) return response;
    if (!asking) asking = askToken(used).finally(() => { asking = null; });
    const token = await asking;
    return token ? send(input, init, token) : response;
  };
}
const $ = (id) => document.getElementById(id);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) node.setAttribute(k, v);
  }
  for (const child of children) node.append(child);
  return node;
};
const uid = (prefix) => `${prefix}-${crypto.randomUUID ? crypto.randomUUID() : Math.random().toString(16).slice(2)}`;

const app = {
  threadId: uid("thread"),
  messages: [], // AG-UI messages of the thread (what RunAgentInput.messages sends)
  running: null, // AbortController of the run in flight
  live: null, // that run's view: {controller, current, nodes (its bubbles), marker}
  assistantNodes: new Map(), // message id -> bubble
  subs: new Map(), // subagent run id -> card
  calls: new Map(), // tool call id -> {name, args}
  agents: new Map(), // delegation tool (`agent-<key>`) -> the subagent's id, as the tree names it
  callers: {}, // interrupt id -> agent path, from a reloaded thread's history (the Mastra dialect's interrupts lack it)
  state: null, // shared state (working memory)
};

function setStatus(text, kind = "") {
  const status = $("status");
  status.textContent = text;
  status.className = kind;
}

function addMessage(role, text, id) {
  const item = el("li", { class: `msg ${role}`, "data-role": role }, text);
  if (id) item.dataset.id = id;
  $("messages").append(item);
  item.scrollIntoView({ block: "end" });
  return item;
}

// -- threads -----------------------------------------------------------------------

async function loadThreads() {
  const response = await fetch(`${ENDPOINT}/threads`);
  if (!response.ok) return;
  const { threads } = await response.json();
  const list = $("threads");
  list.replaceChildren();
  const ids = threads.includes(app.threadId) ? threads : [app.threadId, ...threads];
  for (const id of ids) {
    const button = el("button", { type: "button", "aria-current": String(id === app.threadId), onclick: () => openThread(id) }, id);
    list.append(el("li", {}, button));
  }
}

async function openThread(id) {
  if (app.running) return;
  app.threadId = id;
  resetRunViews();
  timeline.show(id);
  $("messages").replaceChildren();
  app.messages = [];
  travel.leave();
  const response = await fetch(`${ENDPOINT}/threads/${encodeURIComponent(id)}`);
  if (response.ok) {
    const { messages, state, interrupts, callers } = await response.json();
    app.callers = callers || {};
    showMessages(messages);
    showState(state);
    // the thread's pending approvals and suspends: answerable after a reload too
    if (interrupts && interrupts.length) {
      showInterrupts(interrupts);
      setStatus("waiting for you");
    } else {
      setStatus("idle");
    }
  }
  await loadThreads();
  travel.list(id);
}

// a conversation as the history route shapes it, shown and made the one the next run
// sends; `cards`: a delegation gets a card in the tree too (not over a live run's)
function showMessages(messages, { cards = true } = {}) {
  $("messages").replaceChildren();
  app.messages = [];
  for (const m of messages) {
    if (m.role === "tool") {
      if (m.agent) {
        addMessage("tool", `${m.agent} → ${m.content}`).dataset.agent = m.agent;
        if (cards) historyDelegation(m);
      } else {
        addMessage("tool", `${m.name} → ${m.content}`);
      }
      app.messages.push({ id: m.id, role: "tool", toolCallId: m.toolCallId, content: m.content });
    } else {
      for (const c of m.toolCalls || []) {
        app.calls.set(c.id, { name: c.name, args: c.args || {} });
        if (c.agent) app.agents.set(c.name, c.agent);
      }
      // a background task's outcome notice: a user message the history marks as one
      if (m.content) addMessage(m.backgroundTask ? "notice" : m.role, m.content, m.id);
      const entry = { id: m.id, role: m.role, content: m.content };
      if (m.toolCalls && m.toolCalls.length) {
        entry.toolCalls = m.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.args) } }));
      }
      app.messages.push(entry);
    }
  }
  if (cards) travel.editable();
}

function resetRunViews() {
  $("pending").replaceChildren();
  $("tree").replaceChildren(el("p", { class: "empty" }, "No delegation yet."));
  app.subs.clear();
  app.assistantNodes.clear();
}

// -- shared state (working memory) ---------------------------------------------------

function showState(state) {
  app.state = state;
  const panel = $("memory-panel");
  if (state === null || state === undefined) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  $("memory").textContent = typeof state.working_memory === "string" ? state.working_memory : JSON.stringify(state, null, 2);
}

function applyPatch(document, operations) {
  let doc = JSON.parse(JSON.stringify(document ?? {}));
  for (const op of operations) {
    const path = op.path.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
    if (path.length === 0) {
      doc = op.op === "remove" ? {} : op.value;
      continue;
    }
    let parent = doc;
    for (const key of path.slice(0, -1)) parent = parent[key] ?? (parent[key] = {});
    const last = path[path.length - 1];
    if (op.op === "remove") Array.isArray(parent) ? parent.splice(Number(last), 1) : delete parent[last];
    else if (Array.isArray(parent) && op.op === "add") parent.splice(last === "-" ? parent.length : Number(last), 0, op.value);
    else parent[last] = op.value;
  }
  return doc;
}

// -- the delegation tree -----------------------------------------------------------

function subCard(event) {
  // a delegation resumed after an approval or a suspend is announced again, under the
  // same subagentRunId (subagents.py): its card goes back to work, so no stale
  // "waiting" card stays beside the finished one
  let again = app.subs.get(event.subagentRunId);
  if (!again && event.parentToolCallId) { // the same delegation (its tool call), were its id to change
    const [id, card] = [...app.subs].find(([, c]) => c.classList.contains("waiting") && c.dataset.call === event.parentToolCallId) || [];
    if (card) { app.subs.delete(id); again = card; }
  }
  if (again) {
    again.classList.remove("waiting", "done", "failed");
    again.classList.add("running");
    again.querySelector(".state").textContent = "working…";
    again.started = performance.now();
    again.dataset.run = event.subagentRunId;
    app.subs.set(event.subagentRunId, again);
    return;
  }
  const call = app.calls.get(event.parentToolCallId) || {};
  const card = el(
    "div",
    { class: "sub running", "data-subagent": event.name, "data-run": event.subagentRunId, "data-call": event.parentToolCallId, role: "group", "aria-label": `Subagent ${event.name}` },
    el("header", {}, el("span", { class: "name" }, event.name), el("span", { class: "state" }, "working…")),
    el("div", { class: "prompt" }, call.args && call.args.prompt ? `“${call.args.prompt}”` : ""),
    el("div", { class: "text" }),
    el("div", { class: "meta" }),
  );
  card.started = performance.now();
  const parent = event.parentSubagentRunId && app.subs.get(event.parentSubagentRunId);
  const tree = $("tree");
  tree.querySelector(".empty")?.remove();
  (parent || tree).append(card);
  app.subs.set(event.subagentRunId, card);
}

// a delegation in a reloaded thread: named after its subagent, as the live view names
// it (the history says which one its `agent-<key>` tool calls), with a card in the tree
function historyDelegation(m) {
  subCard({ name: m.agent, subagentRunId: `history:${m.toolCallId}`, parentToolCallId: m.toolCallId });
  const card = app.subs.get(`history:${m.toolCallId}`);
  const state = m.status === "error" ? "failed" : "done";
  card.classList.replace("running", state);
  card.querySelector(".state").textContent = state;
  card.querySelector(".text").textContent = m.content;
}

// a background task: a card in the tree while it runs, then its outcome (and the
// notice the supervisor answers, in the transcript)
function backgroundTask(event) {
  const kind = (event.name || "").replace("supervisor_graph.", "");
  const task = event.value || {};
  const id = `bg:${task.task_id}`;
  if (kind === "background-task-started") {
    // the delegation that launched the task has a card already (SUBAGENT_STARTED): it
    // becomes the task's card, so its end at the run's close no longer applies
    const launched = [...app.subs].find(([, card]) => card.dataset.call === task.tool_call_id && !card.dataset.background);
    if (launched) {
      app.subs.delete(launched[0]);
      app.subs.set(id, launched[1]);
    } else {
      subCard({ name: task.agent_id || task.agent_key, subagentRunId: id, parentToolCallId: task.tool_call_id });
    }
    const card = app.subs.get(id);
    card.dataset.run = id;
    card.dataset.background = task.task_id;
    card.querySelector(".name").textContent = `${task.agent_id || task.agent_key} (background)`;
  } else if (kind === "background-task-completed" || kind === "background-task-failed") {
    const done = kind === "background-task-completed";
    const status = task.status || (done ? "completed" : "failed");
    finishSub(id, done ? "done" : "failed", `${status}, answered`);
    const text = app.subs.get(id)?.querySelector(".text");
    if (text && !text.textContent && task.result_text) text.textContent = task.result_text;
    const notice = `[Background task ${task.task_id} ${status.replace("_", " ")}]${task.result_text ? `\n${task.result_text}` : ""}`;
    addMessage("notice", notice);
  }
}

function finishSub(id, state, label, usage) {
  const card = app.subs.get(id);
  if (!card) return;
  card.classList.remove("running");
  card.classList.add(state);
  const seconds = ((performance.now() - card.started) / 1000).toFixed(1);
  card.querySelector(".state").textContent = `${label} · ${seconds}s`;
  if (usage && usage.length) {
    const tokens = usage.reduce((n, u) => n + (u.totalTokens || 0), 0);
    card.querySelector(".meta").textContent = `${tokens} tokens (${usage.map((u) => u.model).join(", ")})`;
  }
}

// -- approvals and suspended tools ---------------------------------------------------

function showInterrupts(interrupts) {
  const box = $("pending");
  box.replaceChildren();
  const answers = new Map();
  const submitIfDone = () => {
    if (answers.size === interrupts.length) {
      box.replaceChildren();
      run({ resume: [...answers.values()] });
    }
  };
  for (const item of interrupts) {
    const meta = (item.metadata && (item.metadata.supervisor_graph || item.metadata.mastra)) || {};
    const tool = meta.tool_name || meta.toolName || "tool";
    if (item.reason && item.reason.endsWith("tool_suspend")) {
      box.append(suspendForm(item, tool, meta, (payload) => {
        answers.set(item.id, { interruptId: item.id, status: "resolved", payload });
        submitIfDone();
      }));
      continue;
    }
    box.append(approvalCard(item, tool, meta, (payload) => {
      answers.set(item.id, { interruptId: item.id, status: "resolved", payload });
      submitIfDone();
    }));
  }
  app.lastInterrupts = interrupts; // shown again if the server refuses the answers
  box.querySelector("button")?.focus();
}

// Which agent made the call, as the terminal prompt says it (cli/answers.py): the
// interrupt's agent_path (this project's dialect: the agents' ids from the supervisor
// down), else the card of the subagent run it names (attributed subagents, the Mastra
// dialect), else the supervisor, which runs the page's endpoint.
function callerOf(item, meta) {
  const path = meta.agent_path || meta.agentPath || app.callers[item.id];
  const supervisor = $("agent-name").textContent;
  if (Array.isArray(path) && path.length) return { name: String(path[path.length - 1]), parents: path.slice(0, -1).map(String) };
  if (item.subagentRunId) {
    const card = app.subs.get(item.subagentRunId);
    return { name: card ? card.dataset.subagent : null, parents: [supervisor] };
  }
  return { name: supervisor, parents: [] };
}

function callerLine(caller, verb) {
  if (caller.name === null) return el("p", { class: "who" }, `${verb} by a subagent of ${caller.parents.join(" › ")}`);
  const who = el("p", { class: "who" }, `${verb} by `, el("strong", { class: "agent" }, caller.name));
  who.append(caller.parents.length ? `, subagent of ${caller.parents.join(" › ")}` : ", the supervisor");
  return who;
}

// The call's arguments as they read (the terminal's `[a]rgs` does the same): text as
// written, line breaks and all; anything else as JSON.
function argumentList(args) {
  const list = el("dl", { class: "args", hidden: "" });
  for (const [key, value] of Object.entries(args)) {
    const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
    list.append(el("dt", {}, key), el("dd", { "data-arg": key, class: typeof value === "string" ? "text" : "json" }, text));
  }
  if (!list.children.length) list.append(el("dd", { class: "empty" }, "(no arguments)"));
  return list;
}

// An approval (SPEC §29): Approve, Edit (a form built from the tool's input schema,
// prefilled with the call's arguments) and Reject (a reason the agent sees), as the
// tool allows; `done(payload)` gets the decision in the one resume shape.
function approvalCard(item, tool, meta, done) {
  const allowed = meta.allowed_decisions || meta.allowedDecisions || ["approve", "reject"];
  const caller = callerOf(item, meta);
  const args = argumentList(meta.args || {});
  const card = el("div", { class: "card approval", role: "group", "aria-label": `Approve ${tool}, called by ${caller.name || "a subagent"}`, "data-agent": caller.name },
    el("h3", {}, `${tool} waits for approval`), callerLine(caller, "Called"));
  if (item.message) card.append(el("p", { class: "why" }, item.message));
  const finish = (payload) => { card.remove(); done(payload); };
  const panels = [];
  const open = (panel) => { for (const p of panels) p.hidden = p !== panel || !p.hidden; panel.querySelector("input, select, textarea")?.focus(); };
  const buttons = el("div", { class: "actions" });
  if (allowed.includes("approve")) buttons.append(el("button", { type: "button", class: "approve", onclick: () => finish({ approved: true }) }, "Approve"));
  if (allowed.includes("edit")) {
    const form = editForm(item, tool, meta, (edited) => finish({ approved: true, args: edited }), () => { form.hidden = true; });
    panels.push(form);
    buttons.append(el("button", { type: "button", onclick: () => open(form) }, "Edit"));
  }
  if (allowed.includes("reject")) {
    const reason = el("textarea", { name: "reason", rows: "2", placeholder: "Why not? The agent sees this and can change course." });
    const form = el("form", { class: "reject", hidden: "", "aria-label": `Reject ${tool}` },
      el("label", { class: "field" }, "Reason (optional)", reason),
      el("div", { class: "actions" },
        el("button", { type: "submit", class: "decline" }, "Send rejection"),
        el("button", { type: "button", onclick: () => { form.hidden = true; } }, "Back")));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const message = reason.value.trim();
      finish(message ? { approved: false, message } : { approved: false });
    });
    panels.push(form);
    buttons.append(el("button", { type: "button", class: "decline", onclick: () => open(form) }, "Reject"));
  }
  buttons.append(el("button", { type: "button", "aria-expanded": "false", onclick: (e) => { args.hidden = !args.hidden; e.target.setAttribute("aria-expanded", String(!args.hidden)); } }, "Arguments"));
  card.append(buttons, args, ...panels);
  return card;
}

// A string gets a text area when it has a line break or is long: an <input> drops line
// breaks from its value (HTML's value sanitization), which is how an edited title once
// published an article run together on one line.
const LONG_TEXT = 80;
const multiline = (value) => typeof value === "string" && (/[\r\n]/.test(value) || value.length > LONG_TEXT);

// What a text area gives back, with the original's line breaks: a text area reads (and
// stores) every line break as "\n", so text written with "\r\n" throughout gets them back.
function withBreaksOf(original, text) {
  const crlf = typeof original === "string" && original.includes("\r\n") && !/(^|[^\r])\n/.test(original);
  return crlf ? text.replace(/\r?\n/g, "\r\n") : text;
}

// The edit form: an input per string / number / integer / boolean / enum property of the
// tool's input schema (a text area for multi-line or long text), a JSON box for anything
// else (or for all of it, without a schema). A field left as it was sends the call's
// value exactly as it came, whatever the form control would have made of it.
function editForm(item, tool, meta, done, back) {
  const schema = meta.input_schema || ((item.responseSchema || {}).properties || {}).args || {};
  const current = meta.args || {};
  const properties = schema.properties || {};
  const required = new Set(schema.required || []);
  const names = Object.keys(properties);
  const fields = names.map((name) => {
    const prop = properties[name];
    const given = current[name] !== undefined;
    const value = given ? current[name] : prop.default;
    let input;
    let kind;
    if (prop.enum) {
      kind = "enum";
      input = el("select", { name }, ...prop.enum.map((v) => el("option", { value: JSON.stringify(v) }, String(v))));
      if (value !== undefined) input.value = JSON.stringify(value);
    } else if (prop.type === "boolean") {
      kind = "boolean";
      input = el("input", { name, type: "checkbox" });
      input.checked = Boolean(value);
    } else if (prop.type === "number" || prop.type === "integer") {
      kind = "number";
      input = el("input", { name, type: "number", step: prop.type === "number" ? "any" : null });
      if (value !== undefined && value !== null) input.value = String(value);
    } else if (prop.type === "string" && (value === undefined || value === null || typeof value === "string")) {
      kind = "text";
      const long = multiline(value) || (prop.maxLength || 0) > 200;
      input = long
        ? el("textarea", { name, class: "text", rows: String(Math.min(14, Math.max(4, String(value ?? "").split(/\r\n|\r|\n/).length + 1))) })
        : el("input", { name, type: "text" });
      if (value !== undefined && value !== null) input.value = value;
    } else {
      kind = "json";
      input = el("textarea", { name, rows: "3", class: "json" });
      input.value = value === undefined ? "" : JSON.stringify(value, null, 2);
    }
    // as shown: an untouched field sends `value` itself
    const shown = kind === "boolean" ? input.checked : input.value;
    return { name, prop, kind, input, shown, given, value, error: el("span", { class: "field-error" }) };
  });
  // the arguments the schema does not describe (or all of them), as JSON
  const rest = Object.fromEntries(Object.entries(current).filter(([k]) => !(k in properties)));
  const extra = names.length ? null : { name: "", input: el("textarea", { name: "arguments", rows: "5", class: "json" }), error: el("span", { class: "field-error" }) };
  if (extra) extra.input.value = JSON.stringify(rest, null, 2);
  const extraShown = extra ? extra.input.value : null;
  const form = el("form", { class: "edit", hidden: "", novalidate: "", "aria-label": `Edit ${tool}` },
    ...fields.map((f) => el("label", { class: "field" }, f.prop.title || f.name, f.input, f.error)),
    ...(extra ? [el("label", { class: "field" }, "Arguments (JSON)", extra.input, extra.error)] : []),
    el("div", { class: "actions" },
      el("button", { type: "submit", class: "approve" }, "Run with these arguments"),
      el("button", { type: "button", onclick: back }, "Back")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const edited = names.length ? { ...rest } : {};
    let ok = true;
    const fail = (f, text) => { f.error.textContent = text; ok = false; };
    for (const f of fields) {
      f.error.textContent = "";
      const { prop, input } = f;
      const now = f.kind === "boolean" ? input.checked : input.value;
      if (f.given && now === f.shown) { edited[f.name] = f.value; continue; } // untouched: the call's own value, byte for byte
      if (f.kind === "enum") { edited[f.name] = JSON.parse(now); continue; }
      if (f.kind === "boolean") { edited[f.name] = now; continue; }
      if (f.kind === "json") {
        if (!now.trim()) { if (required.has(f.name)) fail(f, "required"); continue; }
        try { edited[f.name] = JSON.parse(now); } catch (err) { fail(f, "not valid JSON"); }
        continue;
      }
      if (f.kind === "text") {
        if (now === "" && required.has(f.name)) { fail(f, "required"); continue; }
        edited[f.name] = withBreaksOf(f.value, now);
        continue;
      }
      if (now === "") { if (required.has(f.name)) fail(f, "required"); continue; }
      const n = Number(now);
      if (!Number.isFinite(n)) { fail(f, "a number"); continue; }
      if (prop.type === "integer" && !Number.isInteger(n)) { fail(f, "a whole number"); continue; }
      edited[f.name] = n;
    }
    if (extra) {
      extra.error.textContent = "";
      try {
        const parsed = extra.input.value === extraShown ? rest : JSON.parse(extra.input.value || "{}");
        if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not an object");
        Object.assign(edited, parsed);
      } catch (err) { extra.error.textContent = "a JSON object of the arguments"; ok = false; }
    }
    if (ok) done(edited);
  });
  return form;
}

function suspendForm(item, tool, meta, done) {
  const schema = item.responseSchema || { type: "object", properties: {} };
  const properties = schema.properties || {};
  const required = new Set(schema.required || []);
  const fields = Object.entries(properties).map(([name, prop]) => {
    const type = prop.type === "integer" || prop.type === "number" ? "number" : prop.type === "boolean" ? "checkbox" : "text";
    const input = el("input", { name, type, required: required.has(name) ? "" : null, "aria-describedby": `err-${item.id}-${name}` });
    return { name, prop, input, error: el("span", { class: "field-error", id: `err-${item.id}-${name}` }) };
  });
  const form = el("form", { class: "card suspend", "aria-label": `Answer ${tool}`, novalidate: "" },
    el("h3", {}, `${tool} asks: ${item.message || (meta.suspend_payload && meta.suspend_payload.message) || "more information"}`),
    callerLine(callerOf(item, meta), "Asked"),
    ...fields.map((f) => el("label", { class: "field" }, f.prop.title || f.name, f.input, f.error)),
    el("div", { class: "actions" }, el("button", { type: "submit", class: "approve" }, "Continue")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const payload = {};
    let ok = true;
    for (const f of fields) {
      f.error.textContent = "";
      let value = f.input.type === "checkbox" ? f.input.checked : f.input.value;
      if (f.input.type === "number" && value !== "") value = Number(value);
      if (value === "" && required.has(f.name)) { f.error.textContent = "required"; ok = false; continue; }
      if (f.prop.type === "integer" && value !== "" && !Number.isInteger(value)) { f.error.textContent = "a whole number"; ok = false; continue; }
      if (f.prop.enum && !f.prop.enum.includes(value)) { f.error.textContent = `one of ${f.prop.enum.join(", ")}`; ok = false; continue; }
      if (value !== "") payload[f.name] = value;
    }
    if (ok) { form.remove(); done(payload); }
  });
  return form;
}

// -- running -----------------------------------------------------------------------

// `live`: the run the page waits on. A run a newer message stopped (double texting)
// still shows its last events, marked as its own, but not in the newer run's timeline.
function onEvent(event, live) {
  if (live.current) timeline.onEvent(event);
  switch (event.type) {
    case "TEXT_MESSAGE_START":
      if (event.subagentRunId) break;
      app.assistantNodes.set(event.messageId, live.own(addMessage("assistant", "", event.messageId)));
      break;
    case "TEXT_MESSAGE_CONTENT": {
      if (event.subagentRunId) {
        const card = app.subs.get(event.subagentRunId);
        if (card) card.querySelector(".text").textContent += event.delta;
        break;
      }
      const node = app.assistantNodes.get(event.messageId) || live.own(addMessage("assistant", "", event.messageId));
      app.assistantNodes.set(event.messageId, node);
      node.textContent += event.delta;
      node.scrollIntoView({ block: "end" });
      break;
    }
    case "TEXT_MESSAGE_END": {
      const node = app.assistantNodes.get(event.messageId);
      if (node && !event.subagentRunId) app.messages.push({ id: event.messageId, role: "assistant", content: node.textContent });
      break;
    }
    case "TOOL_CALL_START": { // a call reopened (a resume, an edit's rerun) has no arguments again: keep its own
      const known = app.calls.get(event.toolCallId);
      app.calls.set(event.toolCallId, { name: event.toolCallName, args: known ? known.args : {}, raw: "", sub: event.subagentRunId });
      break;
    }
    case "TOOL_CALL_ARGS": {
      const call = app.calls.get(event.toolCallId);
      if (call) { call.raw += event.delta; try { call.args = JSON.parse(call.raw); } catch { /* more to come */ } }
      break;
    }
    case "TOOL_CALL_RESULT": {
      const call = app.calls.get(event.toolCallId);
      if (call && !call.sub && !event.subagentRunId && !call.name.startsWith("agent-")) addMessage("tool", `${call.name} → ${event.content}`);
      break;
    }
    case "SUBAGENT_STARTED": {
      const call = app.calls.get(event.parentToolCallId);
      if (call && !event.parentSubagentRunId) app.agents.set(call.name, event.name);
      subCard(event);
      break;
    }
    case "SUBAGENT_FINISHED": {
      const outcome = event.outcome && event.outcome.type;
      const usage = event.metadata && (event.metadata.supervisor_graph || event.metadata.mastra || {}).usage;
      finishSub(event.subagentRunId, outcome === "suspended" ? "waiting" : "done", outcome === "suspended" ? "waiting" : "done", usage);
      break;
    }
    case "SUBAGENT_ERROR":
      finishSub(event.subagentRunId, "failed", event.code === "CANCELLED" ? "cancelled" : "failed");
      break;
    case "CUSTOM":
      backgroundTask(event);
      break;
    case "STATE_SNAPSHOT":
      showState(event.snapshot);
      break;
    case "STATE_DELTA":
      showState(applyPatch(app.state, event.delta));
      break;
    case "MESSAGES_SNAPSHOT": // a fork's run ends with the fork's conversation (time travel)
      travel.snapshot(event.messages || []);
      break;
    case "RUN_FINISHED": {
      const outcome = event.outcome || { type: "success" };
      if (outcome.type === "interrupt") {
        showInterrupts(outcome.interrupts || []);
        setStatus("waiting for you", "");
      } else {
        setStatus(outcome.type === "cancelled" ? "cancelled" : "done");
      }
      if (event.result !== undefined && event.result !== null) {
        // a typed answer (SPEC §28): the object, formatted
        const item = addMessage("object", "");
        item.append(el("pre", { "data-testid": "answer-object" }, JSON.stringify(event.result, null, 2)));
      }
      break;
    }
    case "RUN_ERROR":
      addMessage("error", `${event.code || "error"}: ${event.message}`);
      setStatus("error", "error");
      if (/INVALID_(TOOL_APPROVAL|RESUME_PAYLOAD)$/.test(event.code || "") && app.lastInterrupts) {
        showInterrupts(app.lastInterrupts); // refused before anything ran: still pending, answer again
        setStatus("waiting for you", "");
      }
      break;
    default:
      break;
  }
}

// -- double texting ------------------------------------------------------------------

// The run a newer message stops gets a marker in the transcript, above that message:
// "stopping" while its stream goes on, then what became of it, from the end of its
// stream (RUN_FINISHED's cancelled outcome: it was stopped; success: it ended first).
const ON_BUSY = "interrupt";

function markStopping(stopped, before) {
  stopped.current = false;
  stopped.marker = el("li", { class: "msg marker", role: "note", "data-state": "stopping", "data-testid": "run-interrupted" },
    "Stopping the run above: a new message interrupts it…");
  before.before(stopped.marker);
}

function markStopped(stopped, how, code) {
  const marker = stopped.marker;
  if (!marker || marker.dataset.state !== "stopping") return;
  if (how === "finished") { // it ended before the stop reached it: nothing was cut
    marker.remove();
    return;
  }
  marker.dataset.state = how;
  for (const node of stopped.nodes) node.classList.add("interrupted");
  marker.textContent = how === "failed"
    ? `The run above ended with an error (${code || "error"}) before your next message could stop it.`
    : ON_BUSY === "rollback"
      ? "Run interrupted by your next message: what it did was discarded."
      : "Run interrupted by your next message: it stopped at its next step; the steps it finished are kept.";
}

async function run({ text = null, resume = null, edit = null } = {}) {
  // a message sent while a run is going stops it and runs next, with its context
  // (double texting, SPEC §29: forwardedProps.on_busy = "interrupt")
  const busy = app.running !== null;
  if (busy && text === null) return;
  const controller = new AbortController();
  const live = { controller, current: true, nodes: [], marker: null, own(node) { this.nodes.push(node); return node; } };
  if (text !== null) {
    const message = { id: uid("user"), role: "user", content: text };
    app.messages.push(message);
    const item = addMessage("user", text, message.id);
    if (busy) markStopping(app.live, item);
  }
  app.running = controller;
  app.live = live;
  $("cancel").disabled = false;
  setStatus("running…", "running");
  timeline.begin(app.threadId, { resume: Boolean(resume) });
  const body = {
    threadId: app.threadId,
    runId: uid("run"),
    messages: edit ? [] : app.messages, // an edit runs a delegation again: nothing new is said
    state: {},
    tools: [],
    context: [],
    forwardedProps: { ...(busy ? { on_busy: ON_BUSY } : {}), ...travel.props(text, edit) },
    ...(resume ? { resume } : {}),
  };
  try {
    const response = await fetch(ENDPOINT, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
        if (!data) continue;
        const event = JSON.parse(data);
        if (live.current) onEvent(event, live);
        // a run a newer message stopped: its events show, its end marks it (not the status)
        else if (event.type === "RUN_FINISHED") {
          const outcome = event.outcome || {};
          markStopped(live, outcome.type === "cancelled" ? "interrupted" : "finished");
          // it paused before the stop reached it: the newer message is refused
          // (INTERRUPT_PENDING) until these are answered, so they show
          if (outcome.type === "interrupt") showInterrupts(outcome.interrupts || []);
        }
        else if (event.type === "RUN_ERROR") markStopped(live, "failed", event.code);
        else if (!event.type.startsWith("RUN_")) onEvent(event, live);
      }
    }
  } catch (error) {
    if (error.name === "AbortError") {
      setStatus("cancelled");
      timeline.stop("cancelled");
      for (const card of app.subs.values()) if (card.classList.contains("running")) finishSub(card.dataset.run, "failed", "cancelled");
    } else if (live.current) {
      addMessage("error", String(error));
      setStatus("error", "error");
      timeline.stop("failed");
    }
  } finally {
    markStopped(live, "interrupted"); // a stopped run's stream that ended with no terminal event
    if (app.running === controller) {
      timeline.stop("cancelled"); // a stream that ended with no terminal event
      app.running = null;
      $("cancel").disabled = true;
      travel.list(app.threadId);
      travel.editable();
    }
    loadThreads();
  }
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("prompt").value.trim();
  if (!text) return;
  $("prompt").value = "";
  resetRunViews();
  run({ text });
});
$("prompt").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
});
$("cancel").addEventListener("click", () => app.running && app.running.abort());
$("new-thread").addEventListener("click", () => {
  if (app.running) return;
  app.threadId = uid("thread");
  app.messages = [];
  $("messages").replaceChildren();
  resetRunViews();
  timeline.show(app.threadId);
  travel.leave();
  travel.list(app.threadId);
  showState(null);
  loadThreads();
  $("prompt").focus();
});
loadThreads();
$("prompt").focus();
