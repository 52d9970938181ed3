package dev.aophub.client;

import java.io.ByteArrayOutputStream;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * One WebSocket to the hub: it reassembles binary messages from their parts (refusing one over
 * the frame limit), queues writes (the JDK's WebSocket takes one send at a time), and tells the
 * client once when it is gone.
 */
final class Connection implements WebSocket.Listener {
  /** A write the hub does not take within this long drops the connection. */
  private static final long WRITE_TIMEOUT_SECONDS = 30;

  /** What the connection reports to its owner. */
  interface Owner {
    void received(Connection connection, byte[] frame);

    /** Called once, when the connection is gone; closeCode is -1 unless the hub closed it. */
    void lost(Connection connection, int closeCode, boolean tooBig);
  }

  final long generation;
  private final Owner owner;
  private final int maxFrameBytes;
  private WebSocket socket;
  private final ByteArrayOutputStream partial = new ByteArrayOutputStream();
  private CompletableFuture<?> writes = CompletableFuture.completedFuture(null);
  private boolean lost;
  volatile boolean heard;
  volatile long lastHeardNanos = System.nanoTime();

  Connection(long generation, Owner owner, int maxFrameBytes) {
    this.generation = generation;
    this.owner = owner;
    this.maxFrameBytes = maxFrameBytes;
  }

  @Override
  public void onOpen(WebSocket webSocket) {
    attach(webSocket);
    webSocket.request(1);
  }

  /** Knows the socket (from onOpen or from the dial's result, whichever comes first). */
  synchronized void attach(WebSocket webSocket) {
    socket = webSocket;
  }

  @Override
  public CompletionStage<?> onBinary(WebSocket webSocket, ByteBuffer data, boolean last) {
    heard();
    if (partial.size() + data.remaining() > maxFrameBytes) {
      partial.reset();
      drop(-1, true);
      return null;
    }
    byte[] chunk = new byte[data.remaining()];
    data.get(chunk);
    partial.writeBytes(chunk);
    if (last) {
      byte[] frame = partial.toByteArray();
      partial.reset();
      owner.received(this, frame);
    }
    webSocket.request(1);
    return null;
  }

  @Override
  public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
    heard(); // the application endpoint speaks binary only: text is ignored
    webSocket.request(1);
    return null;
  }

  @Override
  public CompletionStage<?> onPing(WebSocket webSocket, ByteBuffer message) {
    heard(); // the JDK answers the ping itself
    webSocket.request(1);
    return null;
  }

  @Override
  public CompletionStage<?> onPong(WebSocket webSocket, ByteBuffer message) {
    heard();
    webSocket.request(1);
    return null;
  }

  @Override
  public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
    drop(statusCode, false);
    return null;
  }

  @Override
  public void onError(WebSocket webSocket, Throwable error) {
    drop(-1, false);
  }

  private void heard() {
    heard = true;
    lastHeardNanos = System.nanoTime();
  }

  /** Queues one binary frame; a failed or stuck write drops the connection. */
  synchronized void send(byte[] frame) {
    if (lost || socket == null) {
      return; // the owner resends what still waits for an answer on the next connection
    }
    WebSocket target = socket;
    writes =
        writes
            .handle((ignored, error) -> null)
            .thenCompose(ignored -> target.sendBinary(ByteBuffer.wrap(frame), true))
            .orTimeout(WRITE_TIMEOUT_SECONDS, TimeUnit.SECONDS)
            // Async: a write that fails at once must not report the loss from inside send(),
            // where the caller may hold the client's lock.
            .whenCompleteAsync(
                (ignored, error) -> {
                  if (error != null) {
                    drop(-1, false);
                  }
                });
  }

  /** Sends a ping (the pong, or any frame, counts as heard). */
  synchronized void ping() {
    if (!lost && socket != null) {
      WebSocket target = socket;
      writes = writes.handle((ignored, error) -> null).thenCompose(ignored -> target.sendPing(ByteBuffer.allocate(0)));
    }
  }

  /** Ends the connection (abruptly) and reports it lost, once. */
  void drop(int closeCode, boolean tooBig) {
    WebSocket target;
    synchronized (this) {
      if (lost) {
        return;
      }
      lost = true;
      target = socket;
    }
    if (target != null) {
      target.abort();
    }
    owner.lost(this, closeCode, tooBig);
  }

  /** Closes the connection normally (the client is closing). */
  void close() {
    WebSocket target;
    synchronized (this) {
      if (lost) {
        return;
      }
      lost = true;
      target = socket;
    }
    if (target != null) {
      target
          .sendClose(WebSocket.NORMAL_CLOSURE, "client closed")
          .orTimeout(1, TimeUnit.SECONDS)
          .whenComplete((ignored, error) -> target.abort());
    }
  }
}
