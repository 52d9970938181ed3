package dev.aophub.client;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.aophub.aop.CancelTurnRequest;
import dev.aophub.aop.CloseSessionRequest;
import dev.aophub.aop.Envelope;
import dev.aophub.aop.ListEventsRequest;
import dev.aophub.aop.ListEventsResponse;
import dev.aophub.aop.OpenSessionRequest;
import dev.aophub.aop.ProtocolMessage;
import dev.aophub.aop.Rejection;
import dev.aophub.aop.RunTurnRequest;
import dev.aophub.aop.Session;
import dev.aophub.aop.TurnReceipt;
import dev.aophub.aop.WatchEventsRequest;
import dev.aophub.api.v1.AnswerInteractionRequest;
import dev.aophub.api.v1.Interaction;
import dev.aophub.api.v1.InteractionProtocolMessage;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * A connection to a hub's application endpoint that survives disconnects: it dials again with
 * backoff and jitter, resends the requests still waiting for an answer with their envelope ids
 * (the hub answers a repeated id from its journal, so nothing runs twice), and resumes every
 * watch after the last cursor it delivered. All methods are safe to call from any thread.
 *
 * <p>Each request comes in two forms: {@code openSession(...)} waits for the answer and throws
 * {@link HubException}; {@code openSessionAsync(...)} returns a {@link CompletableFuture} that
 * fails with the same exception, or with a {@link TimeoutException} when no answer came within the
 * request's timeout.
 */
public final class HubClient implements AutoCloseable {
  static final String APPLICATION_PATH = "/api/aop/application/ws";
  private static final String TYPE_URL_PREFIX = "type.googleapis.com/";
  private static final String CORE_TYPE_URL =
      TYPE_URL_PREFIX + ProtocolMessage.getDescriptor().getFullName();
  private static final SecureRandom RANDOM = new SecureRandom();

  private final URI endpoint;
  private final URI base;
  private final String token;
  private final Options options;
  private final HttpClient http;
  private final ScheduledExecutorService timers;
  private volatile Management management;

  private final Object lock = new Object();
  private Connection connection; // null while reconnecting
  private long generation;
  private final Map<String, Pending> pending = new HashMap<>();
  private final Map<String, Watch> watches = new HashMap<>(); // by the current subscription's id
  private HubException failed; // for good: closed, or the key was refused
  private Duration backoff;

  /** A request waiting for its answer. */
  private static final class Pending {
    final byte[] frame;
    long generation; // the connection it was last sent on
    final CompletableFuture<Any> answer = new CompletableFuture<>();

    Pending(byte[] frame) {
      this.frame = frame;
    }
  }

  private HubClient(URI endpoint, URI base, String token, Options options) {
    this.endpoint = endpoint;
    this.base = base;
    this.token = token;
    this.options = options;
    this.http = options.httpClient() != null ? options.httpClient() : HttpClient.newHttpClient();
    this.backoff = options.reconnectMin();
    this.timers =
        Executors.newSingleThreadScheduledExecutor(
            task -> {
              Thread thread = new Thread(task, "aophub-client");
              thread.setDaemon(true);
              return thread;
            });
  }

  /** {@link #connect(String, String, Options)} with {@link Options#defaults()}. */
  public static HubClient connect(String url, String token) {
    return connect(url, token, Options.defaults());
  }

  /**
   * Dials the hub and returns a connected client.
   *
   * @param url the hub's base URL (http://host:port, https://...) or the application endpoint
   *     itself (ws://host:port/api/aop/application/ws, wss://...)
   * @param token an access key of the hub (sent as {@code Authorization: Bearer <token>})
   * @throws HubException {@code UNAUTHENTICATED} or {@code PERMISSION_DENIED} when the hub refuses
   *     the key, {@code UNAVAILABLE} when it cannot be reached
   */
  public static HubClient connect(String url, String token, Options options) {
    URI[] endpoints = endpoints(url);
    HubClient client = new HubClient(endpoints[0], endpoints[1], token, options);
    try {
      Connection first = client.dial().get();
      client.install(first);
    } catch (ExecutionException e) {
      client.close();
      throw asHubException(e.getCause());
    } catch (InterruptedException e) {
      client.close();
      Thread.currentThread().interrupt();
      throw new HubException(HubException.CANCELLED, "interrupted while connecting");
    }
    if (options.pingInterval().compareTo(Duration.ZERO) > 0) {
      long every = options.pingInterval().toNanos();
      client.timers.scheduleWithFixedDelay(client::ping, every, every, TimeUnit.NANOSECONDS);
    }
    return client;
  }

