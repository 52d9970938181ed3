// A terminal stream (aop.pty, AOP-workspace section 8): one viewer channel on
// a node's PTY sessions, relayed by the hub and routed back by reply_to = the
// stream id.

import { create, type MessageInitShape } from "@bufbuild/protobuf";

import {
  OpenSchema,
  type ProtocolMessage as PtyMessage,
  ProtocolMessageSchema as PtySchema,
} from "./gen/aop/pty/protocol_pb.js";

/** One message of a terminal stream, as the node (or the hub) sent it: opened, attached, output, sessions, closed, detached, error. */
export type TerminalMessage = Exclude<PtyMessage["message"], { case: undefined }>;

/** What {@link Terminal.open} takes: Open without stream_id and node_id, which the terminal fills in. */
export type OpenInit = Omit<MessageInitShape<typeof OpenSchema>, "streamId" | "nodeId" | "$typeName">;

/** Options of Client.terminal. */
export interface TerminalOptions {
  /** The node whose PTY sessions the terminal reaches. */
  nodeId: string;
  /**
   * Gets every message of the stream, in order. A hub's refusal of one of the
   * terminal's messages (INVALID_PTY, PTY_FORWARD_FAILED...) arrives as an
   * `error` whose text starts with its code.
   */
  onMessage(message: TerminalMessage, terminal: Terminal): void;
}

/** @internal what a terminal needs from its client. */
export interface TerminalLink {
  /** Sends one aop.pty message in an envelope with this id; false when there is no connection. */
  sendPty(envelopeId: string, message: PtyMessage): boolean;
  /** Sends cancel_operation{target_id: streamId}. */
  cancel(streamId: string): void;
  /** A fresh stream id, registered for routing (the old one, if any, is forgotten). */
  rekey(terminal: Terminal, oldStreamId: string): string;
  /** Forgets the terminal. */
  forget(terminal: Terminal): void;
  /** The current connection (0: none). */
  gen(): number;
  /** The wait (ms) before the terminal's next try to bind again: attempt 0 waits least, then doubling (the client's reconnect backoff). */
  retryDelay(attempt: number): number;
}

type Request = Exclude<PtyMessage["message"], { case: undefined }>;

/**
 * A terminal stream on one node. Make one with Client.terminal; then
 * {@link open} a new PTY session or {@link attach} to a running one, send
 * {@link input} and {@link resize}, and read what comes back in the
 * onMessage listener.
 *
 * Output messages carry `offset` (the position of their first byte in the
 * session's output; 0 from reference nodes): a view that remembers how far it
 * has written can skip what a re-attach replays.
 *
 * It outlives disconnects: on a new connection it binds a fresh stream id and
 * attaches again to its session (a snapshot of the session's recent output
 * follows, then live output), and when the hub reports the node gone and back
 * (detached, then sessions) it attaches again too. When the node is away as
 * it binds (the hub answers PTY_FORWARD_FAILED, e.g. after a hub restart that
 * the client noticed before the node), it tries again with the client's
 * reconnect backoff until the node is back. Input sent while there is no
 * connection is dropped.
 */
export class Terminal {
  /** The stream id on the current connection (it changes after a reconnect). */
  streamId: string;
  /** The PTY session the stream is bound to ("" before opened/attached). */
  sessionId = "";
  /** Whether the session has ended (closed received). */
  ended = false;

  private gen = 0; // the connection the stream id is bound on (0: not bound)
  private seq = 0;
  private size: { cols: number; rows: number } = { cols: 0, rows: 0 };
  private intent: { case: "open"; init: OpenInit } | { case: "attach" } | null = null;
  private lost = false; // a detached we did not ask for: attach again at the next sessions
  private done = false;
  private retries = 0; // binding tries refused since the last opened/attached
  private retryTimer: ReturnType<typeof setTimeout> | null = null;

  /** @internal use Client.terminal */
  constructor(
    readonly nodeId: string,
    private readonly link: TerminalLink,
    private readonly listener: TerminalOptions["onMessage"],
  ) {
    this.streamId = link.rekey(this, "");
  }

  /** Starts a new PTY session (kind "shell" by default on reference nodes) and binds the stream to it. */
  open(init: OpenInit = {}): void {
    this.intent = { case: "open", init };
    this.ended = false;
    if (init.cols && init.rows) this.size = { cols: init.cols, rows: init.rows };
    this.sendOpen(init);
  }

  /** Binds the stream to the running (or ended) session sessionId: attached, a snapshot of its recent output, then live output. */
  attach(sessionId: string, cols = this.size.cols, rows = this.size.rows): void {
    this.sessionId = sessionId;
    this.size = { cols, rows };
    this.intent = { case: "attach" };
    this.ended = false;
    this.send(() => ({
      case: "attach",
      value: { $typeName: "aop.pty.Attach", streamId: this.streamId, sessionId, cols, rows },
    }));
  }

