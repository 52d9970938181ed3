// How the client opens a WebSocket: the browser's own WebSocket, or the `ws`
// package in Node (Node 20 has no WebSocket, and browsers' cannot send an
// Authorization header). Both have the standard interface below.

/** The part of the standard WebSocket interface the client uses. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  /** `ws` only: a ping frame, whose pong is reported to `on("pong")`. */
  ping?(): void;
  /** `ws` only: a listener for pongs. */
  on?(event: "pong", listener: () => void): unknown;
  /** `ws` only: drop the TCP connection at once. */
  terminate?(): void;
}

/** What a {@link WebSocketFactory} is asked to open. */
export interface SocketInit {
  /** The access key as `Authorization: Bearer ...`; empty when there is no key. */
  headers: Record<string, string>;
  /** The largest frame to accept from the hub. */
  maxFrameBytes: number;
}

/**
 * Opens one WebSocket to url (ws:// or wss://). The default is {@link nodeWebSocket}
 * in Node and the global WebSocket in browsers; pass your own to use a proxy,
 * custom TLS options, or (in tests) a connection you can cut.
 */
export type WebSocketFactory = (url: string, init: SocketInit) => WebSocketLike;

/** Whether this runs in Node (and not in a browser). */
export function isNode(): boolean {
  const process = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof process?.versions?.node === "string";
}

/**
 * The factory for Node: the `ws` package, with the Authorization header, a
 * receive limit of maxFrameBytes and no compression. `options` go to ws's
 * constructor as they are (for example `createConnection` or `agent`).
 */
export async function nodeWebSocket(options: Record<string, unknown> = {}): Promise<WebSocketFactory> {
  const { WebSocket } = await import("ws");
  return (url, init) =>
    new WebSocket(url, {
      headers: init.headers,
      maxPayload: init.maxFrameBytes,
      perMessageDeflate: false,
      ...options,
    }) as unknown as WebSocketLike;
}

/**
 * The factory for browsers: the global WebSocket. It cannot send headers; the
 * client logs in first (POST /api/auth/login) so that the hub's session cookie
 * authenticates the upgrade.
 */
export function browserWebSocket(): WebSocketFactory {
  const native = (globalThis as { WebSocket?: new (url: string) => WebSocketLike }).WebSocket;
  if (native === undefined) {
    throw new Error("aophub: no WebSocket in this environment: pass ClientOptions.webSocket");
  }
  return (url) => new native(url);
}
