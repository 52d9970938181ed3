// The client of a hub's application WebSocket: requests correlated by
// envelope id, resent with the same id after a reconnect, and watches that
// resume from their last cursor.

import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { anyPack, anyUnpack, type Any } from "@bufbuild/protobuf/wkt";

import { AophubError, ClientClosedError, Code, protocolError, rejectionError } from "./errors.js";
import {
  type CancelTurnRequestSchema,
  type CloseSessionRequestSchema,
  type ListEventsRequestSchema,
  type ListEventsResponse,
  type OpenSessionRequestSchema,
  type Rejection,
  type RunTurnRequestSchema,
  type Session,
  type TurnReceipt,
} from "./gen/aop/chat_pb.js";
import { EnvelopeSchema } from "./gen/aop/envelope_pb.js";
import {
  ErrorSchema as PtyErrorSchema,
  type ProtocolMessage as PtyMessage,
  ProtocolMessageSchema as PtySchema,
} from "./gen/aop/pty/protocol_pb.js";
import { type ProtocolMessage, ProtocolMessageSchema } from "./gen/aop/protocol_pb.js";
import {
  type AnswerInteractionRequestSchema,
  type Interaction,
  InteractionProtocolMessageSchema,
} from "./gen/aophub/v1/interaction_pb.js";
import { type Management, createManagement } from "./management.js";
import { browserWebSocket, isNode, nodeWebSocket, type WebSocketFactory, type WebSocketLike } from "./socket.js";
import { Terminal, type TerminalLink, type TerminalMessage, type TerminalOptions } from "./terminal.js";
import { type Delivery, Watch } from "./watch.js";

/** The hub's default --max-frame-bytes (16 MiB). */
export const DEFAULT_MAX_FRAME_BYTES = 16 << 20;
/** How long a request (or a dial) may take when no timeout is given. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** The bounds of the reconnect backoff. */
export const DEFAULT_RECONNECT_MIN_MS = 500;
export const DEFAULT_RECONNECT_MAX_MS = 10_000;
/** How often an idle connection is pinged (Node only: browsers cannot ping). */
export const DEFAULT_PING_INTERVAL_MS = 30_000;

const APPLICATION_PATH = "/api/aop/application/ws";
const CORE_TYPE_URL = `type.googleapis.com/${ProtocolMessageSchema.typeName}`;
const PTY_TYPE_URL = `type.googleapis.com/${PtySchema.typeName}`;
/** What `ws` reports when the hub sends a frame over maxPayload. */
const WS_TOO_BIG = "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH";

/** Options of {@link connect}. Every field is optional. */
export interface ClientOptions {
  /** The largest frame sent or received; keep it at least the hub's --max-frame-bytes. */
  maxFrameBytes?: number;
  /** Bounds each request and each dial without a timeout of its own; 0: no bound. */
  requestTimeoutMs?: number;
  /**
   * The backoff between dials after the connection drops: it starts at
   * reconnectMinMs, doubles up to reconnectMaxMs, and each wait is jittered to
   * between half and all of it.
   */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** How often the connection is pinged (with `ws`); an unanswered ping drops it. 0: never. */
  pingIntervalMs?: number;
  /** Opens the WebSocket; see {@link WebSocketFactory}. */
  webSocket?: WebSocketFactory;
  /**
   * Authenticate the WebSocket with the hub's session cookie instead of the
   * Authorization header: connect first logs in with the token (POST
   * /api/auth/login, or none with an empty token: the page is logged in
   * already) and sends no header. Browsers need it, since their WebSocket
   * cannot send headers; it is the default there and off in Node.
   */
  cookieLogin?: boolean;
  /** The fetch of the management services and the browser login. */
  fetch?: typeof globalThis.fetch;
  /** Ends connect's first dial early. */
  signal?: AbortSignal;
}

/** Options of one request. */
export interface CallOptions {
  /**
   * The envelope id, which is also the request's idempotency key: sending it
   * again with the same body (after a timeout, or from a restarted program)
   * returns the hub's stored answer instead of running the request twice.
   */
  id?: string;
  /** Ends the wait for the answer (the error is the signal's reason). */
  signal?: AbortSignal;
  /** Bounds this request instead of ClientOptions.requestTimeoutMs; 0: no bound. */
  timeoutMs?: number;
}

