// Builds the example with esbuild (from node_modules: no CDN, no network):
// dist/page/ (the React page) and dist/server.mjs (the CopilotKit runtime).
import { copyFile, mkdir, rm } from "node:fs/promises";

import { build } from "esbuild";

await rm("dist", { recursive: true, force: true });
await mkdir("dist/page", { recursive: true });

await build({
  entryPoints: ["src/page/main.tsx"],
  outdir: "dist/page",
  bundle: true,
  format: "esm",
  jsx: "automatic",
  minify: true,
  // CopilotKit's markdown renderer loads syntax highlighting and diagrams lazily
  // (dynamic imports): as chunks of their own, the page does not load them up front.
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  target: "es2022",
  // KaTeX's fonts (CopilotKit renders math in answers) ship as files beside the CSS.
  loader: { ".woff2": "file", ".woff": "file", ".ttf": "file" },
  assetNames: "fonts/[name]-[hash]",
  // Production React and CopilotKit (no dev-only checks, no inspector bundle).
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "warning",
});
await copyFile("src/page/index.html", "dist/page/index.html");

await build({
  entryPoints: ["src/server.ts"],
  outfile: "dist/server.mjs",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // The runtime's packages load from node_modules as they are.
  packages: "external",
  logLevel: "warning",
});
