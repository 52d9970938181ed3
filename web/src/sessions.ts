// The sessions list: pages of ListSessions, a title search (on the hub:
// ListSessions.title_contains, asked as typing pauses), the pending-approval
// count, and create (on a chosen agent) / rename / archive / delete.

import type { SessionInfo } from "@aophub/client/gen/aophub/v1/session_pb.js";

import { consoleClientTools } from "./client_tools.js";
import { errorText, h, replace } from "./dom.js";
import type { Context } from "./main.js";

const PAGE = 20;
// How long typing must pause before the search is asked of the hub.
const SEARCH_DELAY_MS = 250;
// The longest title the hub keeps, and so the longest search it takes.
const SEARCH_MAX = 500;

function when(info: SessionInfo): string {
  const seconds = Number(info.updatedAt?.seconds ?? info.createdAt?.seconds ?? 0n);
  return seconds ? new Date(seconds * 1000).toLocaleString() : "";
}

export function sessionsView(context: Context): () => void {
  const { client } = context.link;
  const sessions = client.management.sessions;
  document.title = "aophub: sessions";
  let loaded: SessionInfo[] = [];
  let nextToken = "";
  let showArchived = false;
  let stopped = false;
  // The search the loaded pages answer (page tokens belong to it), and the number of the newest
  // first-page request: an answer asked before it (typing went on) is dropped.
  let query = "";
  let generation = 0;
  let typing: ReturnType<typeof setTimeout> | undefined;

  const list = h("ul", { class: "sessions", id: "session-list", "aria-label": "Sessions" });
  const more = h("button", { class: "ghost", id: "more", hidden: true, onclick: () => void load(false) }, "More");
  const search = h("input", {
    type: "search",
    id: "search",
    placeholder: "Search titles",
    "aria-label": "Search session titles",
    maxlength: String(SEARCH_MAX),
    oninput: () => {
      clearTimeout(typing);
      typing = setTimeout(() => void load(true), SEARCH_DELAY_MS);
    },
  });
  const archived = h("input", {
    type: "checkbox",
    id: "show-archived",
    onchange: () => {
      showArchived = archived.checked;
      void load(true);
    },
  });

  function render(): void {
    replace(list, loaded.length ? loaded.map(row) : h("li", { class: "empty" }, query ? "No title matches." : "No sessions yet."));
    list.dataset.query = query;
    more.hidden = nextToken === "";
  }

  /** The request of a page: the next one of the loaded query, or the first one of the typed search. */
  function pageRequest(fresh: boolean) {
    const titleContains = fresh ? search.value.trim() : query;
    return {
      pageSize: PAGE,
      pageToken: fresh ? "" : nextToken,
      includeArchived: showArchived,
      includeClosed: true,
      titleContains,
    };
  }

  function row(info: SessionInfo): HTMLElement {
    const title = info.title || info.id;
    const actions = context.can.write
      ? h(
          "details",
          { class: "actions" },
          h("summary", { "aria-label": `Actions for ${title}` }, "⋯"),
          h("button", { class: "ghost", onclick: () => rename(info) }, "Rename"),
          h("button", { class: "ghost", onclick: () => void update(info, { archived: !info.archived }) }, info.archived ? "Unarchive" : "Archive"),
          h("button", { class: "ghost danger", onclick: () => void remove(info) }, "Delete"),
        )
      : null;
    return h(
      "li",
      { "data-session": info.id },
      h(
        "a",
        { href: `#/s/${encodeURIComponent(info.id)}`, class: "session" },
        h("span", { class: "title" }, title),
        h(
          "span",
          { class: "meta" },
          info.nodeId,
          info.runningTurnId ? h("span", { class: "badge busy" }, "running") : null,
          info.archived ? h("span", { class: "badge" }, "archived") : null,
          info.closeReason ? h("span", { class: "badge" }, "closed") : null,
          " · ",
          when(info),
        ),
        info.pendingInteractions > 0
          ? h("span", { class: "badge pending", title: "approvals waiting" }, `${info.pendingInteractions} pending`)
          : null,
      ),
      actions,
    );
  }

  async function load(fresh: boolean): Promise<void> {
    const request = pageRequest(fresh);
    const mine = fresh ? ++generation : generation;
    try {
      const page = await sessions.listSessions(request);
      if (stopped || mine !== generation) return;
      query = request.titleContains;
      loaded = fresh ? page.sessions : [...loaded, ...page.sessions];
      nextToken = page.nextPageToken;
      render();
    } catch (err) {
      context.status(`Cannot list sessions: ${errorText(err)}`, "error");
    }
  }

  /** Re-reads the first page, keeping the later pages already loaded (so "More" is not undone). */
  async function refreshFirstPage(): Promise<void> {
    if (loaded.length <= PAGE) return load(true);
    const mine = generation;
    try {
      const page = await sessions.listSessions({ ...pageRequest(false), pageToken: "" });
      if (stopped || mine !== generation) return;
      const first = new Set(page.sessions.map((s) => s.id));
      loaded = [...page.sessions, ...loaded.slice(PAGE).filter((s) => !first.has(s.id))];
      render();
    } catch (err) {
      context.status(`Cannot list sessions: ${errorText(err)}`, "error");
    }
  }

  async function update(info: SessionInfo, change: { title?: string; archived?: boolean }): Promise<void> {
    try {
      await sessions.updateSession({ requestId: crypto.randomUUID(), sessionId: info.id, ...change });
      await load(true);
    } catch (err) {
      context.status(errorText(err), "error");
    }
  }

  function rename(info: SessionInfo): void {
    const item = list.querySelector(`[data-session="${CSS.escape(info.id)}"]`);
    if (!item) return;
    const input = h("input", { value: info.title, "aria-label": "New title", class: "grow" });
    const form = h(
      "form",
      {
        class: "rename",
        onsubmit: (event: Event) => {
          event.preventDefault();
          void update(info, { title: input.value.trim() });
        },
      },
      input,
      h("button", { type: "submit", class: "primary" }, "Save"),
      h("button", { type: "button", class: "ghost", onclick: () => render() }, "Cancel"),
    );
    replace(item, form);
    input.focus();
    input.select();
  }

  async function remove(info: SessionInfo): Promise<void> {
    if (!confirm(`Delete “${info.title || info.id}” and all its events?`)) return;
    try {
      await sessions.deleteSession({ requestId: crypto.randomUUID(), sessionId: info.id });
      context.status("Session deleted.");
      await load(true);
    } catch (err) {
      context.status(errorText(err), "error");
    }
  }

  const create = context.can.write ? newSessionForm(context) : null;
  replace(
    context.main,
    h(
      "section",
      { class: "page" },
      h("h1", {}, "Sessions"),
      create,
      h("div", { class: "toolbar" }, search, h("label", { class: "check" }, archived, "archived")),
      list,
      more,
    ),
  );
  void load(true);
  const refresh = setInterval(() => void refreshFirstPage(), 5000);
  return () => {
    stopped = true;
    clearInterval(refresh);
    clearTimeout(typing);
  };
}