/** A running subscription of an extension namespace; see {@link Client.subscribe}. */
export interface Subscription {
  /** Stops it: the hub gets cancel_operation{target_id: its envelope id}. */
  end(): void;
}

interface Subscribed {
  request: () => Any;
  onMessage: (payload: Any, cursor: string) => void;
  gen: number; // the connection its request was last sent on (0: not sent)
}

/** A request waiting for its answer. */
interface Call {
  frame: Uint8Array;
  gen: number; // the connection it was last sent on (0: not sent yet)
  resolve(payload: Any): void;
  reject(err: unknown): void;
}

/**
 * Connects to the hub at url and returns a {@link Client}. url is the hub's
 * base URL (http://host:port, https://...) or the application endpoint itself
 * (ws://host:port/api/aop/application/ws, wss://...). token is the hub's access
 * key or a token; a refused one gives an {@link AophubError} with code
 * UNAUTHENTICATED. In a browser an empty token uses the session cookie the
 * page already has.
 */
export async function connect(url: string, token: string, options: ClientOptions = {}): Promise<Client> {
  const { wsUrl, baseUrl } = endpoints(url);
  const browser = options.webSocket === undefined && !isNode();
  const factory = options.webSocket ?? (browser ? browserWebSocket() : await nodeWebSocket());
  const cookies = options.cookieLogin ?? browser;
  const client = new Client(wsUrl, baseUrl, token, factory, cookies, options);
  if (cookies && token !== "") await client.login(options.signal);
  client.start(await client.dial(options.signal));
  return client;
}

/** Maps a base or endpoint URL to the WebSocket URL and the HTTP base URL. */
export function endpoints(raw: string): { wsUrl: string; baseUrl: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TypeError(`aophub: bad hub URL ${JSON.stringify(raw)}`);
  }
  const secure = { "http:": false, "ws:": false, "https:": true, "wss:": true }[url.protocol];
  if (secure === undefined) {
    throw new TypeError(`aophub: bad hub URL ${JSON.stringify(raw)}: the scheme must be http, https, ws or wss`);
  }
  let path = url.pathname.replace(/\/+$/, "");
  if (path.endsWith(APPLICATION_PATH)) path = path.slice(0, -APPLICATION_PATH.length);
  const host = url.host;
  return {
    wsUrl: `${secure ? "wss" : "ws"}://${host}${path}${APPLICATION_PATH}`,
    baseUrl: `${secure ? "https" : "http"}://${host}${path}`,
  };
}

/** A new envelope id: 16 random bytes in hex. */
export function newId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A duration between half and all of ms, so that clients cut off together do not all come back at once. */
function jitter(ms: number): number {
  return ms / 2 + Math.random() * (ms / 2);
}

/**
 * A connection to a hub's application endpoint that survives disconnects: it
 * redials with backoff, resends the requests still waiting for an answer with
 * their envelope ids (the hub answers a repeated id from its journal, so
 * nothing runs twice), and resumes every watch after the last cursor it
 * received. Make one with {@link connect}.
 */
export class Client {
  /** The hub's management services (Connect-ES clients) with this client's key attached. */
  readonly management: Management;

  private readonly maxFrameBytes: number;
  private readonly requestTimeoutMs: number;
  private readonly reconnectMinMs: number;
  private readonly reconnectMaxMs: number;
  private readonly pingIntervalMs: number;
  private readonly fetch: typeof globalThis.fetch;

  private socket: WebSocketLike | null = null; // null while reconnecting
  private gen = 0; // counts connections: a frame is sent once per connection
  private delayMs: number;
  private readonly pending = new Map<string, Call>();
  private readonly watches = new Map<string, Watch>(); // by the envelope id of the current subscription
  private readonly terminals = new Map<string, Terminal>(); // by their current stream id
  private readonly subscriptions = new Map<string, Subscribed>(); // by the envelope id of their current request
  private failed: Error | null = null; // for good: closed, or a refused key
  private wake: (() => void) | null = null; // ends a reconnect wait at close
  private dialCount = 0;

