// Time to the first streamed token after pressing send: the console in chromium
// against the TypeScript client alone in node, on the same hub (the echo agent).
//
//   HUB_URL=http://127.0.0.1:8080 HUB_TOKEN=... bash tools/web.sh latency [ROUNDS]
//
// Prints the median and 90th percentile of both, in milliseconds.
import { createRequire } from "node:module";

import { connect, userText } from "../../clients/ts/src/index.js";

const HUB = process.env.HUB_URL ?? "";
const TOKEN = process.env.HUB_TOKEN ?? "";
const ROUNDS = Number(process.argv[2] ?? 30);
const require = createRequire(new URL("../package.json", import.meta.url));
const { chromium } = require("playwright-core") as typeof import("playwright-core");

function summary(name: string, samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(1);
  return `${name.padEnd(22)} median ${at(0.5)} ms   p90 ${at(0.9)} ms   (${samples.length} turns)`;
}

async function clientAlone(): Promise<number[]> {
  const hub = await connect(HUB, TOKEN);
  const session = await hub.openSession({ nodeId: "local" });
  const watch = hub.watch(session.id);
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const started = performance.now();
    await hub.runTurn({ sessionId: session.id, input: userText(`ping ${i}`) });
    let first = 0;
    for (;;) {
      const { value } = await watch.next();
      if (!value) throw new Error("the watch ended");
      if (first === 0 && value.event.payload.case === "messageDelta") first = performance.now() - started;
      if (value.event.payload.case === "turnEnded") break;
    }
    samples.push(first);
  }
  watch.close();
  hub.close();
  return samples;
}

async function console_(): Promise<number[]> {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
  const page = await browser.newPage();
  await page.goto(HUB);
  await page.fill("#token", TOKEN);
  await page.press("#token", "Enter");
  await page.waitForSelector("#new-agent option[value='local']", { state: "attached" });
  await page.click("#new-session");
  await page.waitForSelector("#prompt");
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    await page.fill("#prompt", `ping ${i}`);
    // In the page: the time from the click to the first token's text in the DOM (a mutation).
    const ms = await page.evaluate(
      (n) =>
        new Promise<number>((resolve) => {
          const transcript = document.querySelector("#transcript") as HTMLElement;
          const before = transcript.querySelectorAll(".message.assistant").length;
          let started = 0;
          const observer = new MutationObserver(() => {
            const bubbles = transcript.querySelectorAll(".message.assistant");
            if (bubbles.length > before && (bubbles[bubbles.length - 1].textContent ?? "").includes("echo")) {
              observer.disconnect();
              resolve(performance.now() - started);
            }
          });
          observer.observe(transcript, { subtree: true, childList: true, characterData: true });
          started = performance.now();
          (document.querySelector("#send") as HTMLButtonElement).click();
          void n;
        }),
      i,
    );
    samples.push(ms);
    await page.locator("#cancel").waitFor({ state: "hidden" });
    await page.locator(".message.assistant[data-final]").nth(i).waitFor();
  }
  await browser.close();
  return samples;
}

const alone = await clientAlone();
const web = await console_();
console.log(summary("TypeScript client", alone));
console.log(summary("web console", web));
