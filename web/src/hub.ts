// The page's link to the hub: the cookie login, one @aophub/client Client
// (binary AOP over the application WebSocket, Connect-ES for management) and
// the connection state the indicator shows.

import { Client, connect, type WebSocketLike } from "@aophub/client";

/** What GET /api/auth/session and POST /api/auth/login answer. */
export interface Identity {
  authenticated: boolean;
  token_name?: string;
  scopes?: string[];
}

export type Link = "online" | "connecting" | "offline";

/** What a token's scopes let the page show (hidden, not shown broken). */
export interface Abilities {
  /** Open sessions, run turns, answer approvals (scope app or admin). */
  write: boolean;
  /** Manage tokens and settings (admin). */
  admin: boolean;
  /** Browse and change a session's workspace files on its node (the `workspace` add-on, or admin). */
  workspace: boolean;
  /** Open terminals on nodes (the `terminal` add-on, or admin). */
  terminal: boolean;
}

export function abilities(identity: Identity): Abilities {
  const scopes = new Set(identity.scopes ?? []);
  const admin = scopes.has("admin");
  return { write: scopes.has("app") || admin, admin, workspace: admin || scopes.has("workspace"), terminal: admin || scopes.has("terminal") };
}

/** The hub's JSON error message, or the HTTP status. */
async function refusal(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { error?: { message?: string } };
    if (body.error?.message) return body.error.message;
  } catch {
    // not JSON
  }
  return `HTTP ${response.status}`;
}

export async function currentIdentity(): Promise<Identity> {
  const response = await fetch("/api/auth/session", { credentials: "same-origin" });
  if (!response.ok) throw new Error(await refusal(response));
  return (await response.json()) as Identity;
}

/** Logs in with a token: the hub sets its HttpOnly session cookie. A refusal throws with the hub's reason. */
export async function login(token: string): Promise<Identity> {
  const response = await fetch("/api/auth/login", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token }),
    credentials: "same-origin",
  });
  if (response.status === 401) {
    const reason = await refusal(response);
    throw new Error(/expired/i.test(reason) ? `This token has expired. ${reason}` : `The hub refused this token: ${reason}`);
  }
  if (!response.ok) throw new Error(await refusal(response));
  return (await response.json()) as Identity;
}

export async function logout(): Promise<void> {
  await fetch("/api/auth/logout", { method: "POST", credentials: "same-origin" });
}

/** The open client and its connection state; listeners hear every change of state. */
export class HubLink {
  state: Link = "connecting";
  private readonly listeners = new Set<(state: Link) => void>();

  private constructor(readonly client: Client) {}

  /** Connects with the page's session cookie (login first). */
  static async open(): Promise<HubLink> {
    let link: HubLink | undefined;
    const pending: Link[] = [];
    const report = (state: Link) => (link ? link.set(state) : pending.push(state));
    const client = await connect(location.origin, "", {
      cookieLogin: true,
      reconnectMinMs: 250,
      reconnectMaxMs: 4000,
      webSocket: (url) => {
        report("connecting");
        const socket = new WebSocket(url);
        socket.addEventListener("open", () => report("online"));
        socket.addEventListener("close", () => report("offline"));
        return socket as unknown as WebSocketLike;
      },
    });
    link = new HubLink(client);
    link.set(client.connected ? "online" : (pending.at(-1) ?? "connecting"));
    addEventListener("offline", () => link?.set("offline"));
    return link;
  }

  onChange(listener: (state: Link) => void): () => void {
    this.listeners.add(listener);
    listener(this.state);
    return () => this.listeners.delete(listener);
  }

  private set(state: Link): void {
    if (state === this.state) return;
    this.state = state;
    for (const listener of this.listeners) listener(state);
  }

  close(): void {
    this.client.close();
  }
}
