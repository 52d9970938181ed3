// The hub of the conformance scenario: the shared launcher
// (tests/support/conformance_hub.py, clients/conformance/README.md), started
// once per test file with the repository's Python.

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { connect as netConnect, type NetConnectOpts, type Socket } from "node:net";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { nodeWebSocket, type WebSocketFactory } from "../../src/index.js";

/** The line the launcher prints once the hub and its scripted node are ready. */
export interface ConformanceHub {
  url: string;
  token: string;
  node: string;
  max_watches: number;
  max_frame_bytes: number;
}

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");

/** Starts the launcher ($AOPHUB_PYTHON, else .venv/bin/python of the checkout) and reads its ready line. */
export async function startHub(): Promise<{ hub: ConformanceHub; stop: () => Promise<void> }> {
  const python = process.env["AOPHUB_PYTHON"] || join(root, ".venv", "bin", "python");
  if (!existsSync(python)) {
    throw new Error(`no Python with aophub installed at ${python} (run \`make install\`, or set AOPHUB_PYTHON)`);
  }
  const child = spawn(python, ["-m", "tests.support.conformance_hub"], { cwd: root, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const stop = async () => {
    child.stdin.end(); // the launcher stops the hub when its stdin ends
    const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    await exited;
    clearTimeout(killer);
  };
  const lines = createInterface({ input: child.stdout });
  const first = await new Promise<string | undefined>((done) => {
    lines.once("line", done);
    lines.once("close", () => done(undefined));
  });
  lines.close();
  if (first === undefined) {
    await stop();
    throw new Error(`the launcher printed no ready line:\n${stderr}`);
  }
  return { hub: JSON.parse(first) as ConformanceHub, stop };
}

/**
 * Connections the test can cut as a network failure would: it closes the TCP
 * connection under the WebSocket.
 */
export class Cutter {
  dials = 0;
  private sockets: Socket[] = [];

  factory(): Promise<WebSocketFactory> {
    return nodeWebSocket({
      createConnection: (options: NetConnectOpts) => {
        const socket = netConnect(options);
        this.sockets.push(socket);
        this.dials++;
        return socket;
      },
    });
  }

  /** Closes every connection dialled so far and returns how many it closed. */
  cut(): number {
    const closed = this.sockets.length;
    for (const socket of this.sockets) socket.destroy();
    this.sockets = [];
    return closed;
  }
}
