package dev.aophub.client;

import java.net.http.HttpClient;
import java.time.Duration;
import java.util.Objects;

/**
 * Settings of a {@link HubClient}; {@link #defaults()} and the {@code with} methods make new ones.
 *
 * @param maxFrameBytes the largest frame sent or received; keep it at least the hub's
 *     {@code --max-frame-bytes} (16 MiB by default) so that every stored event can be read
 * @param requestTimeout bounds each request (and each dial) unless {@link CallOptions} says
 *     otherwise
 * @param reconnectMin the first wait before dialling again after the connection dropped; it
 *     doubles up to {@code reconnectMax}, and each wait is jittered to between half and all of it
 * @param reconnectMax the longest wait between dials
 * @param pingInterval how often the connection is pinged; one silent for two intervals (no frame,
 *     not even a pong) is dropped and dialled again. Zero: no pings. The pings are also how a dropped connection is noticed:
 *     the JDK's WebSocket (17) often misses a TCP connection closed under it (its socket stays in
 *     CLOSE_WAIT, no onClose) until it next writes, so keep them on
 * @param httpClient carries the WebSocket upgrade (proxies, TLS); null: a new default client
 */
public record Options(
    int maxFrameBytes,
    Duration requestTimeout,
    Duration reconnectMin,
    Duration reconnectMax,
    Duration pingInterval,
    HttpClient httpClient) {
  /** The hub's default --max-frame-bytes. */
  public static final int DEFAULT_MAX_FRAME_BYTES = 16 << 20;

  public Options {
    if (maxFrameBytes <= 0) {
      throw new IllegalArgumentException("maxFrameBytes must be positive");
    }
    Objects.requireNonNull(requestTimeout, "requestTimeout");
    Objects.requireNonNull(pingInterval, "pingInterval");
    if (reconnectMin.isNegative() || reconnectMin.isZero() || reconnectMax.compareTo(reconnectMin) < 0) {
      throw new IllegalArgumentException("want 0 < reconnectMin <= reconnectMax");
    }
  }

  public static Options defaults() {
    return new Options(
        DEFAULT_MAX_FRAME_BYTES,
        Duration.ofSeconds(30),
        Duration.ofMillis(500),
        Duration.ofSeconds(10),
        Duration.ofSeconds(10),
        null);
  }

  public Options withMaxFrameBytes(int maxFrameBytes) {
    return new Options(maxFrameBytes, requestTimeout, reconnectMin, reconnectMax, pingInterval, httpClient);
  }

  public Options withRequestTimeout(Duration requestTimeout) {
    return new Options(maxFrameBytes, requestTimeout, reconnectMin, reconnectMax, pingInterval, httpClient);
  }

  public Options withReconnect(Duration min, Duration max) {
    return new Options(maxFrameBytes, requestTimeout, min, max, pingInterval, httpClient);
  }

  public Options withPingInterval(Duration pingInterval) {
    return new Options(maxFrameBytes, requestTimeout, reconnectMin, reconnectMax, pingInterval, httpClient);
  }

  public Options withHttpClient(HttpClient httpClient) {
    return new Options(maxFrameBytes, requestTimeout, reconnectMin, reconnectMax, pingInterval, httpClient);
  }
}
