package dev.aophub.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.aophub.aop.OpenSessionRequest;
import dev.aophub.aop.RunTurnRequest;
import dev.aophub.aop.Session;
import dev.aophub.aop.TurnReceipt;
import dev.aophub.api.v1.GetSessionRequest;
import dev.aophub.api.v1.GetStatusRequest;
import dev.aophub.api.v1.GetStatusResponse;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The client's own behaviour beyond the shared scenario, against the real hub of TestHub. */
@Timeout(60)
class HubClientTest {
  @Test
  void endpointsFromBaseOrEndpointUrl() {
    URI[] plain = HubClient.endpoints("http://127.0.0.1:8080/");
    assertEquals("ws://127.0.0.1:8080/api/aop/application/ws", plain[0].toString());
    assertEquals("http://127.0.0.1:8080", plain[1].toString());
    URI[] tls = HubClient.endpoints("wss://hub.example/prefix/api/aop/application/ws");
    assertEquals("wss://hub.example/prefix/api/aop/application/ws", tls[0].toString());
    assertEquals("https://hub.example/prefix", tls[1].toString());
    assertThrows(IllegalArgumentException.class, () -> HubClient.endpoints("ftp://hub"));
  }

  @Test
  void requestOverTheFrameLimitIsRefusedBeforeSending() throws Exception {
    TestHub hub = TestHub.get();
    try (HubClient client = HubClient.connect(hub.url, hub.token, Options.defaults().withMaxFrameBytes(1024))) {
      RunTurnRequest huge = RunTurnRequest.newBuilder().setSessionId("s").setInput(Aop.userText("x".repeat(2048))).build();
      HubException refused = assertThrows(HubException.class, () -> client.runTurn(huge));
      assertEquals(HubException.INVALID_ARGUMENT, refused.code());
      // The connection is still fine.
      assertFalse(client.openSession(OpenSessionRequest.newBuilder().setNodeId(hub.node).build()).getId().isEmpty());
    }
  }

  @Test
  void eventOverTheFrameLimitFailsTheWatch() throws Exception {
    TestHub hub = TestHub.get();
    try (HubClient client = HubClient.connect(hub.url, hub.token, Options.defaults().withMaxFrameBytes(1 << 20))) {
      Session session = client.openSession(OpenSessionRequest.newBuilder().setNodeId(hub.node).build());
      try (Watch watch = client.watch(session.getId(), "")) {
        client.runTurn(RunTurnRequest.newBuilder().setSessionId(session.getId()).setInput(Aop.userText("big 2000000")).build());
        HubException tooBig = assertThrows(HubException.class, () -> {
          while (true) {
            watch.next();
          }
        });
        assertEquals(HubException.RESOURCE_EXHAUSTED, tooBig.code());
        assertTrue(tooBig.getMessage().contains("maxFrameBytes"), tooBig.getMessage());
      }
    }
  }

  /** A request made while the connection is down goes out, with its id, on the next one. */
  @Test
  void requestSurvivesACutWithItsId() throws Exception {
    TestHub hub = TestHub.get();
    try (CuttableProxy network = new CuttableProxy(hub.url);
        HubClient client = HubClient.connect(network.url(), hub.token,
            Options.defaults().withReconnect(java.time.Duration.ofMillis(200), java.time.Duration.ofMillis(400)))) {
      OpenSessionRequest request = OpenSessionRequest.newBuilder().setNodeId(hub.node).setTitle("cut").build();
      String id = HubClient.newId();
      assertEquals(1, network.cut());
      Session first = client.openSession(request, CallOptions.id(id)); // sent on the second connection
      assertEquals(2, network.dials());
      Session again = client.openSession(request, CallOptions.id(id)); // the hub's stored answer
      assertEquals(first.getId(), again.getId());
    }
  }

  @Test
  void managementOverGrpcWithTheToken() throws Exception {
    TestHub hub = TestHub.get();
    try (HubClient client = HubClient.connect(hub.url, hub.token)) {
      Session session = client.openSession(OpenSessionRequest.newBuilder().setNodeId(hub.node).setTitle("grpc").build());
      GetStatusResponse status = client.management().system.getStatus(GetStatusRequest.getDefaultInstance());
      assertFalse(status.getVersion().isEmpty());
      var info = client.management().sessions.getSession(GetSessionRequest.newBuilder().setSessionId(session.getId()).build());
      assertEquals("grpc", info.getSession().getTitle());
    }
  }

  /** The watch as a Flow.Publisher: deliveries as requested, and cancel closes it. */
  @Test
  void watchAsPublisher() throws Exception {
    TestHub hub = TestHub.get();
    try (HubClient client = HubClient.connect(hub.url, hub.token)) {
      Session session = client.openSession(OpenSessionRequest.newBuilder().setNodeId(hub.node).build());
      Watch watch = client.watch(session.getId(), "");
      TurnReceipt turn = client.runTurn(RunTurnRequest.newBuilder().setSessionId(session.getId()).setInput(Aop.userText("hello")).build());
      CompletableFuture<List<Delivery>> ended = new CompletableFuture<>();
      watch.subscribe(new Flow.Subscriber<Delivery>() {
        final List<Delivery> seen = new ArrayList<>();
        Flow.Subscription subscription;

        @Override
        public void onSubscribe(Flow.Subscription subscription) {
          this.subscription = subscription;
          subscription.request(1);
        }

        @Override
        public void onNext(Delivery delivery) {
          seen.add(delivery);
          if (Aop.turnEnded(delivery.event(), turn.getTurnId())) {
            subscription.cancel();
            ended.complete(seen);
          } else {
            subscription.request(1);
          }
        }

        @Override
        public void onError(Throwable error) {
          ended.completeExceptionally(error);
        }

        @Override
        public void onComplete() {}
      });
      List<Delivery> seen = ended.get(30, TimeUnit.SECONDS);
      assertTrue(seen.stream().anyMatch(d -> d.event().hasMessage() && Aop.text(d.event().getMessage()).strip().equals("echo: hello")));
      assertEquals(HubException.CLOSED, assertThrows(HubException.class, watch::next).code());
    }
  }
}
