// Builds the console into the Python package (src/aophub/console), so that the
// hub serves it with no Node installed. The output is deterministic: the same
// sources and lockfile give the same bytes (`make check-web` relies on it).
//
//   node build.mjs            build
//   node build.mjs --report   build, then print each asset's size and the gzipped first load
//
// The terminal (xterm.js) is a separate chunk, imported when a terminal opens,
// with its own style sheet (terminal.css): neither is part of the first load.
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "src", "aophub", "console");

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const LAZY_STYLES = ["terminal.css"];

const result = await build({
  entryPoints: {
    app: join(here, "src", "main.ts"),
    style: join(here, "src", "style.css"),
    terminal: join(here, "src", "terminal.css"),
  },
  outdir: out,
  bundle: true,
  splitting: true,
  chunkNames: "[name]-[hash]",
  metafile: true,
  minify: true,
  format: "esm",
  platform: "browser",
  target: ["es2022", "chrome110", "safari16", "firefox110"],
  tsconfig: join(here, "tsconfig.json"),
  // The client's Node-only paths (the `ws` package) are never taken in a browser.
  external: ["ws"],
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
});

// index.html names each asset with a hash of its bytes, so a new build is never mixed with a cached old one.
const hashes = {};
for (const name of ["app.js", "style.css"]) {
  hashes[name] = createHash("sha256").update(readFileSync(join(out, name))).digest("hex").slice(0, 12);
}
const html = readFileSync(join(here, "src", "index.html"), "utf8")
  .replace("{{app.js}}", `app.js?v=${hashes["app.js"]}`)
  .replace("{{style.css}}", `style.css?v=${hashes["style.css"]}`);
writeFileSync(join(out, "index.html"), html);
copyFileSync(join(here, "src", "icon.svg"), join(out, "icon.svg"));
writeFileSync(
  join(out, "README.md"),
  "Built by `make web` from web/ (do not edit): the console the hub serves at /.\n",
);

// What a page load fetches: index.html, its icon, style.css, app.js and the chunks app.js imports
// statically. Chunks imported dynamically (the terminal) and their style sheets come later.
function firstLoad() {
  const files = new Set(["index.html", "icon.svg", "style.css"]);
  const outputs = result.metafile.outputs;
  const visit = (path) => {
    const name = path.split("/").pop();
    if (files.has(name) && name !== "style.css") return;
    files.add(name);
    for (const imported of outputs[path]?.imports ?? []) if (imported.kind === "import-statement") visit(imported.path);
  };
  const app = Object.keys(outputs).find((path) => path.endsWith("/app.js"));
  visit(app);
  return files;
}

if (process.argv.includes("--report")) {
  const first = firstLoad();
  let total = 0;
  for (const name of readdirSync(out).sort()) {
    if (name === "README.md" || name.endsWith(".map")) continue;
    const bytes = readFileSync(join(out, name));
    const gz = gzipSync(bytes, { level: 9 }).byteLength;
    const lazy = !first.has(name) || LAZY_STYLES.includes(name);
    if (!lazy) total += gz;
    const what = lazy ? "  (loaded when used)" : "";
    console.log(`${name.padEnd(24)} ${String(bytes.byteLength).padStart(8)} B  ${String(gz).padStart(7)} B gzipped${what}`);
  }
  console.log(`first load  ${String(total).padStart(30)} B gzipped`);
}