  /** @internal use {@link connect} */
  constructor(
    private readonly wsUrl: string,
    readonly baseUrl: string,
    private readonly token: string,
    private readonly factory: WebSocketFactory,
    private readonly cookies: boolean,
    options: ClientOptions,
  ) {
    this.maxFrameBytes = options.maxFrameBytes || DEFAULT_MAX_FRAME_BYTES;
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.reconnectMinMs = options.reconnectMinMs || DEFAULT_RECONNECT_MIN_MS;
    this.reconnectMaxMs = Math.max(options.reconnectMaxMs || DEFAULT_RECONNECT_MAX_MS, this.reconnectMinMs);
    this.pingIntervalMs = options.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS;
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.delayMs = this.reconnectMinMs;
    this.management = createManagement(baseUrl, token, { fetch: this.fetch });
  }

  /** How many WebSocket connections this client has opened. */
  get dials(): number {
    return this.dialCount;
  }

  /** Whether a connection is up right now. */
  get connected(): boolean {
    return this.socket !== null;
  }

  toString(): string {
    return `aophub.Client{${this.wsUrl} connected=${this.connected} pending=${this.pending.size} watches=${this.watches.size}}`;
  }

  /** Ends the connection for good; requests and watches in flight end with ClientClosedError. */
  close(): void {
    if (this.failed === null) this.fail(new ClientClosedError());
    const socket = this.socket;
    this.socket = null;
    socket?.close(1000, "client closed");
    this.wake?.();
  }

  // ---- requests -------------------------------------------------------------

  /** Opens a session on request.nodeId; use the returned id (the hub picks one when sessionId is empty). */
  async openSession(request: MessageInitShape<typeof OpenSessionRequestSchema>, options?: CallOptions): Promise<Session> {
    const m = (await this.core({ case: "openSessionRequest", value: request }, options)).message;
    return accepted(m.case === "openSessionResponse" ? m.value.outcome : undefined, m);
  }

  /**
   * Starts a turn and returns its receipt once the hub accepted it. The
   * turn's work arrives as events on a watch of the session (possibly before
   * this returns: start the watch first); the turn is over at its turn_ended.
   */
  async runTurn(request: MessageInitShape<typeof RunTurnRequestSchema>, options?: CallOptions): Promise<TurnReceipt> {
    const m = (await this.core({ case: "runTurnRequest", value: request }, options)).message;
    return accepted(m.case === "runTurnResponse" ? m.value.outcome : undefined, m);
  }

  /** Cancels a running turn; it ends with turn_ended{stop_reason: "canceled"}. A turn not running gives NOT_FOUND. */
  async cancelTurn(request: MessageInitShape<typeof CancelTurnRequestSchema>, options?: CallOptions): Promise<TurnReceipt> {
    const m = (await this.core({ case: "cancelTurnRequest", value: request }, options)).message;
    return accepted(m.case === "cancelTurnResponse" ? m.value.outcome : undefined, m);
  }

  /** Closes a session and returns its final state. */
  async closeSession(request: MessageInitShape<typeof CloseSessionRequestSchema>, options?: CallOptions): Promise<Session> {
    const m = (await this.core({ case: "closeSessionRequest", value: request }, options)).message;
    return accepted(m.case === "closeSessionResponse" ? m.value.outcome : undefined, m);
  }

  /**
   * One page of stored events, oldest first, after request.afterCursor. A
   * short page is not the end: the end is an empty page (see {@link events}).
   */
  async listEvents(
    request: MessageInitShape<typeof ListEventsRequestSchema>,
    options?: CallOptions,
  ): Promise<ListEventsResponse> {
    const m = (await this.core({ case: "listEventsRequest", value: request }, options)).message;
    if (m.case !== "listEventsResponse") throw unexpected(m);
    return m.value;
  }

  /** Every stored event of the session after afterCursor, page by page, up to the stored end. */
  async *events(sessionId: string, afterCursor = "", options?: CallOptions): AsyncGenerator<Delivery> {
    for (;;) {
      const page = await this.listEvents({ sessionId, afterCursor }, { ...options, id: undefined });
      if (page.events.length === 0) return;
      for (const d of page.events) {
        if (d.event !== undefined) yield { cursor: d.cursor, event: d.event };
      }
      afterCursor = page.nextCursor;
    }
  }