  /** Maps a base or endpoint URL to {ws endpoint, http base}. */
  static URI[] endpoints(String url) {
    try {
      URI uri = new URI(url.replaceAll("/+$", ""));
      String scheme = uri.getScheme() == null ? "" : uri.getScheme();
      String ws;
      String httpScheme;
      switch (scheme) {
        case "http", "ws" -> {
          ws = "ws";
          httpScheme = "http";
        }
        case "https", "wss" -> {
          ws = "wss";
          httpScheme = "https";
        }
        default -> throw new IllegalArgumentException(
            "bad hub URL " + url + ": the scheme must be http, https, ws or wss");
      }
      String path = uri.getPath() == null ? "" : uri.getPath();
      if (path.endsWith(APPLICATION_PATH)) {
        path = path.substring(0, path.length() - APPLICATION_PATH.length());
      }
      URI base = new URI(httpScheme, uri.getUserInfo(), uri.getHost(), uri.getPort(), path, null, null);
      URI endpoint =
          new URI(ws, uri.getUserInfo(), uri.getHost(), uri.getPort(), path + APPLICATION_PATH, null, null);
      return new URI[] {endpoint, base};
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("bad hub URL " + url + ": " + e.getMessage(), e);
    }
  }

  /** The hub's base URL (http or https). */
  public URI baseUrl() {
    return base;
  }

  /**
   * The clients of the hub's management services over gRPC, with this client's key attached. The
   * hub serves gRPC only with {@code aophub serve --http2}. Made on first use; closed with this
   * client.
   */
  public Management management() {
    Management current = management;
    if (current == null) {
      synchronized (lock) {
        if (management == null) {
          management = Management.connect(base, token, options.requestTimeout());
        }
        current = management;
      }
    }
    return current;
  }

  /** Ends the connection for good; requests and watches in flight end with {@code CLOSED}. */
  @Override
  public void close() {
    Connection current;
    synchronized (lock) {
      failLocked(HubException.closed(), true);
      current = connection;
      connection = null;
    }
    if (current != null) {
      current.close();
    }
    timers.shutdownNow();
    if (management != null) {
      management.close();
    }
  }

  @Override
  public String toString() {
    synchronized (lock) {
      return "HubClient{" + endpoint + " connected=" + (connection != null) + " pending="
          + pending.size() + " watches=" + watches.size() + "}";
    }
  }

  // ---- requests ----

  /** Opens a session on request.node_id; the hub picks the id when session_id is empty. */
  public CompletableFuture<Session> openSessionAsync(OpenSessionRequest request, CallOptions options) {
    return core(
        ProtocolMessage.newBuilder().setOpenSessionRequest(request).build(),
        options,
        answer -> accepted(answer.getOpenSessionResponse().hasRejected(),
            answer.getOpenSessionResponse().getRejected(),
            answer.getOpenSessionResponse().hasAccepted(),
            answer.getOpenSessionResponse().getAccepted(), answer));
  }

  public Session openSession(OpenSessionRequest request) {
    return await(openSessionAsync(request, CallOptions.defaults()));
  }

  public Session openSession(OpenSessionRequest request, CallOptions options) {
    return await(openSessionAsync(request, options));
  }

  /**
   * Starts a turn; the receipt comes once the hub accepted it. The turn's work arrives on a
   * {@link Watch} of the session (start it first); the turn is over with its turn_ended event.
   */
  public CompletableFuture<TurnReceipt> runTurnAsync(RunTurnRequest request, CallOptions options) {
    return core(
        ProtocolMessage.newBuilder().setRunTurnRequest(request).build(),
        options,
        answer -> accepted(answer.getRunTurnResponse().hasRejected(),
            answer.getRunTurnResponse().getRejected(),
            answer.getRunTurnResponse().hasAccepted(),
            answer.getRunTurnResponse().getAccepted(), answer));
  }

