package dev.aophub.client;

import dev.aophub.api.v1.AgentServiceGrpc;
import dev.aophub.api.v1.ArtifactServiceGrpc;
import dev.aophub.api.v1.ConfigServiceGrpc;
import dev.aophub.api.v1.InteractionServiceGrpc;
import dev.aophub.api.v1.ScanServiceGrpc;
import dev.aophub.api.v1.SessionServiceGrpc;
import dev.aophub.api.v1.SystemServiceGrpc;
import dev.aophub.api.v1.TokenServiceGrpc;
import io.grpc.CallCredentials;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * The hub's management services over gRPC (the grpc-java stubs generated into
 * dev.aophub:aophub-proto), with the access key attached to every call as a call credential and
 * the request timeout as the deadline of a call that has none. The hub serves gRPC beside
 * HTTP/1.1 on its port with {@code aophub serve --http2} (cleartext HTTP/2 with prior knowledge;
 * an https URL uses TLS). Errors are {@link io.grpc.StatusRuntimeException}s with the same codes
 * as Connect.
 *
 * <p>The blocking stubs are fields; {@link #channel()} and {@link #credentials()} make any other
 * stub (async, future): {@code SessionServiceGrpc.newFutureStub(m.channel()).withCallCredentials(
 * m.credentials())}.
 */
public final class Management implements AutoCloseable {
  private final ManagedChannel channel;
  private final CallCredentials credentials;

  public final SystemServiceGrpc.SystemServiceBlockingStub system;
  public final SessionServiceGrpc.SessionServiceBlockingStub sessions;
  public final AgentServiceGrpc.AgentServiceBlockingStub agents;
  public final InteractionServiceGrpc.InteractionServiceBlockingStub interactions;
  public final ConfigServiceGrpc.ConfigServiceBlockingStub config;
  public final TokenServiceGrpc.TokenServiceBlockingStub tokens;
  public final ArtifactServiceGrpc.ArtifactServiceBlockingStub artifacts;
  public final ScanServiceGrpc.ScanServiceBlockingStub scans;

  private Management(ManagedChannel channel, String token) {
    this.channel = channel;
    this.credentials = bearer(token);
    system = SystemServiceGrpc.newBlockingStub(channel).withCallCredentials(credentials);
    sessions = SessionServiceGrpc.newBlockingStub(channel).withCallCredentials(credentials);
    agents = AgentServiceGrpc.newBlockingStub(channel).withCallCredentials(credentials);
    interactions = InteractionServiceGrpc.newBlockingStub(channel).withCallCredentials(credentials);
    config = ConfigServiceGrpc.newBlockingStub(channel).withCallCredentials(credentials);
    tokens = TokenServiceGrpc.newBlockingStub(channel).withCallCredentials(credentials);
    artifacts = ArtifactServiceGrpc.newBlockingStub(channel).withCallCredentials(credentials);
    scans = ScanServiceGrpc.newBlockingStub(channel).withCallCredentials(credentials);
  }

  /**
   * A channel to the hub at baseUrl (http://host:port, or https:// for TLS) with the key
   * attached; timeout is the deadline of each call that sets none.
   */
  public static Management connect(URI baseUrl, String token, Duration timeout) {
    int port = baseUrl.getPort();
    boolean tls = "https".equals(baseUrl.getScheme());
    ManagedChannelBuilder<?> builder =
        ManagedChannelBuilder.forAddress(baseUrl.getHost(), port != -1 ? port : tls ? 443 : 80);
    if (tls) {
      builder.useTransportSecurity();
    } else {
      builder.usePlaintext();
    }
    return new Management(builder.intercept(defaultDeadline(timeout)).build(), token);
  }

  /** The channel, for other stubs; attach {@link #credentials()} to them. */
  public Channel channel() {
    return channel;
  }

  /** The access key as a call credential ({@code authorization: Bearer <token>}). */
  public CallCredentials credentials() {
    return credentials;
  }

  @Override
  public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Sends {@code authorization: Bearer <token>} with each call. */
  static CallCredentials bearer(String token) {
    Metadata.Key<String> authorization = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
    return new CallCredentials() {
      @Override
      public void applyRequestMetadata(RequestInfo info, Executor executor, MetadataApplier applier) {
        try {
          Metadata headers = new Metadata();
          headers.put(authorization, "Bearer " + token);
          applier.apply(headers);
        } catch (RuntimeException e) {
          applier.fail(Status.UNAUTHENTICATED.withCause(e));
        }
      }
    };
  }

  private static ClientInterceptor defaultDeadline(Duration timeout) {
    return new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(
          MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        if (options.getDeadline() == null && !timeout.isNegative() && !timeout.isZero()) {
          options = options.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS);
        }
        return next.newCall(method, options);
      }
    };
  }
}
