package dev.aophub.client;

import java.time.Duration;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A running watch of one session's events (see {@link HubClient#watch}). Read it with {@link
 * #next()} (blocking), or subscribe to it as a {@link Flow.Publisher} (one subscriber, on a thread
 * of its own). The client never waits for the reader: deliveries queue up until read. Close it
 * when done; closing ends it on the hub too.
 */
public final class Watch implements Flow.Publisher<Delivery>, AutoCloseable {
  private static final Object END = new Object();

  private final HubClient client;
  final String sessionId;
  String cursor; // the last persisted cursor received (guarded by the client's lock)
  long generation; // the connection the current subscription went on (client's lock)

  private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
  private volatile HubException ended;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AtomicBoolean subscribed = new AtomicBoolean();

  Watch(HubClient client, String sessionId, String afterCursor) {
    this.client = client;
    this.sessionId = sessionId;
    this.cursor = afterCursor;
  }

  void push(Delivery delivery) {
    queue.add(delivery);
  }

  void end(HubException error) {
    if (ended == null) {
      ended = error;
      queue.add(END);
    }
  }

  /**
   * Waits for the next delivery.
   *
   * @throws HubException once the watch has ended (the hub refused it, the client or the watch
   *     was closed): every call from then on
   */
  public Delivery next() {
    try {
      return take(queue.take());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new HubException(HubException.CANCELLED, "interrupted while waiting for an event");
    }
  }

  /** Like {@link #next()}, but returns null when nothing arrived within the timeout. */
  public Delivery next(Duration timeout) {
    try {
      Object item = queue.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
      return item == null ? null : take(item);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new HubException(HubException.CANCELLED, "interrupted while waiting for an event");
    }
  }

  private Delivery take(Object item) {
    if (item == END) {
      queue.add(END); // the ending stays for every later call
      close();
      throw ended;
    }
    return (Delivery) item;
  }

  /** The session watched. */
  public String sessionId() {
    return sessionId;
  }

  /**
   * The cursor of the last persisted event received (or the cursor the watch started after):
   * where a new watch would resume. Save it to resume after your program restarts.
   */
  public String cursor() {
    return client.cursorOf(this);
  }

  /** Ends the watch, on the hub too; a reader waiting in next() gets CLOSED. Idempotent. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      client.unsubscribe(this);
      end(new HubException(HubException.CLOSED, "the watch was closed"));
    }
  }

  /**
   * Delivers this watch's events to one subscriber, on a thread of its own, as it requests them.
   * The watch's end (a refusal, the client's close) is onError; cancelling the subscription
   * closes the watch.
   */
  @Override
  public void subscribe(Flow.Subscriber<? super Delivery> subscriber) {
    if (!subscribed.compareAndSet(false, true)) {
      subscriber.onSubscribe(new Flow.Subscription() {
        @Override
        public void request(long n) {}

        @Override
        public void cancel() {}
      });
      subscriber.onError(new IllegalStateException("a Watch takes one subscriber"));
      return;
    }
    Semaphore demand = new Semaphore(0);
    AtomicBoolean cancelled = new AtomicBoolean();
    Thread pump = new Thread(() -> {
      try {
        while (!cancelled.get()) {
          demand.acquire();
          Delivery delivery = next();
          if (!cancelled.get()) {
            subscriber.onNext(delivery);
          }
        }
      } catch (HubException e) {
        if (!cancelled.get()) {
          subscriber.onError(e);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "aophub-watch-" + sessionId);
    pump.setDaemon(true);
    subscriber.onSubscribe(new Flow.Subscription() {
      @Override
      public void request(long n) {
        if (n <= 0) {
          cancel();
          subscriber.onError(new IllegalArgumentException("request(n) needs n > 0 (rule 3.9)"));
          return;
        }
        int add = (int) Math.min(n, Integer.MAX_VALUE / 2);
        if (demand.availablePermits() < Integer.MAX_VALUE / 2) {
          demand.release(add);
        }
      }

      @Override
      public void cancel() {
        if (cancelled.compareAndSet(false, true)) {
          close();
          demand.release(); // wakes the pump if it waits for demand: it sees the end and stops
        }
      }
    });
    pump.start();
  }
}