  public TurnReceipt runTurn(RunTurnRequest request) {
    return await(runTurnAsync(request, CallOptions.defaults()));
  }

  public TurnReceipt runTurn(RunTurnRequest request, CallOptions options) {
    return await(runTurnAsync(request, options));
  }

  /** Cancels a running turn: it ends with turn_ended{stop_reason: "canceled"}. */
  public CompletableFuture<TurnReceipt> cancelTurnAsync(CancelTurnRequest request, CallOptions options) {
    return core(
        ProtocolMessage.newBuilder().setCancelTurnRequest(request).build(),
        options,
        answer -> accepted(answer.getCancelTurnResponse().hasRejected(),
            answer.getCancelTurnResponse().getRejected(),
            answer.getCancelTurnResponse().hasAccepted(),
            answer.getCancelTurnResponse().getAccepted(), answer));
  }

  public TurnReceipt cancelTurn(CancelTurnRequest request) {
    return await(cancelTurnAsync(request, CallOptions.defaults()));
  }

  /** Closes a session and returns its final state. */
  public CompletableFuture<Session> closeSessionAsync(CloseSessionRequest request, CallOptions options) {
    return core(
        ProtocolMessage.newBuilder().setCloseSessionRequest(request).build(),
        options,
        answer -> accepted(answer.getCloseSessionResponse().hasRejected(),
            answer.getCloseSessionResponse().getRejected(),
            answer.getCloseSessionResponse().hasAccepted(),
            answer.getCloseSessionResponse().getAccepted(), answer));
  }

  public Session closeSession(CloseSessionRequest request) {
    return await(closeSessionAsync(request, CallOptions.defaults()));
  }

  /**
   * One page of stored events, oldest first, after request.after_cursor. A short page is not the
   * end: the end is an empty page (see {@link #events}, which pages for you).
   */
  public CompletableFuture<ListEventsResponse> listEventsAsync(ListEventsRequest request, CallOptions options) {
    return core(
        ProtocolMessage.newBuilder().setListEventsRequest(request).build(),
        options,
        answer -> {
          if (!answer.hasListEventsResponse()) {
            throw unexpected(answer);
          }
          return answer.getListEventsResponse();
        });
  }

  public ListEventsResponse listEvents(ListEventsRequest request) {
    return await(listEventsAsync(request, CallOptions.defaults()));
  }

  /** Every stored event of the session after afterCursor ("" = all), paged by ListEvents. */
  public List<Delivery> events(String sessionId, String afterCursor) {
    List<Delivery> events = new ArrayList<>();
    String after = afterCursor;
    while (true) {
      ListEventsResponse page =
          listEvents(ListEventsRequest.newBuilder().setSessionId(sessionId).setAfterCursor(after).build());
      if (page.getEventsCount() == 0) {
        return events;
      }
      page.getEventsList().forEach(d -> events.add(new Delivery(d.getCursor(), d.getEvent())));
      after = page.getNextCursor();
    }
  }

  /**
   * Answers a pending interaction (an approval or a client tool call; see {@link
   * Aop#interactionOf}) and returns it, now answered. The first answer wins: another one fails
   * with {@code FAILED_PRECONDITION}.
   */
  public CompletableFuture<Interaction> answerInteractionAsync(AnswerInteractionRequest request, CallOptions options) {
    Any payload = Any.pack(InteractionProtocolMessage.newBuilder().setAnswerRequest(request).build());
    return callAsync(payload, options)
        .thenApply(
            any -> {
              InteractionProtocolMessage answer;
              try {
                answer = any.unpack(InteractionProtocolMessage.class);
              } catch (InvalidProtocolBufferException e) {
                throw new HubException(HubException.INVALID_PAYLOAD, "unexpected answer " + any.getTypeUrl());
              }
              var response = answer.getAnswerResponse();
              return accepted(response.hasRejected(), response.getRejected(), response.hasAccepted(),
                  response.getAccepted(), answer);
            });
  }

