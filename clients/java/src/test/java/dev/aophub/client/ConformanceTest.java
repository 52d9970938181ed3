package dev.aophub.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import dev.aophub.aop.AgentHello;
import dev.aophub.aop.AgentStatus;
import dev.aophub.aop.CancelTurnRequest;
import dev.aophub.aop.CloseSessionRequest;
import dev.aophub.aop.Event;
import dev.aophub.aop.OpenSessionRequest;
import dev.aophub.aop.ProtocolMessage;
import dev.aophub.aop.RunTurnRequest;
import dev.aophub.aop.Session;
import dev.aophub.aop.TurnReceipt;
import dev.aophub.api.v1.GetSessionRequest;
import dev.aophub.api.v1.GetStatusRequest;
import dev.aophub.api.v1.Interaction;
import dev.aophub.api.v1.InteractionKind;
import dev.aophub.api.v1.InteractionState;
import dev.aophub.api.v1.TurnOptions;
import dev.aophub.api.v1.TurnPolicy;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The shared client conformance scenario (clients/conformance/README.md), against the real hub of
 * {@link TestHub}.
 */
@Timeout(60)
class ConformanceTest {
  private final List<AutoCloseable> cleanup = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = cleanup.size() - 1; i >= 0; i--) {
      cleanup.get(i).close();
    }
  }

  private HubClient connect(Options options) throws Exception {
    return connect(TestHub.get().url, options);
  }

  private HubClient connect(String url, Options options) throws Exception {
    HubClient client = HubClient.connect(url, TestHub.get().token, options);
    cleanup.add(client);
    return client;
  }

  private Session open(HubClient client) throws Exception {
    return client.openSession(OpenSessionRequest.newBuilder().setNodeId(TestHub.get().node).build());
  }

  private static TurnReceipt run(HubClient client, String sessionId, String text, com.google.protobuf.Message... extensions) {
    RunTurnRequest.Builder request = RunTurnRequest.newBuilder().setSessionId(sessionId).setInput(Aop.userText(text));
    for (com.google.protobuf.Message extension : extensions) {
      request.addExtensions(Any.pack(extension));
    }
    return client.runTurn(request.build());
  }

  private Watch watch(HubClient client, String sessionId, String after) {
    Watch watch = client.watch(sessionId, after);
    cleanup.add(watch);
    return watch;
  }

  private static Delivery until(Watch watch, Predicate<Delivery> match) {
    while (true) {
      Delivery delivery = watch.next();
      if (match.test(delivery)) {
        return delivery;
      }
    }
  }

  private static Predicate<Delivery> turnEnded(String turnId) {
    return d -> Aop.turnEnded(d.event(), turnId);
  }

  private static void assertCode(String code, Throwable error) {
    HubException hub = assertInstanceOf(HubException.class, error, () -> "want " + code + ", got " + error);
    assertEquals(code, hub.code(), hub::getMessage);
  }

  private static void sameSequence(List<Delivery> got, List<Delivery> want) {
    assertEquals(want.size(), got.size(), "persisted events the watch yielded vs stored");
    for (int i = 0; i < want.size(); i++) {
      assertEquals(want.get(i).cursor(), got.get(i).cursor(), "cursor of event " + i);
      assertEquals(want.get(i).event(), got.get(i).event(), "event " + i);
    }
  }

  /** Scenario 1: open a session, run two turns to their end, cancel a third. */
  @Test
  void turns() throws Exception {
    HubClient client = connect(Options.defaults());
    Session session = open(client);
    Watch watch = watch(client, session.getId(), "");
    for (String text : List.of("hello", "again")) {
      TurnReceipt receipt = run(client, session.getId(), text);
      StringBuilder answer = new StringBuilder();
      Delivery ended = until(watch, d -> {
        Event event = d.event();
        if (event.hasMessage() && event.getMessage().getRole().equals("assistant") && event.getTurnId().equals(receipt.getTurnId())) {
          answer.setLength(0);
          answer.append(Aop.text(event.getMessage()));
        }
        return Aop.turnEnded(event, receipt.getTurnId());
      });
      assertEquals("completed", ended.event().getTurnEnded().getStopReason());
      assertEquals("echo: " + text, answer.toString().strip());
    }
    TurnReceipt long_ = run(client, session.getId(), "long");
    until(watch, d -> d.event().hasMessage() && d.event().getTurnId().equals(long_.getTurnId()));
    TurnReceipt canceled = client.cancelTurn(CancelTurnRequest.newBuilder()
        .setSessionId(session.getId()).setTurnId(long_.getTurnId()).setReason("conformance").build());
    assertEquals("canceled", canceled.getState());
    assertEquals("canceled", until(watch, turnEnded(long_.getTurnId())).event().getTurnEnded().getStopReason());

    Map<String, Integer> starts = new HashMap<>();
    Map<String, Integer> ends = new HashMap<>();
    for (Delivery d : client.events(session.getId(), "")) {
      if (d.event().hasTurnStarted()) {
        starts.merge(d.event().getTurnId(), 1, Integer::sum);
      }
      if (d.event().hasTurnEnded()) {
        ends.merge(d.event().getTurnId(), 1, Integer::sum);
      }
    }
    assertEquals(3, starts.size(), "turns started " + starts);
    assertEquals(starts.keySet(), ends.keySet());
    starts.values().forEach(n -> assertEquals(1, n));
    ends.values().forEach(n -> assertEquals(1, n));

    Session closed = client.closeSession(CloseSessionRequest.newBuilder().setSessionId(session.getId()).setReason("done").build());
    assertEquals("closed", closed.getState());
  }

  /**
   * Scenario 2: the connection is cut 20 times during a long turn; the watch still yields exactly
   * the stored sequence, and a new watch from a saved cursor yields exactly the rest.
   */
  @Test
  void resumeAcrossCuts() throws Exception {
    final int cuts = 20;
    CuttableProxy network = new CuttableProxy(TestHub.get().url);
    // Short pings too: the JDK's WebSocket notices a TCP connection closed under it only when it
    // next writes (see Options.pingInterval).
    cleanup.add(network);
    HubClient client = connect(network.url(), Options.defaults().withReconnect(Duration.ofMillis(5), Duration.ofMillis(50)).withPingInterval(Duration.ofMillis(100)));
    Session session = open(client);
    Watch watch = watch(client, session.getId(), "");
    TurnReceipt turn = run(client, session.getId(), "long");
    List<Delivery> yielded = new ArrayList<>();
    int done = 0;
    while (true) {
      Delivery d = watch.next();
      if (!d.persisted()) {
        continue;
      }
      yielded.add(d);
      if (Aop.turnEnded(d.event(), turn.getTurnId())) {
        break;
      }
      if (!d.event().getTurnId().equals(turn.getTurnId()) || !d.event().hasMessage()) {
        continue;
      }
      // Cut each connection once, after a persisted event of the turn: the next cut waits
      // until the client has dialled again.
      if (done < cuts && network.dials() == done + 1 && network.cut() > 0) {
        done++;
      } else if (done == cuts) {
        client.cancelTurn(CancelTurnRequest.newBuilder().setSessionId(session.getId()).setTurnId(turn.getTurnId()).build());
        done++;
      }
    }
    assertTrue(done > cuts, "the long turn ended after " + done + " cuts, before " + cuts);
    assertEquals(cuts + 1, network.dials(), "dials for " + cuts + " cuts");
    List<Delivery> stored = client.events(session.getId(), "");
    sameSequence(yielded, stored);

    // A program restarted with a saved cursor resumes exactly after it.
    int saved = stored.size() / 2;
    HubClient restarted = connect(Options.defaults());
    Watch rest = watch(restarted, session.getId(), stored.get(saved).cursor());
    List<Delivery> resumed = new ArrayList<>();
    while (resumed.size() < stored.size() - saved - 1) {
      Delivery d = rest.next();
      if (d.persisted()) {
        resumed.add(d);
      }
    }
    sameSequence(resumed, stored.subList(saved + 1, stored.size()));
    System.out.printf("conformance: %d persisted events through %d cuts and %d dials, identical to ListEvents%n",
        yielded.size(), cuts, network.dials());
  }

  /** Scenario 3: a turn waits for an approval, which the client answers. */
  @Test
  void approval() throws Exception {
    HubClient client = connect(Options.defaults());
    Session session = open(client);
    Watch watch = watch(client, session.getId(), "");
    TurnReceipt turn = run(client, session.getId(), "approve");
    Interaction[] pending = new Interaction[1];
    until(watch, d -> {
      pending[0] = Aop.interactionOf(d.event());
      return pending[0] != null && pending[0].getState() == InteractionState.INTERACTION_STATE_PENDING;
    });
    assertEquals(InteractionKind.INTERACTION_KIND_APPROVAL, pending[0].getKind());
    assertEquals(turn.getTurnId(), pending[0].getTurnId());
    Interaction answered = client.answerInteraction(Aop.approve(pending[0].getId(), true, "conformance"));
    assertEquals(InteractionState.INTERACTION_STATE_ANSWERED, answered.getState());
    String[] result = new String[1];
    until(watch, d -> {
      if (d.event().hasToolResult() && d.event().getToolResult().getCallId().equals(pending[0].getCall().getId())) {
        result[0] = d.event().getToolResult().getOutput(0).getText().getText();
      }
      return Aop.turnEnded(d.event(), turn.getTurnId());
    });
    assertEquals("approved", result[0]);
    HubException again = assertThrows(HubException.class,
        () -> client.answerInteraction(Aop.approve(pending[0].getId(), false, "too late")));
    assertCode(HubException.FAILED_PRECONDITION, again);
  }

  /** Scenario 4: a 2 MB event arrives whole, live and from the store. */
  @Test
  void bigEvent() throws Exception {
    final int size = 2_000_000;
    HubClient client = connect(Options.defaults());
    Session session = open(client);
    Watch watch = watch(client, session.getId(), "");
    TurnReceipt turn = run(client, session.getId(), "big " + size);
    String id = "big_" + turn.getTurnId();
    Delivery big = until(watch, d -> d.event().getMessage().getId().equals(id));
    assertEquals(size, Aop.text(big.event().getMessage()).length());
    assertTrue(big.persisted());
    until(watch, turnEnded(turn.getTurnId()));
    boolean whole = client.events(session.getId(), "").stream()
        .anyMatch(d -> d.event().getMessage().getId().equals(id) && Aop.text(d.event().getMessage()).length() == size);
    assertTrue(whole, "ListEvents does not return the 2 MB message whole");
  }

  // Scenario 5: a request refused with each error code the hub can give.

  @Test
  void unauthenticated() throws Exception {
    HubException refused = assertThrows(HubException.class, () -> HubClient.connect(TestHub.get().url, "not-the-key"));
    assertCode(HubException.UNAUTHENTICATED, refused);
    try (Management management = Management.connect(URI.create(TestHub.get().url), "not-the-key", Duration.ofSeconds(10))) {
      StatusRuntimeException error = assertThrows(StatusRuntimeException.class,
          () -> management.system.getStatus(GetStatusRequest.getDefaultInstance()));
      assertEquals(Status.Code.UNAUTHENTICATED, error.getStatus().getCode());
    }
  }

  @Test
  void invalidArgument() throws Exception {
    HubClient client = connect(Options.defaults());
    assertCode(HubException.INVALID_ARGUMENT,
        assertThrows(HubException.class, () -> client.openSession(OpenSessionRequest.getDefaultInstance())));
  }

  @Test
  void notFound() throws Exception {
    HubClient client = connect(Options.defaults());
    assertCode(HubException.NOT_FOUND, assertThrows(HubException.class, () -> run(client, "no-such-session", "hi")));
    Watch watch = watch(client, "no-such-session", "");
    assertCode(HubException.NOT_FOUND, assertThrows(HubException.class, watch::next));
    StatusRuntimeException error = assertThrows(StatusRuntimeException.class,
        () -> client.management().sessions.getSession(GetSessionRequest.newBuilder().setSessionId("no-such-session").build()));
    assertEquals(Status.Code.NOT_FOUND, error.getStatus().getCode());
  }

  @Test
  void alreadyExists() throws Exception {
    HubClient client = connect(Options.defaults());
    String id = "conformance-open-" + HubClient.newId();
    OpenSessionRequest one = OpenSessionRequest.newBuilder().setNodeId(TestHub.get().node).setTitle("one").build();
    Session first = client.openSession(one, CallOptions.id(id));
    Session again = client.openSession(one, CallOptions.id(id));
    assertEquals(first.getId(), again.getId(), "the same id and body must return the stored answer");
    OpenSessionRequest two = one.toBuilder().setTitle("two").build();
    assertCode(HubException.ALREADY_EXISTS, assertThrows(HubException.class, () -> client.openSession(two, CallOptions.id(id))));
  }

  @Test
  void failedPrecondition() throws Exception {
    HubClient client = connect(Options.defaults());
    Session session = open(client);
    TurnReceipt long_ = run(client, session.getId(), "long");
    TurnOptions reject = TurnOptions.newBuilder().setPolicy(TurnPolicy.TURN_POLICY_REJECT).build();
    assertCode(HubException.FAILED_PRECONDITION,
        assertThrows(HubException.class, () -> run(client, session.getId(), "hello", reject)));
    client.cancelTurn(CancelTurnRequest.newBuilder().setSessionId(session.getId()).setTurnId(long_.getTurnId()).build());
  }

  @Test
  void unavailable() throws Exception {
    HubClient client = connect(Options.defaults());
    HubException refused = assertThrows(HubException.class,
        () -> client.openSession(OpenSessionRequest.newBuilder().setNodeId("offline-node").build()));
    assertCode(HubException.UNAVAILABLE, refused);
    assertTrue(refused.retryable(), "an offline node's refusal must be retryable");
  }

  @Test
  void resourceExhausted() throws Exception {
    HubClient client = connect(Options.defaults());
    Session session = open(client);
    HubClient watchers = connect(Options.defaults());
    for (int i = 0; i < TestHub.get().maxWatches; i++) {
      watch(watchers, session.getId(), "").next(); // delivered: the watch runs on the hub
    }
    Watch oneTooMany = watch(watchers, session.getId(), "");
    assertCode(HubException.RESOURCE_EXHAUSTED, assertThrows(HubException.class, oneTooMany::next));
  }

  @Test
  void invalidPayload() throws Exception {
    HubClient client = connect(Options.defaults());
    Any garbage = Any.newBuilder().setTypeUrl("type.googleapis.com/aop.ProtocolMessage")
        .setValue(ByteString.copyFrom(new byte[] {(byte) 0xff, (byte) 0xff})).build();
    assertCode(HubException.INVALID_PAYLOAD, assertThrows(HubException.class, () -> client.call(garbage)));
  }

  @Test
  void unsupportedNamespace() throws Exception {
    HubClient client = connect(Options.defaults());
    Any session = Any.pack(Session.newBuilder().setId("any").build());
    assertCode(HubException.UNSUPPORTED_NAMESPACE, assertThrows(HubException.class, () -> client.call(session)));
  }

  @Test
  void unsupportedMessage() throws Exception {
    HubClient client = connect(Options.defaults());
    Any status = Any.pack(ProtocolMessage.newBuilder().setAgentStatus(AgentStatus.getDefaultInstance()).build());
    assertCode(HubException.UNSUPPORTED_MESSAGE, assertThrows(HubException.class, () -> client.call(status)));
  }

  @Test
  void wrongEndpoint() throws Exception {
    HubClient fresh = connect(Options.defaults().withReconnect(Duration.ofMillis(5), Duration.ofMillis(50)));
    Any hello = Any.pack(ProtocolMessage.newBuilder().setAgentHello(AgentHello.newBuilder().setNodeId("not-here")).build());
    assertCode(HubException.WRONG_ENDPOINT, assertThrows(HubException.class, () -> fresh.call(hello)));
    // The hub closed that connection; the client dials again for what comes next.
    assertNotNull(open(fresh).getId());
  }

  /** A request whose timeout is already over fails with Java's TimeoutException. */
  @Test
  void requestTimeout() throws Exception {
    HubClient client = connect(Options.defaults());
    OpenSessionRequest request = OpenSessionRequest.newBuilder().setNodeId(TestHub.get().node).build();
    ExecutionException error = assertThrows(ExecutionException.class,
        () -> client.openSessionAsync(request, CallOptions.timeout(Duration.ZERO)).get());
    assertInstanceOf(TimeoutException.class, error.getCause());
    HubException sync = assertThrows(HubException.class, () -> client.openSession(request, CallOptions.timeout(Duration.ofNanos(-1))));
    assertCode(HubException.DEADLINE_EXCEEDED, sync);
    assertInstanceOf(TimeoutException.class, sync.getCause());
    if (sync.getCause() == null) {
      fail("no cause");
    }
  }
}
