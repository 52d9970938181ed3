// Runs one turn on an aophub hub and streams the answer.
//
//   AOPHUB_TOKEN=KEY node dist/main.js --server http://127.0.0.1:8080 -p "hello"
//
// It opens a session on the node (the built-in "local" by default), runs the
// prompt as a turn, prints the answer as it streams, and ends with the session
// id and the cursor of the last event it read. Pass both back (--session ID
// --cursor CURSOR) to run the next turn in the same session, picking up
// exactly after that event. Connection drops while it runs are handled by the
// client: it reconnects and the watch resumes by itself.

import { parseArgs } from "node:util";

import { connect, messageOf, text, userText } from "@aophub/client";

const { values: args } = parseArgs({
  options: {
    server: { type: "string", default: "http://127.0.0.1:8080" },
    node: { type: "string", default: "local" },
    p: { type: "string", default: "hello" },
    session: { type: "string", default: "" },
    cursor: { type: "string", default: "" },
  },
});

async function main(): Promise<void> {
  const token = process.env["AOPHUB_TOKEN"];
  if (!token) throw new Error("set AOPHUB_TOKEN to the hub's access key");
  const stop = AbortSignal.any([AbortSignal.timeout(5 * 60_000), interrupted()]);

  const hub = await connect(args.server, token, { signal: stop });
  try {
    const sessionId = args.session || (await hub.openSession({ nodeId: args.node }, { signal: stop })).id;
    let cursor = args.cursor;
    // Watch first, then run: the turn's first deltas may come before runTurn returns.
    const watch = hub.watch(sessionId, cursor, { signal: stop });
    const turn = await hub.runTurn({ sessionId, input: userText(args.p) }, { signal: stop });
    const shown = new Map<string, string>(); // message id -> the text printed from its deltas
    for await (const { cursor: at, event } of watch) {
      if (at !== "") cursor = at;
      if (event.turnId !== turn.turnId) continue; // earlier turns of the session, replayed
      const { payload } = event;
      if (payload.case === "messageDelta" && payload.value.value.case === "text") {
        const delta = payload.value.value.value;
        shown.set(payload.value.messageId, (shown.get(payload.value.messageId) ?? "") + delta);
        process.stdout.write(delta);
      } else if (messageOf(event)?.role === "assistant") {
        // The complete message is authoritative: print what deltas lost to a
        // reconnect did not show.
        const full = text(messageOf(event));
        const seen = shown.get(messageOf(event)!.id) ?? "";
        process.stdout.write(full.startsWith(seen) ? full.slice(seen.length) : `\n${full}`);
      } else if (payload.case === "turnEnded") {
        process.stdout.write(`\n[turn ${payload.value.stopReason}]\nsession ${sessionId} cursor ${cursor}\n`);
        break;
      }
    }
  } finally {
    hub.close();
  }
}

/** A signal that aborts on Ctrl-C. */
function interrupted(): AbortSignal {
  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort(new Error("interrupted")));
  return controller.signal;
}

main().catch((err: unknown) => {
  console.error("example:", err instanceof Error ? err.message : err);
  process.exit(1);
});