  public Interaction answerInteraction(AnswerInteractionRequest request) {
    return await(answerInteractionAsync(request, CallOptions.defaults()));
  }

  /**
   * Sends any payload (e.g. a message of an extension namespace) and returns the hub's answer; an
   * aop.ProtocolError answer fails with a {@link HubException} of its code.
   */
  public CompletableFuture<Any> callAsync(Any payload, CallOptions options) {
    return roundTrip(payload, options)
        .thenApply(
            answer -> {
              if (answer.getTypeUrl().equals(CORE_TYPE_URL)) {
                try {
                  ProtocolMessage message = ProtocolMessage.parseFrom(answer.getValue());
                  if (message.hasProtocolError()) {
                    throw HubException.of(message.getProtocolError());
                  }
                } catch (InvalidProtocolBufferException e) {
                  throw new HubException(HubException.INVALID_PAYLOAD, "undecodable answer: " + e.getMessage());
                }
              }
              return answer;
            });
  }

  public Any call(Any payload) {
    return await(callAsync(payload, CallOptions.defaults()));
  }

  private <T> CompletableFuture<T> core(
      ProtocolMessage request, CallOptions options, Function<ProtocolMessage, T> outcome) {
    return callAsync(Any.pack(request), options)
        .thenApply(
            any -> {
              try {
                return outcome.apply(ProtocolMessage.parseFrom(any.getValue()));
              } catch (InvalidProtocolBufferException e) {
                throw new HubException(HubException.INVALID_PAYLOAD, "unexpected answer " + any.getTypeUrl());
              }
            });
  }

  private static <T> T accepted(
      boolean hasRejected, Rejection rejection, boolean hasAccepted, T value, Object answer) {
    if (hasRejected) {
      throw HubException.of(rejection);
    }
    if (!hasAccepted) {
      throw unexpected(answer);
    }
    return value;
  }

  private static HubException unexpected(Object answer) {
    return new HubException(HubException.INVALID_PAYLOAD, "the hub answered with an unexpected message: " + answer);
  }

  /**
   * Waits for a request's answer: a hub error is rethrown as is, a timeout becomes {@code
   * DEADLINE_EXCEEDED} (its cause is the TimeoutException).
   */
  static <T> T await(CompletableFuture<T> future) {
    try {
      return future.get();
    } catch (ExecutionException e) {
      throw asHubException(e.getCause());
    } catch (InterruptedException e) {
      future.cancel(true);
      Thread.currentThread().interrupt();
      throw new HubException(HubException.CANCELLED, "interrupted while waiting for the hub");
    }
  }

  static HubException asHubException(Throwable error) {
    if (error instanceof CompletionException && error.getCause() != null) {
      error = error.getCause();
    }
    if (error instanceof HubException hub) {
      return hub;
    }
    if (error instanceof TimeoutException) {
      return new HubException(HubException.DEADLINE_EXCEEDED, "no answer in time", true, error);
    }
    return new HubException(HubException.INTERNAL, String.valueOf(error), false, error);
  }

  static String newId() {
    byte[] bytes = new byte[16];
    RANDOM.nextBytes(bytes);
    return HexFormat.of().formatHex(bytes);
  }

