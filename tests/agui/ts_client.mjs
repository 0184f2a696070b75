// Drives the endpoint with the canonical TypeScript client, @ag-ui/client's HttpAgent.
// Usage: node ts_client.mjs <endpoint url>; prints one JSON report on stdout.
import { HttpAgent } from "@ag-ui/client";

const url = process.argv[2];
const report = {};
let counter = 0;

function agent(threadId, initialState) {
  return new HttpAgent({ url, threadId, initialState });
}

function say(a, text) {
  counter += 1;
  a.addMessage({ id: `ts-user-${counter}`, role: "user", content: text });
}

// Runs once and records what the client saw (event types, subagent events, errors).
async function run(a, params = {}) {
  const seen = { types: [], subagents: [], errors: [], finished: null };
  const subscriber = {
    onEvent: ({ event }) => {
      seen.types.push(event.type);
    },
    onSubagentStartedEvent: ({ event }) => {
      seen.subagents.push({ kind: "started", id: event.subagentRunId, name: event.name });
    },
    onSubagentFinishedEvent: ({ event }) => {
      seen.subagents.push({ kind: "finished", id: event.subagentRunId, outcome: event.outcome?.type ?? "success" });
    },
    onRunFinishedEvent: (params) => {
      seen.finished = { outcome: params.outcome, pendingToolCallIds: params.pendingToolCallIds ?? null };
    },
    onRunErrorEvent: ({ event }) => {
      seen.errors.push({ code: event.code, message: event.message });
    },
    onRunFailed: ({ error }) => {
      seen.errors.push({ failed: String(error) });
    },
  };
  try {
    await a.runAgent(params, subscriber);
  } catch (error) {
    seen.errors.push({ thrown: String(error) });
  }
  seen.interrupts = a.pendingInterrupts.map((i) => ({ id: i.id, reason: i.reason, subagentRunId: i.subagentRunId ?? null }));
  seen.lastMessage = a.messages.filter((m) => m.role === "assistant" && !m.subagentRunId && m.content).map((m) => m.content).pop() ?? null;
  return seen;
}

// 1. a plain run
{
  const a = agent("ts-plain");
  say(a, "hello from typescript");
  report.plain = await run(a);
}

// 2. an approval interrupt inside an attributed subagent, then a resume that approves
{
  const a = agent("ts-approve");
  say(a, "pay the invoice");
  report.approvalPaused = await run(a);
  const [pending] = a.pendingInterrupts;
  report.approvalResumed = await run(a, {
    resume: [{ interruptId: pending.id, status: "resolved", payload: { approved: true } }],
  });
}

// 3. the same, but the resume cancels it
{
  const a = agent("ts-cancel");
  say(a, "pay the invoice");
  report.cancelPaused = await run(a);
  const [pending] = a.pendingInterrupts;
  report.cancelResumed = await run(a, { resume: [{ interruptId: pending.id, status: "cancelled" }] });
}

// 4. attributed subagents
{
  const a = agent("ts-research");
  say(a, "research the sky");
  report.research = await run(a);
  report.researchMessages = a.messages.map((m) => ({ role: m.role, subagentRunId: m.subagentRunId ?? null }));
}

// 5. aborting a run mid-way, then the thread goes on
{
  const a = agent("ts-abort");
  say(a, "something slow");
  const running = run(a);
  await new Promise((resolve) => setTimeout(resolve, 500));
  a.abortRun();
  report.aborted = await running;
  say(a, "are you there");
  report.afterAbort = await run(a);
}

// 6. shared state: the client's state goes in, the agent's working-memory update comes back
{
  const a = agent("ts-state", { notes: ["from the client"] });
  say(a, "remember tea");
  report.state = await run(a);
  report.stateAfter = a.state;
}

process.stdout.write(JSON.stringify(report));
