// The agents: online and recently seen nodes with their status, model and stats,
// live from AgentService.WatchAgents (the list, then each node that connects,
// leaves or changes; watched again after a dropped stream), and a Terminal link
// for each online node when the token may open one.

import type { Agent, WatchAgentsResponse } from "@aophub/client/gen/aophub/v1/agent_pb.js";

import { errorText, h, replace } from "./dom.js";
import type { Context } from "./main.js";

function row(agent: Agent, terminals: boolean): HTMLElement {
  const stats = agent.stats;
  const state = !agent.online ? "offline" : agent.busy ? "busy" : "idle";
  return h(
    "li",
    { class: "agent", "data-node": agent.nodeId, "data-state": state },
    h("div", { class: "title" }, agent.hello?.name || agent.nodeId, h("span", { class: `badge ${state}` }, state)),
    h(
      "dl",
      {},
      h("dt", {}, "node"),
      h("dd", {}, agent.nodeId + (agent.builtIn ? " (built in)" : "")),
      h("dt", {}, "model"),
      h("dd", {}, agent.status?.model || "—"),
      h("dt", {}, "sessions"),
      h("dd", {}, `${agent.openSessions} open, ${agent.runningTurns} running`),
      stats ? h("dt", {}, "turns") : null,
      stats ? h("dd", {}, `${stats.turns} turns, ${stats.toolCalls} tool calls, ${stats.totalTokens} tokens`) : null,
      agent.status?.configError ? h("dt", {}, "error") : null,
      agent.status?.configError ? h("dd", { class: "error" }, agent.status.configError) : null,
    ),
    terminals && agent.online
      ? h("a", { href: `#/terminal/${encodeURIComponent(agent.nodeId)}`, class: "terminal-link" }, "Terminal")
      : null,
  );
}

/** The list after one message of the feed: the snapshot replaces it, a change replaces or adds one node. */
function apply(agents: Map<string, Agent>, message: WatchAgentsResponse): void {
  const change = message.message;
  if (change.case === "snapshot") {
    agents.clear();
    for (const agent of change.value.agents) agents.set(agent.nodeId, agent);
  } else if (change.case === "changed") {
    agents.set(change.value.nodeId, change.value);
  } else if (change.case === "removedNodeId") {
    agents.delete(change.value);
  }
}

// Waits before watching again after the stream dropped: doubling from the first, up to the last.
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 10_000;
// Connect's codes (Code of @connectrpc/connect) after which watching again cannot help: the
// credentials are gone (revoked, expired, logged out) or do not allow it. Each retry would
// count as a failed login against the hub's throttle.
const UNAUTHENTICATED = 16;
const PERMISSION_DENIED = 7;

function hopeless(err: unknown): boolean {
  const code = err instanceof Error && err.name === "ConnectError" ? (err as Error & { code?: unknown }).code : undefined;
  return code === UNAUTHENTICATED || code === PERMISSION_DENIED;
}

export function agentsView(context: Context): () => void {
  document.title = "aophub: agents";
  const list = h("ul", { class: "agents", id: "agent-list", "aria-label": "Agents", "data-feed": "connecting" });
  const feed = h("span", { class: "feed", id: "agents-feed", role: "status" }, "connecting…");
  replace(context.main, h("section", { class: "page" }, h("h1", {}, "Agents ", feed), list));
  const stop = new AbortController();
  const agents = new Map<string, Agent>();
  // The row shown for each node, with the markup it was made from: a row whose markup did not
  // change stays the same element, so a focused Terminal link keeps its focus while others change.
  const shown = new Map<string, { html: string; element: HTMLElement }>();
  const empty = h("li", { class: "empty" }, "No agent has connected.");

  function render(): void {
    const sorted = [...agents.values()].sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
    const rows: HTMLElement[] = sorted.map((agent) => {
      const fresh = row(agent, context.can.terminal);
      const old = shown.get(agent.nodeId);
      if (old && old.html === fresh.outerHTML) return old.element;
      shown.set(agent.nodeId, { html: fresh.outerHTML, element: fresh });
      return fresh;
    });
    for (const nodeId of shown.keys()) if (!agents.has(nodeId)) shown.delete(nodeId);
    if (rows.length === 0) rows.push(empty);
    for (const child of [...list.children]) if (!rows.includes(child as HTMLElement)) child.remove();
    rows.forEach((element, i) => {
      if (list.children[i] !== element) list.insertBefore(element, list.children[i] ?? null);
    });
  }

  function showFeed(state: "live" | "reconnecting" | "ended"): void {
    list.dataset.feed = state;
    feed.textContent = { live: "live", reconnecting: "reconnecting…", ended: "not live" }[state];
  }

  async function watch(): Promise<void> {
    let wait = RETRY_FIRST_MS;
    while (!stop.signal.aborted) {
      try {
        const stream = context.link.client.management.agents.watchAgents({ includeOffline: true }, { signal: stop.signal });
        for await (const message of stream) {
          apply(agents, message);
          render();
          showFeed("live");
          wait = RETRY_FIRST_MS;
        }
      } catch (err) {
        if (stop.signal.aborted) return;
        if (hopeless(err)) {
          showFeed("ended");
          context.status(`Agents feed ended: ${errorText(err)}`, "error");
          return;
        }
        // Told in the page's status line once per drop; the rows stay as last seen.
        if (list.dataset.feed !== "reconnecting") context.status(`Agents feed interrupted: ${errorText(err)}; reconnecting`, "info");
      }
      if (stop.signal.aborted) return;
      showFeed("reconnecting");
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        stop.signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
      });
      wait = Math.min(wait * 2, RETRY_MAX_MS);
    }
  }

  void watch();
  return () => stop.abort();
}
