package dev.aophub.client;

import dev.aophub.aop.ProtocolError;
import dev.aophub.aop.Rejection;

/**
 * A refusal or protocol error from the hub, or a failure of the client with the same meaning (a
 * frame over the limit, a refused upgrade, a request that timed out). {@link #code()} is one of
 * the constants below (or a code a newer hub added); {@link #retryable()} tells whether the same
 * request may succeed later.
 */
public class HubException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  // Rejections (aop.Rejection.code).
  public static final String INVALID_ARGUMENT = "INVALID_ARGUMENT";
  public static final String NOT_FOUND = "NOT_FOUND";
  public static final String ALREADY_EXISTS = "ALREADY_EXISTS";
  public static final String FAILED_PRECONDITION = "FAILED_PRECONDITION";
  public static final String UNAVAILABLE = "UNAVAILABLE";
  public static final String RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED";
  // Protocol errors (aop.ProtocolError.code).
  public static final String INVALID_PAYLOAD = "INVALID_PAYLOAD";
  public static final String UNSUPPORTED_NAMESPACE = "UNSUPPORTED_NAMESPACE";
  public static final String UNSUPPORTED_MESSAGE = "UNSUPPORTED_MESSAGE";
  public static final String WRONG_ENDPOINT = "WRONG_ENDPOINT";
  public static final String INTERNAL = "INTERNAL";
  // The WebSocket upgrade was refused (HTTP 401 / 403).
  public static final String UNAUTHENTICATED = "UNAUTHENTICATED";
  public static final String PERMISSION_DENIED = "PERMISSION_DENIED";
  // Failures of this client: no answer in time (the cause is a TimeoutException), the client
  // or the watch was closed, the calling thread was interrupted.
  public static final String DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED";
  public static final String CLOSED = "CLOSED";
  public static final String CANCELLED = "CANCELLED";

  private final String code;
  private final boolean retryable;

  public HubException(String code, String message, boolean retryable, Throwable cause) {
    super(code + ": " + message, cause);
    this.code = code;
    this.retryable = retryable;
  }

  public HubException(String code, String message) {
    this(code, message, false, null);
  }

  /** One of the code constants of this class. */
  public String code() {
    return code;
  }

  /** Whether the same request may succeed later. */
  public boolean retryable() {
    return retryable;
  }

  static HubException of(Rejection rejection) {
    return new HubException(
        rejection.getCode(), rejection.getMessage(), rejection.getRetryable(), null);
  }

  static HubException of(ProtocolError error) {
    return new HubException(error.getCode(), error.getMessage(), error.getRetryable(), null);
  }

  static HubException closed() {
    return new HubException(CLOSED, "the client was closed");
  }
}