function newSessionForm(context: Context): HTMLElement {
  const { client } = context.link;
  const agent = h("select", { id: "new-agent", "aria-label": "Agent", required: true });
  const title = h("input", { id: "new-title", placeholder: "Title (optional)", "aria-label": "Title", class: "grow" });
  const button = h("button", { type: "submit", class: "primary", id: "new-session" }, "New session");
  client.management.agents
    .listAgents({ includeOffline: false })
    .then(({ agents }) => {
      replace(
        agent,
        agents.map((a) => h("option", { value: a.nodeId }, a.hello?.name ? `${a.hello.name} (${a.nodeId})` : a.nodeId)),
      );
      if (agents.length === 0) replace(agent, h("option", { value: "" }, "no agent online"));
    })
    .catch((err: unknown) => context.status(`Cannot list agents: ${errorText(err)}`, "error"));
  return h(
    "form",
    {
      class: "create",
      onsubmit: (event: Event) => {
        event.preventDefault();
        button.disabled = true;
        client
          .openSession({ nodeId: agent.value, title: title.value.trim(), extensions: [consoleClientTools()] })
          .then((session) => context.go(`#/s/${encodeURIComponent(session.id)}`))
          .catch((err: unknown) => {
            context.status(`Cannot open a session: ${errorText(err)}`, "error");
            button.disabled = false;
          });
      },
    },
    agent,
    title,
    button,
  );
}