  /**
   * Answers a pending interaction (an approval or a client tool call; see
   * interactionOf) and returns it, now answered. The first answer wins: a
   * second one gives FAILED_PRECONDITION.
   */
  async answerInteraction(
    request: MessageInitShape<typeof AnswerInteractionRequestSchema>,
    options?: CallOptions,
  ): Promise<Interaction> {
    const payload = anyPack(
      InteractionProtocolMessageSchema,
      create(InteractionProtocolMessageSchema, { message: { case: "answerRequest", value: request } }),
    );
    const answer = anyUnpack(await this.call(payload, options), InteractionProtocolMessageSchema);
    if (answer?.message.case !== "answerResponse") throw unexpected(answer);
    return accepted(answer.message.value.outcome, answer);
  }

  /**
   * Sends any payload (a message of an extension namespace) and returns the
   * hub's answer. A protocol_error answer becomes an {@link AophubError}.
   */
  async call(payload: Any, options: CallOptions = {}): Promise<Any> {
    const answer = await this.roundTrip(payload, options);
    if (answer.typeUrl === CORE_TYPE_URL) {
      const message = anyUnpack(answer, ProtocolMessageSchema);
      if (message?.message.case === "protocolError") throw protocolError(message.message.value);
    }
    return answer;
  }

  /**
   * Watches the session's events after afterCursor ("" = from the beginning):
   * first the stored ones, then live ones. The subscription is sent at once,
   * before anything sent after this call, so start it before runTurn to see
   * every delta of the turn. The watch outlives disconnects; see {@link Watch}.
   */
  watch(sessionId: string, afterCursor = "", options: { signal?: AbortSignal } = {}): Watch {
    const { signal } = options;
    const onAbort = () => watch.end(signal?.reason);
    const watch = new Watch(sessionId, afterCursor, () => {
      signal?.removeEventListener("abort", onAbort);
      this.unsubscribe(watch);
    });
    if (this.failed !== null || signal?.aborted) {
      watch.end(this.failed ?? signal?.reason);
      return watch;
    }
    signal?.addEventListener("abort", onAbort, { once: true });
    const frame = this.resubscribe("", watch);
    if (this.socket !== null) this.send(this.socket, frame);
    return watch;
  }

  /**
   * Subscribes with a request of an extension namespace that the hub answers
   * with many messages (reply_to = the request's envelope id), such as
   * aophub.v1.ScanProtocolMessage's watch_scan_request: each answer goes to
   * onMessage with its delivery_cursor ("" when it has none). After a
   * reconnect, request() is called again and its answer sent under a new id:
   * build it from what onMessage has seen (e.g. after_cursor = the last
   * cursor) to resume without repeats.
   */
  subscribe(request: () => Any, onMessage: (payload: Any, cursor: string) => void): Subscription {
    if (this.failed !== null) throw this.failed;
    const sub: Subscribed = { request, onMessage, gen: 0 };
    const id = newId();
    this.subscriptions.set(id, sub);
    if (this.socket !== null) {
      sub.gen = this.gen;
      this.send(this.socket, this.frame(id, request()));
    } // else: resume() sends it on the next connection
    return {
      end: () => {
        for (const [current, registered] of this.subscriptions) {
          if (registered !== sub) continue;
          this.subscriptions.delete(current);
          if (this.socket === null || sub.gen !== this.gen) return;
          const cancel = create(ProtocolMessageSchema, {
            message: { case: "cancelOperation", value: { targetId: current, reason: "subscription ended" } },
          });
          this.send(this.socket, this.frame(newId(), anyPack(ProtocolMessageSchema, cancel)));
          return;
        }
      },
    };
  }

  /**
   * A terminal stream (aop.pty) on options.nodeId: open or attach a PTY
   * session with it; every message of the stream (the hub's envelopes with
   * reply_to = its stream id) goes to options.onMessage. It needs the token's
   * `terminal` scope and a node that serves terminals. See {@link Terminal}.
   */
  terminal(options: TerminalOptions): Terminal {
    if (this.failed !== null) throw this.failed;
    return new Terminal(options.nodeId, this.terminalLink, options.onMessage);
  }