  /**
   * Sends payload under a new envelope id (or the options' id) and waits for the answer across
   * reconnects, until the timeout. A retry with the same id is safe.
   */
  private CompletableFuture<Any> roundTrip(Any payload, CallOptions options) {
    String id = options.id() != null ? options.id() : newId();
    Duration timeout = options.timeout() != null ? options.timeout() : this.options.requestTimeout();
    if (timeout.isZero() || timeout.isNegative()) { // already over: send nothing nobody waits for
      return CompletableFuture.failedFuture(new TimeoutException("request " + id + " not sent: its timeout is over"));
    }
    byte[] frame;
    try {
      frame = frame(id, payload);
    } catch (HubException e) {
      return CompletableFuture.failedFuture(e);
    }
    Pending call = new Pending(frame);
    Connection current;
    synchronized (lock) {
      if (failed != null) {
        return CompletableFuture.failedFuture(failed);
      }
      if (pending.containsKey(id)) {
        return CompletableFuture.failedFuture(new IllegalStateException(
            "a request with envelope id " + id + " is already waiting for its answer"));
      }
      pending.put(id, call);
      current = connection;
      if (current != null) {
        call.generation = current.generation;
      }
    }
    call.answer.whenComplete(
        (answer, error) -> {
          synchronized (lock) {
            pending.remove(id, call);
          }
        });
    if (current != null) {
      current.send(frame);
    }
    return call.answer
        .orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
        .exceptionallyCompose(
            error -> CompletableFuture.failedFuture(error instanceof TimeoutException
                ? new TimeoutException("no answer to request " + id + " within " + timeout
                    + " (retry with CallOptions.id(\"" + id + "\") to make the retry safe)")
                : error));
  }

  private byte[] frame(String id, Any payload) {
    byte[] frame = Envelope.newBuilder().setId(id).setPayload(payload).build().toByteArray();
    if (frame.length > options.maxFrameBytes()) {
      throw new HubException(HubException.INVALID_ARGUMENT, "the request is " + frame.length
          + " bytes, over this client's maxFrameBytes (" + options.maxFrameBytes() + ")");
    }
    return frame;
  }

  // ---- watches ----

  /**
   * Watches the session's events after afterCursor ("" = from the beginning): first the stored
   * ones, then live ones as they happen. The hub has the watch before anything sent after this
   * returns, so start it before {@link #runTurn} to see every delta of the turn.
   *
   * <p>The watch outlives disconnects: the client dials again and watches again after the last
   * persisted event it received, so the persisted events it yields are exactly the stored
   * sequence, none missed and none twice (deltas sent while disconnected are lost; the complete
   * message after them carries the whole text). It ends when the hub refuses it (e.g. {@code
   * NOT_FOUND}, or {@code RESOURCE_EXHAUSTED} over the hub's --max-watches), or is closed.
   */
  public Watch watch(String sessionId, String afterCursor) {
    Watch watch = new Watch(this, sessionId, afterCursor);
    byte[] frame;
    Connection current;
    synchronized (lock) {
      if (failed != null) {
        throw failed;
      }
      frame = subscribeLocked(null, watch);
      current = connection;
    }
    if (current != null) {
      current.send(frame);
    }
    return watch;
  }

  /** Re-keys the watch under a new envelope id and returns the request that resumes it. */
  private byte[] subscribeLocked(String oldId, Watch watch) {
    if (oldId != null) {
      watches.remove(oldId);
    }
    String id = newId();
    watches.put(id, watch);
    watch.generation = connection != null ? connection.generation : 0;
    WatchEventsRequest request =
        WatchEventsRequest.newBuilder().setSessionId(watch.sessionId).setAfterCursor(watch.cursor).build();
    return frame(id, Any.pack(ProtocolMessage.newBuilder().setWatchEventsRequest(request).build()));
  }

  /** Forgets the watch and ends its subscription on the hub. */
  void unsubscribe(Watch watch) {
    byte[] frame = null;
    Connection current;
    synchronized (lock) {
      current = connection;
      String id = null;
      for (Map.Entry<String, Watch> entry : watches.entrySet()) {
        if (entry.getValue() == watch) {
          id = entry.getKey();
        }
      }
      if (id == null) {
        return;
      }
      watches.remove(id);
      if (current != null && watch.generation == current.generation) {
        var cancel = dev.aophub.aop.CancelOperation.newBuilder().setTargetId(id).setReason("watch stopped");
        frame = frame(newId(), Any.pack(ProtocolMessage.newBuilder().setCancelOperation(cancel).build()));
      }
    }
    if (frame != null) {
      current.send(frame);
    }
  }

  /** The cursor a watch would resume after (read under the client's lock). */
  String cursorOf(Watch watch) {
    synchronized (lock) {
      return watch.cursor;
    }
  }

  // ---- the connection ----

