// Mastra contender for the supervisor-graph benchmark (see README.md beside this file).
//
// Run from the folder that holds node_modules (the packages of package.json beside this file):
//   node /path/to/bench/mastra/bench.mjs --ns 1,5 --runs 40 --warmup 10 [--kinds memory,sqlite] [--workdir DIR]
// Prints ONE JSON object on stdout; everything else goes to stderr.

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const INSTRUCTIONS = "Delegate each part of the task to a worker, one at a time, then answer.";
const WORKER_DESCRIPTION = "Worker";
const WORKER_INSTRUCTIONS = "Do the task.";
const PROMPT = "do it";
const WORKER_ANSWER = "result";
const FINAL_ANSWER = "done";
const RESOURCE = "bench";

// ---------------------------------------------------------------- arguments

function parseArgs(argv) {
  const opts = { ns: [1, 5], runs: 40, warmup: 10, kinds: ["memory", "sqlite"], workdir: null, modules: process.cwd() };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [key, inline] = a.startsWith("--") && a.includes("=") ? a.split(/=(.*)/s, 2) : [a, undefined];
    const value = () => (inline !== undefined ? inline : argv[++i]);
    switch (key) {
      case "--ns": opts.ns = value().split(",").map((s) => parseInt(s, 10)); break;
      case "--runs": opts.runs = parseInt(value(), 10); break;
      case "--warmup": opts.warmup = parseInt(value(), 10); break;
      case "--kinds": opts.kinds = value().split(",").map((s) => s.trim()).filter(Boolean); break;
      case "--workdir": opts.workdir = value(); break;
      case "--modules": opts.modules = value(); break; // folder holding node_modules (default: cwd)
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  for (const k of opts.kinds) if (k !== "memory" && k !== "sqlite") throw new Error(`unknown kind ${k}`);
  if (opts.ns.some((n) => !Number.isInteger(n) || n < 1)) throw new Error("--ns wants positive integers");
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const log = (...args) => console.error("[mastra-bench]", ...args);

// ------------------------------------------- resolve packages from --modules (cwd)

// The script may live outside the install folder, so bare imports would resolve next to the
// script. Resolve each package's ESM entry ("import" condition of its exports map) by hand.
function packageDir(pkg) {
  let dir = opts.modules;
  for (;;) {
    const candidate = join(dir, "node_modules", pkg);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find ${pkg} in node_modules above ${opts.modules}; run from the install folder`);
    dir = parent;
  }
}

function pickTarget(entry) {
  if (typeof entry === "string") return entry;
  if (Array.isArray(entry)) return pickTarget(entry[0]);
  for (const cond of ["node", "import", "default"]) if (entry && entry[cond] !== undefined) return pickTarget(entry[cond]);
  throw new Error(`no import target in ${JSON.stringify(entry)}`);
}

function packageJson(pkg) {
  return JSON.parse(readFileSync(join(packageDir(pkg), "package.json"), "utf8"));
}

async function importFrom(pkg, subpath = ".") {
  const dir = packageDir(pkg);
  const pj = packageJson(pkg);
  let target;
  if (pj.exports) {
    const exp = typeof pj.exports === "string" || !Object.keys(pj.exports).some((k) => k.startsWith("."))
      ? { ".": pj.exports }
      : pj.exports;
    if (exp[subpath] === undefined) throw new Error(`${pkg} does not export ${subpath}`);
    target = pickTarget(exp[subpath]);
  } else {
    target = subpath === "." ? pj.module || pj.main || "index.js" : subpath;
  }
  return import(pathToFileURL(join(dir, target)).href);
}

const { Agent } = await importFrom("@mastra/core", "./agent");
const { InMemoryStore } = await importFrom("@mastra/core", "./storage");
const { MockLanguageModelV4 } = await importFrom("ai", "./test");
let Memory = null;
let LibSQLStore = null;
try {
  ({ Memory } = await importFrom("@mastra/memory"));
} catch (e) {
  log("no @mastra/memory:", e.message);
}
if (opts.kinds.includes("sqlite")) ({ LibSQLStore } = await importFrom("@mastra/libsql"));

// ---------------------------------------------------------------- scripted models

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
let idCounter = 0;
const nextId = (p) => `${p}-${++idCounter}`;

function textContent(text) {
  return { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: "stop" } };
}

function toolCallContent(toolName, args) {
  return {
    content: [{ type: "tool-call", toolCallId: nextId("call"), toolName, input: JSON.stringify(args) }],
    finishReason: { unified: "tool-calls", raw: "tool_calls" },
  };
}

function generateResult({ content, finishReason }) {
  return { content, finishReason, usage: USAGE, warnings: [], response: { id: nextId("resp"), modelId: "scripted", timestamp: new Date(0) } };
}

function streamResult({ content, finishReason }) {
  const parts = [{ type: "stream-start", warnings: [] }, { type: "response-metadata", id: nextId("resp"), modelId: "scripted", timestamp: new Date(0) }];
  for (const c of content) {
    if (c.type === "text") {
      const id = nextId("text");
      parts.push({ type: "text-start", id }, { type: "text-delta", id, delta: c.text }, { type: "text-end", id });
    } else {
      parts.push(c);
    }
  }
  parts.push({ type: "finish", finishReason, usage: USAGE });
  const stream = new ReadableStream({
    start(controller) {
      for (const p of parts) controller.enqueue(p);
      controller.close();
    },
  });
  return { stream };
}

/** A mock model of ai/test driven by `policy(prompt)`; counts its calls whichever method is used. */
function scriptedModel(name, policy) {
  const counter = { calls: 0, generate: 0, stream: 0 };
  const model = new MockLanguageModelV4({
    provider: "scripted",
    modelId: name,
    doGenerate: async (options) => {
      counter.calls++;
      counter.generate++;
      return generateResult(policy(options.prompt));
    },
    doStream: async (options) => {
      counter.calls++;
      counter.stream++;
      return streamResult(policy(options.prompt));
    },
  });
  const forget = () => {
    model.doGenerateCalls.length = 0; // the mock keeps every call's options
    model.doStreamCalls.length = 0;
  };
  return { model, counter, forget };
}

/** Messages after the last user message: the current turn. */
function thisTurn(prompt) {
  for (let i = prompt.length - 1; i >= 0; i--) if (prompt[i].role === "user") return prompt.slice(i + 1);
  return prompt;
}

function countToolResults(messages) {
  let n = 0;
  for (const m of messages) {
    if (m.role !== "tool" || !Array.isArray(m.content)) continue;
    for (const part of m.content) if (part.type === "tool-result") n++;
  }
  return n;
}

function delegationPolicy(n) {
  return (prompt) => {
    const done = countToolResults(thisTurn(prompt));
    return done < n ? toolCallContent(`agent-worker_${done}`, { prompt: PROMPT }) : textContent(FINAL_ANSWER);
  };
}

const workerPolicy = () => textContent(WORKER_ANSWER);

// ---------------------------------------------------------------- contender

async function build(n, kind, workdir) {
  const supervisor = scriptedModel("supervisor", delegationPolicy(n));
  const workers = Array.from({ length: n }, (_, i) => scriptedModel(`worker_${i}`, workerPolicy));
  let storage;
  let file = null;
  if (kind === "memory") {
    storage = new InMemoryStore();
  } else {
    file = join(workdir, `mastra-${n}.db`);
    for (const suffix of ["", "-wal", "-shm"]) rmSync(file + suffix, { force: true });
    storage = new LibSQLStore({ id: `bench-${n}`, url: `file:${file}` });
  }
  if (!Memory) throw new Error("@mastra/memory is needed for the storage kinds");
  const memory = new Memory({ storage });
  const agents = {};
  workers.forEach((w, i) => {
    agents[`worker_${i}`] = new Agent({
      id: `worker-${i}`,
      name: `worker_${i}`,
      description: WORKER_DESCRIPTION,
      instructions: WORKER_INSTRUCTIONS,
      model: w.model,
    });
  });
  const agent = new Agent({
    id: "parent",
    name: "parent",
    instructions: INSTRUCTIONS,
    model: supervisor.model,
    agents, // Mastra's own subagent mechanism: each becomes a tool `agent-<key>`
    memory,
  });
  let runNo = 0;
  const run = async () => {
    const s0 = supervisor.counter.calls;
    const w0 = workers.reduce((a, w) => a + w.counter.calls, 0);
    const thread = `t-${kind}-${n}-${++runNo}`;
    const result = await agent.generate(PROMPT, { memory: { thread, resource: RESOURCE }, maxSteps: n + 1 });
    const s = supervisor.counter.calls - s0;
    const w = workers.reduce((a, x) => a + x.counter.calls, 0) - w0;
    if (s !== n + 1 || w !== n || result.text !== FINAL_ANSWER) {
      throw new Error(
        `check failed (n=${n}, kind=${kind}, thread=${thread}): supervisor calls ${s} (want ${n + 1}), worker calls ${w} (want ${n}), text ${JSON.stringify(result.text)} (want ${JSON.stringify(FINAL_ANSWER)}), finishReason ${result.finishReason}`,
      );
    }
    supervisor.forget();
    for (const x of workers) x.forget();
    return result;
  };
  const close = async () => {
    if (typeof storage.close === "function") await storage.close();
    if (file) for (const suffix of ["", "-wal", "-shm"]) rmSync(file + suffix, { force: true });
  };
  return { run, close, supervisor, workers };
}

// ---------------------------------------------------------------- baseline

// What a run's model calls cost in Node with no framework: 3 raw calls of the same mock class
// (supervisor tool call, worker answer, supervisor final answer: the calls of an N=1 run), made
// through the method Mastra was seen to use in the cells (doGenerate with @mastra/core 1.71; a
// doStream stream is read to the end); the other method is timed too, for the notes only.
async function rawCalls(method) {
  const supervisor = scriptedModel("supervisor", delegationPolicy(1));
  const worker = scriptedModel("worker_0", workerPolicy);
  const user = { role: "user", content: [{ type: "text", text: PROMPT }] };
  const system = { role: "system", content: INSTRUCTIONS };
  const call = async (m, prompt) => {
    const res = await m.model[method]({ prompt });
    if (method === "doStream") {
      const reader = res.stream.getReader();
      while (!(await reader.read()).done);
    }
    return res;
  };
  return async () => {
    await call(supervisor, [system, user]);
    await call(worker, [{ role: "system", content: WORKER_INSTRUCTIONS }, user]);
    await call(supervisor, [
      system,
      user,
      { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "agent-worker_0", input: { prompt: PROMPT } }] },
      { role: "tool", content: [{ type: "tool-result", toolCallId: "c1", toolName: "agent-worker_0", output: { type: "text", value: WORKER_ANSWER } }] },
    ]);
    supervisor.forget();
    worker.forget();
  };
}

async function timeIt(fn, runs, warmup) {
  for (let i = 0; i < warmup; i++) await fn();
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  return samples;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// ---------------------------------------------------------------- main

const ownWorkdir = !opts.workdir;
const workdir = opts.workdir || mkdtempSync(join(tmpdir(), "mastra-bench-"));
mkdirSync(workdir, { recursive: true });

const cells = {};
const methods = {};
const notes = [];
try {
  for (const kind of opts.kinds) {
    cells[kind] = {};
    for (const n of opts.ns) {
      const c = await build(n, kind, workdir);
      try {
        await c.run(); // first run: lazy init (storage tables, tool conversion), not timed
        const samples = await timeIt(c.run, opts.runs, opts.warmup);
        cells[kind][String(n)] = samples;
        methods[kind] = {
          generate: c.supervisor.counter.generate + c.workers.reduce((a, w) => a + w.counter.generate, 0),
          stream: c.supervisor.counter.stream + c.workers.reduce((a, w) => a + w.counter.stream, 0),
        };
        log(`${kind} n=${n}: median ${median(samples).toFixed(3)} ms over ${samples.length} runs`);
      } finally {
        await c.close();
      }
    }
  }
  const used = Object.values(methods);
  const viaStream = used.length > 0 && used.every((m) => m.stream > 0 && m.generate === 0);
  const viaGenerate = used.length > 0 && used.every((m) => m.generate > 0 && m.stream === 0);
  const baselineMethod = viaGenerate ? "doGenerate" : "doStream";
  const baseline = await timeIt(await rawCalls(baselineMethod), Math.max(opts.runs, 200), Math.max(opts.warmup, 50));
  const other = baselineMethod === "doStream" ? "doGenerate" : "doStream";
  const otherBaseline = await timeIt(await rawCalls(other), Math.max(opts.runs, 200), Math.max(opts.warmup, 50));
  log(`baseline (3 raw ${baselineMethod} calls): median ${median(baseline).toFixed(4)} ms; ${other}: ${median(otherBaseline).toFixed(4)} ms`);
  notes.push(
    `Mastra Agent with agents:{worker_i} (subagent tools named agent-worker_<i>, input {prompt}); one agent.generate("${PROMPT}", {memory:{thread: fresh per run, resource:"${RESOURCE}"}, maxSteps:N+1}) per sample.`,
    `memory = @mastra/memory Memory on @mastra/core InMemoryStore; sqlite = Memory on @mastra/libsql LibSQLStore (file: URL in ${ownWorkdir ? "a temp dir" : workdir}).`,
    `Models: ai/test MockLanguageModelV4 (spec v4); Mastra called them via ${viaStream ? "doStream" : viaGenerate ? "doGenerate" : JSON.stringify(methods)}.`,
    `baseline_ms: 3 raw ${baselineMethod} calls of MockLanguageModelV4 per sample (supervisor tool call, worker answer, supervisor final answer; a doStream stream is read to the end); median ${median(baseline).toFixed(4)} ms; the same 3 calls by ${other}: median ${median(otherBaseline).toFixed(4)} ms.`,
    `Checked every run: N+1 supervisor calls, N worker calls, text "${FINAL_ANSWER}". One untimed first run per cell plus ${opts.warmup} warm-up runs.`,
    `Node ${process.version}; @mastra/core declares engines node >=22.13 (ran on this Node regardless).`,
  );
  const versions = {
    "@mastra/core": packageJson("@mastra/core").version,
    ai: packageJson("ai").version,
    node: process.version,
  };
  for (const p of ["@mastra/memory", "@mastra/libsql", "zod"]) {
    try {
      versions[p] = packageJson(p).version;
    } catch {}
  }
  process.stdout.write(JSON.stringify({ versions, cells, baseline_ms: baseline, notes: notes.join(" ") }) + "\n");
} finally {
  if (ownWorkdir) rmSync(workdir, { recursive: true, force: true });
}