  private readonly terminalLink: TerminalLink = {
    sendPty: (envelopeId: string, message: PtyMessage): boolean => {
      const socket = this.socket;
      if (socket === null) return false;
      this.send(socket, this.frame(envelopeId, anyPack(PtySchema, message)));
      return true;
    },
    cancel: (streamId: string): void => {
      if (this.socket === null) return;
      const cancel = create(ProtocolMessageSchema, {
        message: { case: "cancelOperation", value: { targetId: streamId, reason: "terminal ended" } },
      });
      this.send(this.socket, this.frame(newId(), anyPack(ProtocolMessageSchema, cancel)));
    },
    rekey: (terminal: Terminal, oldStreamId: string): string => {
      this.terminals.delete(oldStreamId);
      const id = newId();
      this.terminals.set(id, terminal);
      return id;
    },
    forget: (terminal: Terminal): void => {
      if (this.terminals.get(terminal.streamId) === terminal) this.terminals.delete(terminal.streamId);
    },
    gen: (): number => (this.socket === null ? 0 : this.gen),
    retryDelay: (attempt: number): number =>
      jitter(Math.min(this.reconnectMinMs * 2 ** Math.min(attempt, 30), this.reconnectMaxMs)),
  };

  /** Routes a frame answering a terminal's stream (reply_to = the stream id, or one of its envelope ids "<stream id>/<n>"). */
  private deliverPty(terminal: Terminal, payload: Any | undefined): void {
    let message: TerminalMessage | undefined;
    if (payload?.typeUrl === PTY_TYPE_URL) {
      const m = anyUnpack(payload, PtySchema)?.message;
      if (m !== undefined && m.case !== undefined) message = m;
    } else if (payload?.typeUrl === CORE_TYPE_URL) {
      const m = anyUnpack(payload, ProtocolMessageSchema)?.message;
      if (m?.case === "protocolError") {
        const text = `${m.value.code}: ${m.value.message}`;
        message = { case: "error", value: create(PtyErrorSchema, { streamId: terminal.streamId, message: text }) };
      }
    }
    if (message !== undefined) terminal.receive(message);
  }

  private async core(
    message: MessageInitShape<typeof ProtocolMessageSchema>["message"],
    options?: CallOptions,
  ): Promise<ProtocolMessage> {
    const payload = anyPack(ProtocolMessageSchema, create(ProtocolMessageSchema, { message }));
    const answer = anyUnpack(await this.call(payload, options), ProtocolMessageSchema);
    if (answer === undefined) throw new AophubError(Code.InvalidPayload, "the hub answered with an unexpected payload");
    return answer;
  }