  private CompletableFuture<Connection> dial() {
    long next;
    synchronized (lock) {
      next = ++generation;
    }
    Connection fresh = new Connection(next, new Owner(), options.maxFrameBytes());
    return http.newWebSocketBuilder()
        .header("Authorization", "Bearer " + token)
        .connectTimeout(options.requestTimeout())
        .buildAsync(endpoint, fresh)
        .orTimeout(options.requestTimeout().toNanos(), TimeUnit.NANOSECONDS)
        .handle(
            (socket, error) -> {
              if (error == null) {
                fresh.attach(socket); // the socket is known before the first send
                return fresh;
              }
              throw new CompletionException(dialError(error));
            });
  }

  private HubException dialError(Throwable error) {
    if (error instanceof CompletionException && error.getCause() != null) {
      error = error.getCause();
    }
    if (error instanceof WebSocketHandshakeException handshake) {
      int status = handshake.getResponse().statusCode();
      if (status == 401 || status == 403) {
        String code = status == 401 ? HubException.UNAUTHENTICATED : HubException.PERMISSION_DENIED;
        Object body = handshake.getResponse().body();
        return new HubException(code, "the hub refused the connection: HTTP " + status
            + (body == null ? "" : " " + body), false, error);
      }
    }
    return new HubException(HubException.UNAVAILABLE, "cannot connect to " + endpoint + ": " + error, true, error);
  }

  /** Makes a new connection the current one and resends what waits on it. */
  private void install(Connection fresh) {
    List<byte[]> frames = new ArrayList<>();
    synchronized (lock) {
      if (failed != null) {
        fresh.close();
        return;
      }
      connection = fresh;
      // Watches first: a turn started while disconnected must find its watch already there.
      for (Map.Entry<String, Watch> entry : new ArrayList<>(watches.entrySet())) {
        if (entry.getValue().generation != fresh.generation) {
          frames.add(subscribeLocked(entry.getKey(), entry.getValue()));
        }
      }
      for (Pending call : pending.values()) {
        if (call.generation != fresh.generation) {
          call.generation = fresh.generation;
          frames.add(call.frame);
        }
      }
      for (byte[] frame : frames) {
        fresh.send(frame); // in order, before anything sent after the lock is released
      }
    }
  }

  private void ping() {
    Connection current;
    synchronized (lock) {
      current = connection;
    }
    if (current == null) {
      return;
    }
    if (System.nanoTime() - current.lastHeardNanos > 2 * options.pingInterval().toNanos()) {
      current.drop(-1, false); // nothing heard for two intervals, not even a pong: gone
    } else {
      current.ping();
    }
  }

  private final class Owner implements Connection.Owner {
    @Override
    public void received(Connection from, byte[] frame) {
      dispatch(frame);
    }

    @Override
    public void lost(Connection from, int closeCode, boolean tooBig) {
      connectionLost(from, closeCode, tooBig);
    }
  }

  private void connectionLost(Connection from, int closeCode, boolean tooBig) {
    synchronized (lock) {
      if (connection == from) {
        connection = null;
      }
      if (failed != null) {
        return;
      }
      if (tooBig) {
        failLocked(new HubException(HubException.RESOURCE_EXHAUSTED, "the hub sent a frame larger than this"
            + " client's maxFrameBytes (" + options.maxFrameBytes() + "); every request and watch in flight"
            + " failed. Raise maxFrameBytes to the hub's --max-frame-bytes to read it"), false);
      } else if (closeCode == 1009) {
        HubException refused = new HubException(HubException.RESOURCE_EXHAUSTED,
            "the hub refused a frame as too large (close code 1009); the requests in flight on that"
                + " connection failed");
        for (Pending call : new ArrayList<>(pending.values())) {
          if (call.generation == from.generation) {
            call.answer.completeExceptionally(refused);
          }
        }
      }
      if (from.heard) {
        backoff = options.reconnectMin();
      }
    }
    scheduleReconnect();
  }

