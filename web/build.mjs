// Builds the console into the Python package (src/aophub/console), so that the
// hub serves it with no Node installed. The output is deterministic: the same
// sources and lockfile give the same bytes (`make check-web` relies on it).
//
//   node build.mjs            build
//   node build.mjs --report   build, then print each asset's size and the gzipped total
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

await build({
  entryPoints: { app: join(here, "src", "main.ts"), style: join(here, "src", "style.css") },
  outdir: out,
  bundle: true,
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

if (process.argv.includes("--report")) {
  let total = 0;
  for (const name of readdirSync(out).sort()) {
    if (name === "README.md") continue;
    const bytes = readFileSync(join(out, name));
    const gz = gzipSync(bytes, { level: 9 }).byteLength;
    total += gz;
    console.log(`${name.padEnd(12)} ${String(bytes.byteLength).padStart(8)} B  ${String(gz).padStart(7)} B gzipped`);
  }
  console.log(`first load  ${String(total).padStart(18)} B gzipped`);
}