  /** Asks for the node's sessions (answered with sessions). */
  list(): void {
    this.send(() => ({ case: "list", value: { $typeName: "aop.pty.List", streamId: this.streamId, nodeId: this.nodeId } }));
  }

  /** Sends keystrokes (or any bytes) to the session. */
  input(data: Uint8Array | string): void {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    this.send(() => ({ case: "input", value: { $typeName: "aop.pty.Input", streamId: this.streamId, data: bytes } }));
  }

  /** Sets the session's window size. */
  resize(cols: number, rows: number): void {
    this.size = { cols, rows };
    this.send(() => ({ case: "resize", value: { $typeName: "aop.pty.Resize", streamId: this.streamId, cols, rows } }));
  }

  /** Ends the session on the node (closed follows). */
  kill(): void {
    this.intent = null;
    this.send(() => ({ case: "kill", value: { $typeName: "aop.pty.Kill", streamId: this.streamId } }));
  }

  /** Unbinds the stream from its session, which keeps running; attach again later. */
  detach(): void {
    this.intent = null;
    this.send(() => ({ case: "detach", value: { $typeName: "aop.pty.Detach", streamId: this.streamId } }));
  }

  /** Stops the terminal for good: detaches (the session keeps running) and releases the stream on the hub. */
  end(): void {
    if (this.done) return;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.gen !== 0) {
      this.detach();
      this.link.cancel(this.streamId);
    }
    this.done = true;
    this.link.forget(this);
  }

  // ---- the client's side ------------------------------------------------------

  /** @internal a message routed to this stream. */
  receive(message: TerminalMessage): void {
    if (this.done) return;
    switch (message.case) {
      case "opened":
      case "attached":
        this.sessionId = message.value.session?.id ?? this.sessionId;
        this.intent = { case: "attach" };
        this.lost = false;
        this.retries = 0;
        break;
      case "closed":
        this.ended = true;
        this.intent = null;
        break;
      case "error":
        if (message.value.message.startsWith("PTY_FORWARD_FAILED") && this.intent !== null) this.retryLater();
        break;
      case "detached":
        if (this.intent !== null) this.lost = true;
        break;
      case "sessions":
        if (this.lost && this.intent?.case === "attach") {
          this.lost = false;
          const session = message.value.sessions.find((s) => s.id === this.sessionId);
          if (session !== undefined) this.attach(this.sessionId);
        }
        break;
    }
    this.listener(message, this);
  }

  /**
   * The node could not be reached (8.4.4: the hub dropped a new binding; a
   * bound stream stays bound): bind again after a backoff, then attach (or
   * open) once the node answers.
   */
  private retryLater(): void {
    if (this.retryTimer !== null || this.done) return;
    this.lost = true;
    const delay = this.link.retryDelay(this.retries++);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.done || this.ended || this.intent === null || this.link.gen() === 0) return;
      this.gen = 0;
      if (this.intent.case === "open") this.sendOpen(this.intent.init);
      else this.list();
    }, delay);
  }

  /** @internal a new connection: the old stream is gone on the hub; bind a new one and attach again. */
  resume(): void {
    if (this.done || this.gen === 0) return;
    this.gen = 0;
    this.streamId = this.link.rekey(this, this.streamId);
    if (this.intent?.case === "attach" && this.sessionId !== "") this.attach(this.sessionId);
    else if (this.intent?.case === "open") this.sendOpen(this.intent.init);
  }

  private sendOpen(init: OpenInit): void {
    const open = (): Request => ({
      case: "open",
      value: create(OpenSchema, { ...init, streamId: this.streamId, nodeId: this.nodeId }),
    });
    this.send(open, true);
  }

  /**
   * Sends a message; a stream not bound on this connection is first bound with
   * list{node_id} (only open and list can bind), whose envelope id is the
   * stream id, as the reference client does.
   */
  private send(build: () => Request, binds = false): void {
    if (this.done) throw new Error("aophub: this terminal has ended");
    const gen = this.link.gen();
    if (gen === 0) return; // no connection: resume() sends the open or attach again
    const message = build();
    const bindsItself = binds || message.case === "list";
    const wrap = (m: Request) => create(PtySchema, { message: m });
    if (this.gen !== gen) {
      const first = bindsItself
        ? message
        : ({ case: "list", value: { $typeName: "aop.pty.List", streamId: this.streamId, nodeId: this.nodeId } } as Request);
      if (!this.link.sendPty(this.streamId, wrap(first))) return;
      this.gen = gen;
      if (bindsItself) return;
    }
    this.link.sendPty(`${this.streamId}/${++this.seq}`, wrap(message));
  }
}
