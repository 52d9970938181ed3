package dev.aophub.client;

import java.time.Duration;

/**
 * Options of one request: its envelope id and its timeout. The envelope id is the request's
 * idempotency key: sending the same request again with the same id (after a timeout, or from a
 * restarted program) returns the hub's stored answer instead of running it twice.
 */
public record CallOptions(String id, Duration timeout) {
  /** A new envelope id and the client's request timeout. */
  public static CallOptions defaults() {
    return new CallOptions(null, null);
  }

  /** Send the request with this envelope id. */
  public static CallOptions id(String id) {
    return new CallOptions(id, null);
  }

  /** Wait at most this long for the answer (zero or negative: fail at once, sending nothing). */
  public static CallOptions timeout(Duration timeout) {
    return new CallOptions(null, timeout);
  }

  public CallOptions withId(String id) {
    return new CallOptions(id, timeout);
  }

  public CallOptions withTimeout(Duration timeout) {
    return new CallOptions(id, timeout);
  }
}
