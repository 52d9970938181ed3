// A watch of one session's events, as an AsyncIterable.

import type { Event } from "./gen/aop/event_pb.js";

/**
 * One event a watch yields. cursor is set for persisted events (save the last
 * one to resume after a restart of your program) and "" for deltas, which are
 * live only and never replayed.
 */
export interface Delivery {
  cursor: string;
  event: Event;
}

/**
 * A running watch of a session's events; see Client.watch. Read it with
 * `for await (const d of watch)` (leaving the loop closes the watch) or
 * with `await watch.next()`.
 *
 * It outlives disconnects: the client reconnects with backoff and watches
 * again after the last persisted event received, so the persisted events it
 * yields are exactly the stored sequence, with nothing missed and nothing
 * twice (deltas sent while disconnected are lost; the complete message that
 * follows them carries the whole text).
 *
 * It ends with an error (next() rejects) when its signal aborts, the client is
 * closed, or the hub refuses it (for example NOT_FOUND for an unknown session,
 * RESOURCE_EXHAUSTED over the hub's --max-watches).
 */
export class Watch implements AsyncIterableIterator<Delivery> {
  /** The cursor of the last persisted event received (or the one it started after): where a new watch would resume. */
  cursor: string;
  /** @internal the connection its current subscription was sent on (0: none) */
  gen = 0;

  private readonly queue: Delivery[] = []; // received, not yet read: the connection never waits for the reader
  private wakeReader: (() => void) | null = null;
  private ended = false;
  private error: unknown = undefined; // why it ended; undefined: closed by its reader

  /** @internal use Client.watch */
  constructor(
    readonly sessionId: string,
    afterCursor: string,
    private readonly unsubscribe: () => void,
  ) {
    this.cursor = afterCursor;
  }

  /** @internal queues a delivery for the reader. */
  push(delivery: Delivery): void {
    if (this.ended) return;
    this.queue.push(delivery);
    this.wakeReader?.();
  }

  /** @internal ends the watch from the hub's or the client's side; what was queued is still read first. */
  end(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.error = error;
    this.unsubscribe();
    this.wakeReader?.();
  }

  /** The next delivery; rejects once the watch has ended with an error, and is done once closed. */
  async next(): Promise<IteratorResult<Delivery, undefined>> {
    for (;;) {
      const delivery = this.queue.shift();
      if (delivery !== undefined) return { done: false, value: delivery };
      if (this.ended) {
        if (this.error !== undefined) throw this.error;
        return { done: true, value: undefined };
      }
      await new Promise<void>((resolve) => (this.wakeReader = resolve));
      this.wakeReader = null;
    }
  }

  /** Ends the watch, on the hub too (leaving a for-await loop calls it). Safe to call more than once. */
  async return(): Promise<IteratorResult<Delivery, undefined>> {
    this.close();
    return { done: true, value: undefined };
  }

  /** Ends the watch, on the hub too; next() is done from then on. */
  close(): void {
    this.queue.length = 0;
    this.end(undefined);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