  /** Sends payload and waits for its answer, across reconnects, until the request's signal or timeout ends. */
  private roundTrip(payload: Any, options: CallOptions): Promise<Any> {
    const id = options.id ?? newId();
    const frame = this.frame(id, payload);
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(abortError(`request ${id} not sent`, signal.reason));
    if (this.failed !== null) return Promise.reject(this.failed);
    if (this.pending.has(id)) {
      return Promise.reject(new Error(`aophub: a request with envelope id ${id} is already waiting for its answer`));
    }
    const timeoutMs = options.timeoutMs ?? this.requestTimeoutMs;
    return new Promise<Any>((resolve, reject) => {
      const retry = `(retry with the same id ${id} to make the retry safe)`;
      const finish = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if (this.pending.get(id) === call) this.pending.delete(id);
      };
      const call: Call = {
        frame,
        gen: 0,
        resolve: (answer) => (finish(), resolve(answer)),
        reject: (err) => (finish(), reject(err)),
      };
      const onAbort = () => call.reject(abortError(`no answer to request ${id} ${retry}`, signal?.reason));
      const timer =
        timeoutMs > 0
          ? setTimeout(
              () => call.reject(new DOMException(`no answer to request ${id} within ${timeoutMs} ms ${retry}`, "TimeoutError")),
              timeoutMs,
            )
          : undefined;
      signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, call);
      if (this.socket !== null) {
        call.gen = this.gen;
        this.send(this.socket, frame);
      }
    });
  }

  /** Encodes an envelope; one over maxFrameBytes is refused before it is sent (the hub would close on it). */
  private frame(id: string, payload: Any): Uint8Array {
    const frame = toBinary(EnvelopeSchema, create(EnvelopeSchema, { id, payload }));
    if (frame.byteLength > this.maxFrameBytes) {
      throw new AophubError(
        Code.InvalidArgument,
        `the request is ${frame.byteLength} bytes, over this client's maxFrameBytes (${this.maxFrameBytes})`,
      );
    }
    return frame;
  }

  // ---- watches --------------------------------------------------------------

  /** Re-keys w under a new envelope id (frames for the old id are ignored from now on) and returns its watch request. */
  private resubscribe(oldId: string, w: Watch): Uint8Array {
    this.watches.delete(oldId);
    const id = newId();
    this.watches.set(id, w);
    w.gen = this.gen;
    const request = create(ProtocolMessageSchema, {
      message: { case: "watchEventsRequest", value: { sessionId: w.sessionId, afterCursor: w.cursor } },
    });
    return this.frame(id, anyPack(ProtocolMessageSchema, request));
  }

  /** Forgets w and ends its subscription on the hub. */
  private unsubscribe(w: Watch): void {
    for (const [id, registered] of this.watches) {
      if (registered !== w) continue;
      this.watches.delete(id);
      if (this.socket !== null && w.gen === this.gen) {
        const cancel = create(ProtocolMessageSchema, {
          message: { case: "cancelOperation", value: { targetId: id, reason: "watch stopped" } },
        });
        this.send(this.socket, this.frame(newId(), anyPack(ProtocolMessageSchema, cancel)));
      }
    }
  }

  /** Queues one frame of w's subscription; it never waits for the consumer. */
  private deliver(w: Watch, id: string, cursor: string, payload: Any | undefined): void {
    if (payload?.typeUrl !== CORE_TYPE_URL) return;
    let message: ProtocolMessage;
    try {
      message = fromBinary(ProtocolMessageSchema, payload.value);
    } catch {
      return;
    }
    const m = message.message;
    if (m.case === "protocolError") {
      this.watchFailed(w, id, protocolError(m.value));
    } else if (m.case === "event") {
      if (cursor !== "") {
        if (cursor === w.cursor) return; // already yielded before a reconnect
        w.cursor = cursor;
      }
      w.push({ cursor, event: m.value });
    }
  }

  /** Ends w on a refusal, or watches again after a backoff when the hub says the failure is temporary. */
  private watchFailed(w: Watch, id: string, err: AophubError): void {
    if (!err.retryable) {
      this.watches.delete(id);
      w.end(err);
      return;
    }
    w.gen = 0; // no live subscription: the next resume sends one
    setTimeout(() => {
      if (this.watches.get(id) !== w || this.socket === null || w.gen !== 0) return;
      this.send(this.socket, this.resubscribe(id, w));
    }, jitter(this.reconnectMinMs));
  }

  // ---- the connection -------------------------------------------------------

  /** @internal logs in with the token so that the browser's cookie authenticates the upgrade. */
  async login(signal?: AbortSignal): Promise<void> {
    const response = await this.fetch(`${this.baseUrl}/api/auth/login`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token: this.token }),
      credentials: "include",
      signal: this.bounded(signal),
    });
    if (!response.ok) throw httpRefusal(response.status, await response.text());
  }

  /** @internal opens one WebSocket, bounded by requestTimeoutMs and signal. */
  dial(signal?: AbortSignal): Promise<WebSocketLike> {
    const headers: Record<string, string> =
      this.token === "" || this.cookies ? {} : { Authorization: `Bearer ${this.token}` };
    const bound = this.bounded(signal);
    return new Promise<WebSocketLike>((resolve, reject) => {
      let socket: WebSocketLike;
      try {
        socket = this.factory(this.wsUrl, { headers, maxFrameBytes: this.maxFrameBytes });
      } catch (err) {
        reject(new AophubError(Code.Unavailable, `cannot connect to ${this.wsUrl}: ${String(err)}`, true, { cause: err }));
        return;
      }
      this.dialCount++;
      socket.binaryType = "arraybuffer";
      let failure: unknown;
      const onAbort = () => {
        failure = bound?.reason;
        socket.close();
      };
      bound?.addEventListener("abort", onAbort, { once: true });
      socket.onerror = (event) => {
        failure ??= event;
      };
      socket.onopen = () => {
        bound?.removeEventListener("abort", onAbort);
        resolve(socket);
      };
      socket.onclose = () => {
        bound?.removeEventListener("abort", onAbort);
        if (failure instanceof DOMException) reject(failure);
        else reject(dialError(this.wsUrl, failure));
      };
    });
  }

  private bounded(signal?: AbortSignal): AbortSignal | undefined {
    if (this.requestTimeoutMs <= 0) return signal;
    const timeout = AbortSignal.timeout(this.requestTimeoutMs);
    return signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
  }

  /** @internal makes socket the current connection. */
  start(socket: WebSocketLike): void {
    if (this.failed !== null) {
      socket.close(1000, "client closed");
      return;
    }
    this.socket = socket;
    this.gen++;
    let heard = false;
    let tooBig = false;
    let pong = true;
    const ping =
      this.pingIntervalMs > 0 && socket.ping !== undefined && socket.on !== undefined
        ? setInterval(() => {
            if (!pong) return socket.terminate?.();
            pong = false;
            socket.ping?.();
          }, this.pingIntervalMs)
        : undefined;
    socket.on?.("pong", () => (pong = true));
    socket.onerror = (event) => {
      if ((event as { error?: { code?: string } }).error?.code === WS_TOO_BIG) tooBig = true;
    };
    socket.onmessage = ({ data }) => {
      heard = true;
      const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : ArrayBuffer.isView(data) ? data : undefined;
      if (bytes === undefined) return; // a text frame is not part of the wire format
      if (bytes.byteLength > this.maxFrameBytes) {
        tooBig = true;
        socket.close(1009, "frame too big");
        return;
      }
      this.dispatch(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    };
    socket.onclose = (event) => {
      clearInterval(ping);
      if (this.socket !== socket) return;
      this.drop(tooBig, event.code);
      if (heard) this.delayMs = this.reconnectMinMs;
      void this.reconnect();
    };
    this.resume();
  }

  /** Sends, on a new connection, every watch from its last cursor, then every request still waiting (same id). */
  private resume(): void {
    const socket = this.socket;
    if (socket === null) return;
    for (const [id, w] of [...this.watches]) {
      if (w.gen !== this.gen) this.send(socket, this.resubscribe(id, w));
    }
    for (const t of [...this.terminals.values()]) t.resume();
    for (const [id, sub] of [...this.subscriptions]) {
      if (sub.gen === this.gen) continue;
      this.subscriptions.delete(id);
      const fresh = newId();
      this.subscriptions.set(fresh, sub);
      sub.gen = this.gen;
      this.send(socket, this.frame(fresh, sub.request()));
    }
    for (const call of this.pending.values()) {
      if (call.gen !== this.gen) {
        call.gen = this.gen;
        this.send(socket, call.frame);
      }
    }
  }

  /** Forgets the dropped connection. After a 1009 it fails what would only hit the same frame again. */
  private drop(tooBig: boolean, closeCode: number): void {
    const dropped = this.gen;
    this.socket = null;
    if (tooBig) {
      this.failAll(
        new AophubError(
          Code.ResourceExhausted,
          `the hub sent a frame larger than this client's maxFrameBytes (${this.maxFrameBytes}); every request and watch` +
            " in flight failed. Raise maxFrameBytes to the hub's --max-frame-bytes to read it",
        ),
      );
    } else if (closeCode === 1009) {
      const refused = new AophubError(
        Code.ResourceExhausted,
        "the hub refused a frame as too large (close code 1009); the requests in flight on that connection failed",
      );
      for (const call of [...this.pending.values()]) if (call.gen === dropped) call.reject(refused);
    }
  }

  /** Dials again with backoff and jitter until it works, the client is closed, or the hub refuses the key. */
  private async reconnect(): Promise<void> {
    while (this.failed === null) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, jitter(this.delayMs));
        this.wake = () => (clearTimeout(timer), resolve());
      });
      this.wake = null;
      this.delayMs = Math.min(this.delayMs * 2, this.reconnectMaxMs);
      if (this.failed !== null) return;
      try {
        this.start(await this.dial());
        return;
      } catch (err) {
        const refused = err instanceof AophubError && err.code !== Code.Unavailable;
        if (refused || (this.cookies && !(await this.stillAuthenticated()))) {
          this.fail(refused ? err : new AophubError(Code.Unauthenticated, "the hub no longer accepts this browser's session"));
          return;
        }
      }
    }
  }

  /** A browser cannot see the upgrade's status: ask the hub whether the session cookie still works. */
  private async stillAuthenticated(): Promise<boolean> {
    try {
      const response = await this.fetch(`${this.baseUrl}/api/auth/session`, { credentials: "include" });
      return !response.ok || ((await response.json()) as { authenticated?: boolean }).authenticated !== false;
    } catch {
      return true; // the hub is unreachable: keep trying
    }
  }

  /** Ends every request and watch with err, and the client for good. */
  private fail(err: Error): void {
    this.failed ??= err;
    this.failAll(err);
  }

  private failAll(err: Error): void {
    const calls = [...this.pending.values()];
    const watches = [...this.watches.values()];
    this.pending.clear();
    this.watches.clear();
    for (const call of calls) call.reject(err);
    for (const w of watches) w.end(err);
  }

  /** Routes one frame from the hub by its reply_to. */
  private dispatch(data: Uint8Array): void {
    let envelope;
    try {
      envelope = fromBinary(EnvelopeSchema, data);
    } catch {
      return;
    }
    const w = this.watches.get(envelope.replyTo);
    if (w !== undefined) {
      this.deliver(w, envelope.replyTo, envelope.deliveryCursor, envelope.payload);
      return;
    }
    const sub = this.subscriptions.get(envelope.replyTo);
    if (sub !== undefined && envelope.payload !== undefined) {
      sub.onMessage(envelope.payload, envelope.deliveryCursor);
      return;
    }
    const call = this.pending.get(envelope.replyTo);
    if (call !== undefined && envelope.payload !== undefined) {
      call.resolve(envelope.payload);
      return;
    }
    const terminal = this.terminals.get(envelope.replyTo) ?? this.terminals.get(envelope.replyTo.split("/")[0] ?? "");
    if (terminal !== undefined) this.deliverPty(terminal, envelope.payload);
  }

  /** Sends one frame; a failure is left to the close handler, which reconnects and resends. */
  private send(socket: WebSocketLike, frame: Uint8Array): void {
    try {
      socket.send(frame);
    } catch {
      // the socket is closing: its close event resumes everything on the next connection
    }
  }
}

