// The CopilotKit v2 runtime in front of `supervisor-graph serve`: the page talks to this
// process only (same origin), and the runtime forwards each run to the Python server's
// AG-UI endpoint through an `HttpAgent`.
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

import { HttpAgent } from "@ag-ui/client";
import { CopilotRuntime } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";

import { AGENT_ID, RUNTIME_PATH } from "./agent";

const AGENT_URL = process.env.AGENT_URL ?? "http://127.0.0.1:8000/agent";
const HOST = process.env.HOST ?? "127.0.0.1";
const PORT = Number(process.env.PORT ?? 3000);
// The built page sits beside this file once bundled (dist/server.mjs, dist/page/).
const PAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), "page");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
  ".ttf": "font/ttf",
};

const runtime = new CopilotRuntime({
  agents: { [AGENT_ID]: new HttpAgent({ url: AGENT_URL }) },
});
const copilotkit = createCopilotNodeListener({ runtime, basePath: RUNTIME_PATH });

async function page(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? "/", "http://localhost").pathname;
  const file = normalize(path === "/" ? "/index.html" : path);
  if (file.includes("..")) {
    res.writeHead(400).end();
    return;
  }
  try {
    const body = await readFile(join(PAGE_DIR, file));
    const type = TYPES[file.slice(file.lastIndexOf("."))] ?? "application/octet-stream";
    res.writeHead(200, { "content-type": type, "cache-control": "no-store" }).end(body);
  } catch {
    res.writeHead(404, { "content-type": "text/plain" }).end("not found");
  }
}

const server = createServer((req, res) => {
  const path = (req.url ?? "/").split("?")[0];
  if (path === "/health") {
    res.writeHead(200, { "content-type": "text/plain" }).end("ok");
  } else if (path === RUNTIME_PATH || path.startsWith(`${RUNTIME_PATH}/`)) {
    void copilotkit(req, res);
  } else {
    void page(req, res);
  }
});

server.listen(PORT, HOST, () => {
  const { port } = server.address() as AddressInfo;
  // One line a script can wait for (PORT=0 picks a free port).
  console.log(`copilotkit example on http://${HOST}:${port}/ (runtime ${RUNTIME_PATH}, agent ${AGENT_ID} -> ${AGENT_URL})`);
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections(); // streams left open would hold close() up
  });
}
