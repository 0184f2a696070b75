// supervisor-graph playground: time travel (SPEC §34). Under the Timeline tab, the steps
// of the thread's branch on screen where a run ended (its checkpoints, from
// /_playground/agent/threads/<id>/checkpoints): "Fork from here" shows the conversation
// as it was at that step, and the next message goes with forwardedProps.checkpoint_id.
// A finished delegation's card in the tree has "Edit prompt": the delegation runs again
// with the new prompt (forwardedProps.edit). Either run ends with a MESSAGES_SNAPSHOT of
// the fork's conversation, which becomes the one shown; the branch left stays stored.
// app.js calls props() when it sends a run, snapshot() for that event, list() and
// editable() once a run or a thread is shown, leave() on a thread switch.
"use strict";

const travel = (() => {
  let fork = null; // the step the next message forks from: {id, step}

  // the branch on screen: the newest checkpoint and its parents, oldest first; a person
  // picks among those where a run ended (nothing next), each with the delegations of its turn
  function turns(checkpoints) {
    const byId = new Map(checkpoints.map((c) => [c.id, c]));
    const branch = [];
    for (let c = checkpoints[0]; c; c = byId.get(c.parent)) branch.unshift(c);
    const ends = [];
    let delegations = [];
    for (const c of branch) {
      delegations.push(...c.delegations);
      if (c.next.length || !c.messages.length) continue;
      ends.push({ ...c, turn: delegations });
      delegations = [];
    }
    return ends;
  }

  async function list(threadId) {
    const response = await fetch(`${ENDPOINT}/threads/${encodeURIComponent(threadId)}/checkpoints`);
    const found = response.ok ? (await response.json()).checkpoints : [];
    if (threadId !== app.threadId) return; // another thread was opened meanwhile
    const steps = found.length ? turns(found) : [];
    $("checkpoints").replaceChildren(...steps.map((c, i) => stepItem(c, i === steps.length - 1)));
    $("checkpoints-empty").hidden = steps.length > 0;
  }

  function stepItem(c, latest) {
    const last = (role) => [...c.messages].reverse().find((m) => m.role === role && m.content);
    const asked = last("user");
    const said = last("assistant");
    const item = el("li", { class: "cp", "data-checkpoint": c.id, "data-step": c.step, "aria-current": String(fork !== null && fork.id === c.id) },
      el("div", { class: "cp-line" },
        el("span", { class: "cp-step" }, `step ${c.step}`),
        el("span", { class: "cp-meta" }, new Date(c.created_at).toLocaleTimeString())),
      el("div", { class: "cp-said" }, `${asked ? `“${asked.content}” → ` : ""}${said ? said.content : "…"}`));
    if (c.turn.length) item.append(el("div", { class: "cp-meta" }, `delegated to ${c.turn.map((d) => d.agent_id).join(", ")}`));
    item.append(latest
      ? el("div", { class: "cp-meta" }, "latest")
      : el("button", { type: "button", "aria-label": `Fork from step ${c.step}`, onclick: () => pick(c) }, "Fork from here"));
    return item;
  }

  // the conversation as it was at `c`; the branch on screen stays stored until a message is sent
  function pick(c) {
    if (app.running) return;
    fork = { id: c.id, step: c.step };
    resetRunViews();
    showMessages(c.messages);
    for (const row of $("checkpoints").children) row.setAttribute("aria-current", String(row.dataset.checkpoint === c.id));
    $("fork-text").textContent = `Forking from step ${c.step}: your next message starts a new branch there; the other branch stays stored.`;
    $("fork-banner").hidden = false;
    $("prompt").focus();
  }

  function leave() {
    fork = null;
    $("fork-banner").hidden = true;
    for (const row of $("checkpoints").children) row.setAttribute("aria-current", "false");
  }

  // the run's forwardedProps: a message sent after a pick forks; an edit is its own fork
  function props(text, edit) {
    if (edit) {
      leave();
      return { edit };
    }
    if (fork === null || text === null) return {};
    const checkpoint = fork.id;
    leave();
    return { checkpoint_id: checkpoint };
  }

  // MESSAGES_SNAPSHOT (AG-UI messages): the fork's conversation replaces the one shown;
  // the tree keeps the run's live cards
  function snapshot(messages) {
    const names = new Map(); // tool call id -> tool
    const shown = [];
    for (const m of messages) {
      if (m.role === "user") shown.push({ id: m.id, role: "user", content: m.content });
      if (m.role === "assistant") {
        const calls = (m.toolCalls || []).map((c) => {
          names.set(c.id, c.function.name);
          let args = {};
          try { args = JSON.parse(c.function.arguments || "{}"); } catch { /* shown as it was */ }
          return { id: c.id, name: c.function.name, args, agent: app.agents.get(c.function.name) };
        });
        shown.push({ id: m.id, role: "assistant", content: m.content || "", toolCalls: calls });
      }
      if (m.role === "tool") {
        const name = names.get(m.toolCallId) || "tool";
        shown.push({ id: m.id, role: "tool", content: m.content, toolCallId: m.toolCallId, name, agent: app.agents.get(name) });
      }
    }
    showMessages(shown, { cards: false });
  }

  // "Edit prompt" on each finished delegation of the supervisor (a subagent's own
  // delegations and background tasks are not the thread's to rerun)
  function editable() {
    for (const card of document.querySelectorAll("#tree > .sub.done, #tree > .sub.failed")) {
      const call = app.calls.get(card.dataset.call);
      if (card.dataset.background || !call || !call.name.startsWith("agent-") || card.querySelector(".rerun")) continue;
      card.append(rerun(card, call));
    }
  }

  function rerun(card, call) {
    const prompt = el("textarea", { rows: "3", "aria-label": `New prompt for ${card.dataset.subagent}` });
    prompt.value = call.args.prompt || "";
    const open = el("button", { type: "button", class: "edit-prompt" }, "Edit prompt");
    const form = el("form", { hidden: "", "aria-label": `Rerun ${card.dataset.subagent}` }, prompt,
      el("div", { class: "actions" },
        el("button", { type: "submit" }, "Rerun"),
        el("button", { type: "button", onclick: () => { form.hidden = true; open.hidden = false; } }, "Back")));
    open.addEventListener("click", () => { open.hidden = true; form.hidden = false; prompt.focus(); });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!prompt.value.trim() || app.running) return;
      call.args = { ...call.args, prompt: prompt.value }; // the rerun's card shows the new prompt
      resetRunViews();
      run({ edit: { tool_call_id: card.dataset.call, prompt: prompt.value } });
    });
    return el("div", { class: "rerun" }, open, form);
  }

  $("fork-leave").addEventListener("click", () => {
    leave();
    openThread(app.threadId);
  });

  return { editable, leave, list, props, snapshot };
})();