/** A response's oneof outcome {accepted, rejected}. */
type Outcome = { case: "accepted"; value: unknown } | { case: "rejected"; value: Rejection } | { case: undefined };

/** The accepted value of a response's outcome, or its rejection as an AophubError. */
function accepted<O extends Outcome>(outcome: O | undefined, answer: unknown): Extract<O, { case: "accepted" }>["value"] {
  if (outcome?.case === "rejected") throw rejectionError(outcome.value);
  if (outcome?.case !== "accepted") throw unexpected(answer);
  return outcome.value;
}

function unexpected(answer: unknown): AophubError {
  const kind = (answer as { case?: string; $typeName?: string } | undefined)?.case ?? "nothing";
  return new AophubError(Code.InvalidPayload, `the hub answered with an unexpected message (${kind})`);
}

/** The error of an aborted wait: the signal's reason, with the request named. */
function abortError(what: string, reason: unknown): unknown {
  if (reason instanceof DOMException) return new DOMException(`aophub: ${what}: ${reason.message}`, reason.name);
  return reason ?? new DOMException(`aophub: ${what}`, "AbortError");
}

/** What a failed dial means: a refused key (the upgrade's HTTP status, as `ws` reports it), else the hub is unreachable. */
function dialError(url: string, failure: unknown): AophubError {
  const event = failure as { message?: string; error?: { message?: string } } | undefined;
  const message = event?.error?.message ?? event?.message ?? "the connection closed";
  const status = /server response: (\d{3})/.exec(message)?.[1];
  if (status === "401" || status === "403") return httpRefusal(Number(status), message);
  return new AophubError(Code.Unavailable, `cannot connect to ${url}: ${message}`, true);
}

function httpRefusal(status: number, detail: string): AophubError {
  const code = status === 403 ? Code.PermissionDenied : status === 401 ? Code.Unauthenticated : Code.Unavailable;
  return new AophubError(code, `the hub refused the connection: HTTP ${status} ${detail.trim()}`, code === Code.Unavailable);
}