  private void scheduleReconnect() {
    long wait;
    synchronized (lock) {
      if (failed != null) {
        return;
      }
      wait = jitter(backoff);
      backoff = backoff.multipliedBy(2);
      if (backoff.compareTo(options.reconnectMax()) > 0) {
        backoff = options.reconnectMax();
      }
    }
    schedule(this::reconnect, wait);
  }

  /** A wait between half and all of d, so that clients cut off together do not return at once. */
  private static long jitter(Duration d) {
    long nanos = d.toNanos();
    return nanos / 2 + ThreadLocalRandom.current().nextLong(nanos / 2 + 1);
  }

  private void reconnect() {
    synchronized (lock) {
      if (failed != null) {
        return;
      }
    }
    dial().whenComplete(
        (fresh, error) -> {
          if (error == null) {
            install(fresh);
            return;
          }
          HubException refused = asHubException(error);
          if (refused.code().equals(HubException.UNAUTHENTICATED)
              || refused.code().equals(HubException.PERMISSION_DENIED)) {
            synchronized (lock) {
              failLocked(refused, true); // the key changed: retrying cannot help
            }
            return;
          }
          scheduleReconnect();
        });
  }

  private void failLocked(HubException error, boolean forGood) {
    if (forGood && failed == null) {
      failed = error;
    }
    for (Pending call : new ArrayList<>(pending.values())) {
      call.answer.completeExceptionally(error);
    }
    pending.clear();
    for (Watch watch : new ArrayList<>(watches.values())) {
      watch.end(error);
    }
    watches.clear();
  }

  /** Routes one frame from the hub by its reply_to. */
  private void dispatch(byte[] data) {
    Envelope envelope;
    try {
      envelope = Envelope.parseFrom(data);
    } catch (InvalidProtocolBufferException e) {
      return; // not an envelope: nothing waits for it
    }
    String replyTo = envelope.getReplyTo();
    Watch watch;
    Pending call;
    synchronized (lock) {
      watch = watches.get(replyTo);
      call = watch == null ? pending.remove(replyTo) : null;
    }
    if (watch != null) {
      deliver(watch, replyTo, envelope);
    } else if (call != null) {
      call.answer.complete(envelope.getPayload());
    }
  }

  /** Queues one frame of a watch's subscription for its consumer, never waiting for it. */
  private void deliver(Watch watch, String id, Envelope envelope) {
    if (!envelope.getPayload().getTypeUrl().equals(CORE_TYPE_URL)) {
      return;
    }
    ProtocolMessage message;
    try {
      message = ProtocolMessage.parseFrom(envelope.getPayload().getValue());
    } catch (InvalidProtocolBufferException e) {
      return;
    }
    if (message.hasProtocolError()) {
      watchFailed(watch, id, HubException.of(message.getProtocolError()));
      return;
    }
    if (!message.hasEvent()) {
      return;
    }
    String cursor = envelope.getDeliveryCursor();
    if (!cursor.isEmpty()) {
      synchronized (lock) {
        if (watches.get(id) != watch || cursor.equals(watch.cursor)) {
          return; // a stale subscription, or the event the watch resumed after
        }
        watch.cursor = cursor;
      }
    }
    watch.push(new Delivery(cursor, message.getEvent()));
  }

  /** Ends the watch on a refusal, or watches again after a backoff when it is temporary. */
  private void watchFailed(Watch watch, String id, HubException error) {
    synchronized (lock) {
      if (watches.get(id) != watch) {
        return;
      }
      if (!error.retryable()) {
        watches.remove(id);
        watch.end(error);
        return;
      }
      watch.generation = 0; // no live subscription: the next connection's install sends one
    }
    schedule(
        () -> {
          byte[] frame;
          Connection current;
          synchronized (lock) {
            current = connection;
            if (watches.get(id) != watch || current == null || watch.generation != 0) {
              return;
            }
            frame = subscribeLocked(id, watch);
          }
          current.send(frame);
        },
        jitter(options.reconnectMin()));
  }

  /** Runs task after nanos on the client's timer, unless the client was closed meanwhile. */
  private void schedule(Runnable task, long nanos) {
    try {
      timers.schedule(task, nanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException closed) {
      // the client was closed: nothing is to be done any more
    }
  }
}
