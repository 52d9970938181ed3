// A terminal on a node (aop.pty through the hub): a shell the page opens or
// re-attaches to. The PTY session id is kept in sessionStorage, so a reload
// attaches to the same shell; Output.offset says which bytes the screen
// already shows, so a re-attach's snapshot adds only what is new. xterm.js is
// loaded (its own chunk and style sheet) only when this view opens.

import type { TerminalMessage } from "@aophub/client";

import { errorText, h, replace } from "./dom.js";
import type { Context } from "./main.js";
import type { Screen } from "./terminal_screen.js";

const STORAGE_PREFIX = "aophub.terminal.";

/**
 * Which bytes of the session's output the screen shows: [0, end). An output
 * at an absolute offset (aophub nodes) adds only what lies past end; one that
 * starts past end leaves a gap, which is marked. Reference nodes send offset
 * 0 on every output: after the first one of an attachment, such an output
 * continues the stream.
 */
export class OutputCursor {
  end = 0;
  private fresh = true; // no output yet since the last opened/attached

  /** A new attachment: its first output is a snapshot at its own offset. */
  attached(): void {
    this.fresh = true;
  }

  /** The part of data (at offset) not shown yet, and how many bytes were skipped over. */
  take(offset: bigint, data: Uint8Array): { data: Uint8Array; missed: number } {
    let start = Number(offset);
    if (start === 0 && !this.fresh) start = this.end;
    this.fresh = false;
    const missed = this.end > 0 ? Math.max(0, start - this.end) : 0; // a gap after what is shown
    const from = Math.max(0, this.end - start);
    this.end = Math.max(this.end, start + data.byteLength);
    return { data: from >= data.byteLength ? new Uint8Array() : data.subarray(from), missed };
  }
}

export function terminalView(context: Context, nodeId: string): () => void {
  document.title = `aophub: terminal on ${nodeId}`;
  const key = STORAGE_PREFIX + nodeId;
  const state = h("p", { class: "meta", id: "terminal-state", role: "status", "aria-live": "polite" }, "Loading the terminal…");
  const container = h("div", { class: "terminal", id: "terminal", "aria-label": `Terminal on ${nodeId}` });
  const newShell = h("button", { id: "terminal-new", type: "button", onclick: () => start(true) }, "New shell");
  const kill = h("button", { id: "terminal-kill", type: "button", class: "danger", onclick: () => terminal?.kill() }, "End shell");
  replace(
    context.main,
    h(
      "section",
      { class: "page terminal-page" },
      h("h1", {}, `Terminal on ${nodeId}`),
      h("div", { class: "actions" }, newShell, kill),
      state,
      container,
    ),
  );
  const stylesheet = h("link", { rel: "stylesheet", href: "terminal.css" });
  document.head.append(stylesheet);

  let stopped = false;
  let screen: Screen | null = null;
  let terminal: ReturnType<typeof context.link.client.terminal> | null = null;
  let cursor = new OutputCursor();
  const onResize = () => {
    if (screen === null || terminal === null) return;
    const { cols, rows } = screen.fit();
    terminal.resize(cols, rows);
  };

  function onMessage(message: TerminalMessage): void {
    if (stopped || screen === null) return;
    switch (message.case) {
      case "opened":
      case "attached": {
        const session = message.value.session;
        cursor.attached();
        if (session?.id) sessionStorage.setItem(key, session.id);
        container.dataset.session = session?.id ?? "";
        state.textContent = `${message.case === "opened" ? "Opened" : "Attached to"} ${session?.name || "shell"} (${session?.state || "running"}).`;
        break;
      }
      case "output": {
        const { data, missed } = cursor.take(message.value.offset, message.value.data);
        if (missed > 0) screen.write(new TextEncoder().encode(`\r\n[${missed} bytes of output not shown]\r\n`));
        if (data.byteLength > 0) screen.write(data);
        container.dataset.offset = String(cursor.end);
        break;
      }
      case "closed": {
        const session = message.value.session;
        sessionStorage.removeItem(key);
        state.textContent = `The shell ended (${session?.killCause || `exit code ${session?.exitCode ?? 0}`}). Open a new one to go on.`;
        container.dataset.session = "";
        break;
      }
      case "detached":
        state.textContent = "Detached: the node is not connected. It re-attaches when the node is back.";
        break;
      case "error":
        if (/no such session/.test(message.value.message)) {
          sessionStorage.removeItem(key);
          start(true);
          return;
        }
        state.textContent = `Terminal error: ${message.value.message}`;
        context.status(`Terminal: ${message.value.message}`, "error");
        break;
    }
  }

  /** Attaches to the saved session, or opens a new shell (fresh, or nothing saved). */
  function start(fresh: boolean): void {
    if (screen === null) return;
    terminal?.end();
    if (fresh) {
      sessionStorage.removeItem(key);
      screen.dispose();
      screen = mount();
    }
    cursor = new OutputCursor();
    terminal = context.link.client.terminal({ nodeId, onMessage });
    const { cols, rows } = screen.fit();
    const saved = sessionStorage.getItem(key);
    if (saved) terminal.attach(saved, cols, rows);
    else terminal.open({ kind: "shell", cols, rows });
    screen.focus();
  }

  let mount: () => Screen = () => {
    throw new Error("xterm.js is not loaded");
  };
  import("./terminal_screen.js")
    .then(({ mountScreen }) => {
      if (stopped) return;
      mount = () => mountScreen(container, (data) => terminal?.input(data));
      screen = mount();
      start(false);
      addEventListener("resize", onResize);
    })
    .catch((err: unknown) => {
      state.textContent = `Cannot load the terminal: ${errorText(err)}`;
    });

  return () => {
    stopped = true;
    removeEventListener("resize", onResize);
    terminal?.end(); // the shell keeps running; coming back re-attaches
    screen?.dispose();
    stylesheet.remove();
  };
}
