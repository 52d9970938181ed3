// The aophub web console: boot, login, the shell (navigation, connection
// indicator, logout) and the hash router. Views live in their own modules.

import { abilities, currentIdentity, HubLink, type Identity, login, logout } from "./hub.js";
import { errorText, h, replace } from "./dom.js";
import { agentsView } from "./agents.js";
import { chatView } from "./chat.js";
import { filesView } from "./files.js";
import { scanView, scansView } from "./scans.js";
import { sessionsView } from "./sessions.js";
import { settingsView } from "./settings.js";
import { terminalView } from "./terminal.js";

/** What a view gets; it returns a function that stops it (watches, timers). */
export interface Context {
  link: HubLink;
  identity: Identity;
  can: ReturnType<typeof abilities>;
  main: HTMLElement;
  go(hash: string): void;
  status(message: string, kind?: "error" | "info"): void;
}
export type View = (context: Context, argument: string) => () => void;

const root = document.getElementById("app") as HTMLElement;

function loginView(message = ""): void {
  document.title = "aophub: log in";
  const error = h("p", { class: "error", role: "alert", id: "login-error" }, message);
  const input = h("input", {
    id: "token",
    name: "token",
    type: "password",
    autocomplete: "current-password",
    required: true,
    "aria-describedby": "login-error",
  });
  const button = h("button", { type: "submit", class: "primary" }, "Log in");
  const form = h(
    "form",
    {
      class: "login",
      onsubmit: (event: Event) => {
        event.preventDefault();
        button.disabled = true;
        error.textContent = "";
        login(input.value.trim())
          .then((identity) => start(identity))
          .catch((err: unknown) => {
            error.textContent = errorText(err);
            button.disabled = false;
            input.select();
          });
      },
    },
    h("h1", {}, "aophub"),
    h("label", { for: "token" }, "Access key or token"),
    input,
    button,
    error,
    h("p", { class: "hint" }, "The key is printed by ", h("code", {}, "aophub serve"), " and kept in .aophub/access_key."),
  );
  replace(root, h("main", { class: "center" }, form));
  input.focus();
}

async function start(identity: Identity): Promise<void> {
  let link: HubLink;
  try {
    link = await HubLink.open();
  } catch (err) {
    loginView(`Cannot connect to the hub: ${errorText(err)}`);
    return;
  }
  const can = abilities(identity);
  const indicator = h("span", { class: "link", id: "link-state", role: "status", "aria-live": "polite" });
  link.onChange((state) => {
    indicator.dataset.state = state;
    indicator.textContent = { online: "online", connecting: "connecting…", offline: "offline" }[state];
  });
  const toast = h("div", { class: "toast", role: "status", "aria-live": "polite" });
  const main = h("main", { id: "main", tabindex: "-1" });
  const nav = h(
    "nav",
    { "aria-label": "Sections" },
    h("a", { href: "#/sessions", id: "nav-sessions" }, "Sessions"),
    h("a", { href: "#/scans", id: "nav-scans" }, "Scans"),
    h("a", { href: "#/agents", id: "nav-agents" }, "Agents"),
    can.admin ? h("a", { href: "#/settings", id: "nav-settings" }, "Settings") : null,
  );
  const header = h(
    "header",
    {},
    h("a", { href: "#/sessions", class: "brand" }, "aophub"),
    nav,
    indicator,
    h("span", { class: "who", title: (identity.scopes ?? []).join(", ") }, identity.token_name ?? ""),
    h(
      "button",
      {
        id: "logout",
        class: "ghost",
        onclick: () => {
          stop();
          link.close();
          void logout().then(() => loginView());
        },
      },
      "Log out",
    ),
  );
  replace(root, h("a", { href: "#main", class: "skip" }, "Skip to content"), header, main, toast);

  let timer: ReturnType<typeof setTimeout> | undefined;
  const context: Context = {
    link,
    identity,
    can,
    main,
    go: (hash) => (location.hash = hash),
    status: (message, kind = "info") => {
      toast.textContent = message;
      toast.dataset.kind = kind;
      clearTimeout(timer);
      timer = setTimeout(() => (toast.textContent = ""), 6000);
    },
  };
  let stopView = () => {};
  const stop = () => {
    stopView();
    stopView = () => {};
    removeEventListener("hashchange", route);
  };
  function route(): void {
    stopView();
    const [, section = "sessions", argument = ""] = /^#\/([^/]*)\/?(.*)$/.exec(location.hash) ?? [];
    const views: Record<string, View> = { agents: agentsView, scans: scansView };
    if (can.admin) views.settings = settingsView;
    const view: View =
      section === "s" && argument
        ? chatView
        : section === "scan" && argument
          ? scanView
          : section === "files" && argument && can.workspace
            ? filesView
            : section === "terminal" && argument && can.terminal
              ? terminalView
              : (views[section] ?? sessionsView);
    for (const a of nav.querySelectorAll("a")) {
      const current = a.getAttribute("href") === `#/${section === "scan" ? "scans" : section === "s" ? "sessions" : section === "terminal" ? "agents" : section}`;
      a.toggleAttribute("aria-current", current);
    }
    replace(main);
    stopView = view(context, decodeURIComponent(argument));
  }
  addEventListener("hashchange", route);
  route();
}

async function boot(): Promise<void> {
  let identity: Identity;
  try {
    identity = await currentIdentity();
  } catch (err) {
    loginView(`Cannot reach the hub: ${errorText(err)}`);
    return;
  }
  if (identity.authenticated) await start(identity);
  else loginView();
}

void boot();
