package dev.aophub.api.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * TokenService creates, lists and revokes the hub's named access tokens.
 * Only an admin token (or the access key) may call it. A token's secret is
 * returned once, by CreateToken; the hub keeps only a salted hash of it.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class TokenServiceGrpc {

  private TokenServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "aophub.v1.TokenService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.CreateTokenRequest,
      dev.aophub.api.v1.CreateTokenResponse> getCreateTokenMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CreateToken",
      requestType = dev.aophub.api.v1.CreateTokenRequest.class,
      responseType = dev.aophub.api.v1.CreateTokenResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.CreateTokenRequest,
      dev.aophub.api.v1.CreateTokenResponse> getCreateTokenMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.CreateTokenRequest, dev.aophub.api.v1.CreateTokenResponse> getCreateTokenMethod;
    if ((getCreateTokenMethod = TokenServiceGrpc.getCreateTokenMethod) == null) {
      synchronized (TokenServiceGrpc.class) {
        if ((getCreateTokenMethod = TokenServiceGrpc.getCreateTokenMethod) == null) {
          TokenServiceGrpc.getCreateTokenMethod = getCreateTokenMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.CreateTokenRequest, dev.aophub.api.v1.CreateTokenResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CreateToken"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.CreateTokenRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.CreateTokenResponse.getDefaultInstance()))
              .setSchemaDescriptor(new TokenServiceMethodDescriptorSupplier("CreateToken"))
              .build();
        }
      }
    }
    return getCreateTokenMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.ListTokensRequest,
      dev.aophub.api.v1.ListTokensResponse> getListTokensMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListTokens",
      requestType = dev.aophub.api.v1.ListTokensRequest.class,
      responseType = dev.aophub.api.v1.ListTokensResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.ListTokensRequest,
      dev.aophub.api.v1.ListTokensResponse> getListTokensMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.ListTokensRequest, dev.aophub.api.v1.ListTokensResponse> getListTokensMethod;
    if ((getListTokensMethod = TokenServiceGrpc.getListTokensMethod) == null) {
      synchronized (TokenServiceGrpc.class) {
        if ((getListTokensMethod = TokenServiceGrpc.getListTokensMethod) == null) {
          TokenServiceGrpc.getListTokensMethod = getListTokensMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.ListTokensRequest, dev.aophub.api.v1.ListTokensResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListTokens"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListTokensRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListTokensResponse.getDefaultInstance()))
              .setSchemaDescriptor(new TokenServiceMethodDescriptorSupplier("ListTokens"))
              .build();
        }
      }
    }
    return getListTokensMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.RevokeTokenRequest,
      dev.aophub.api.v1.RevokeTokenResponse> getRevokeTokenMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "RevokeToken",
      requestType = dev.aophub.api.v1.RevokeTokenRequest.class,
      responseType = dev.aophub.api.v1.RevokeTokenResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.RevokeTokenRequest,
      dev.aophub.api.v1.RevokeTokenResponse> getRevokeTokenMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.RevokeTokenRequest, dev.aophub.api.v1.RevokeTokenResponse> getRevokeTokenMethod;
    if ((getRevokeTokenMethod = TokenServiceGrpc.getRevokeTokenMethod) == null) {
      synchronized (TokenServiceGrpc.class) {
        if ((getRevokeTokenMethod = TokenServiceGrpc.getRevokeTokenMethod) == null) {
          TokenServiceGrpc.getRevokeTokenMethod = getRevokeTokenMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.RevokeTokenRequest, dev.aophub.api.v1.RevokeTokenResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "RevokeToken"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.RevokeTokenRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.RevokeTokenResponse.getDefaultInstance()))
              .setSchemaDescriptor(new TokenServiceMethodDescriptorSupplier("RevokeToken"))
              .build();
        }
      }
    }
    return getRevokeTokenMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static TokenServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<TokenServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<TokenServiceStub>() {
        @java.lang.Override
        public TokenServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new TokenServiceStub(channel, callOptions);
        }
      };
    return TokenServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static TokenServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<TokenServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<TokenServiceBlockingV2Stub>() {
        @java.lang.Override
        public TokenServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new TokenServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return TokenServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static TokenServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<TokenServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<TokenServiceBlockingStub>() {
        @java.lang.Override
        public TokenServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new TokenServiceBlockingStub(channel, callOptions);
        }
      };
    return TokenServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static TokenServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<TokenServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<TokenServiceFutureStub>() {
        @java.lang.Override
        public TokenServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new TokenServiceFutureStub(channel, callOptions);
        }
      };
    return TokenServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * TokenService creates, lists and revokes the hub's named access tokens.
   * Only an admin token (or the access key) may call it. A token's secret is
   * returned once, by CreateToken; the hub keeps only a salted hash of it.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * CreateToken makes a new named token and returns its secret (shown once).
     * ALREADY_EXISTS when a token of that name exists; INVALID_ARGUMENT for a
     * bad name, scope, node id pattern or expiry, and for the add-on scopes
     * "workspace" and "terminal" given alone (they go beside "app" or "read").
     * Not journaled: a
     * journaled response would keep the secret in clear; the name is the
     * idempotency key (a retried create gets ALREADY_EXISTS).
     * </pre>
     */
    default void createToken(dev.aophub.api.v1.CreateTokenRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.CreateTokenResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCreateTokenMethod(), responseObserver);
    }

    /**
     * <pre>
     * ListTokens returns every token (never a secret), ordered by name.
     * </pre>
     */
    default void listTokens(dev.aophub.api.v1.ListTokensRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListTokensResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListTokensMethod(), responseObserver);
    }

    /**
     * <pre>
     * RevokeToken deletes a token: it is refused from now on and the
     * connections it opened are closed. NOT_FOUND when no token has that name
     * (so a retried revoke changes nothing).
     * </pre>
     */
    default void revokeToken(dev.aophub.api.v1.RevokeTokenRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.RevokeTokenResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRevokeTokenMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service TokenService.
   * <pre>
   * TokenService creates, lists and revokes the hub's named access tokens.
   * Only an admin token (or the access key) may call it. A token's secret is
   * returned once, by CreateToken; the hub keeps only a salted hash of it.
   * </pre>
   */
  public static abstract class TokenServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return TokenServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service TokenService.
   * <pre>
   * TokenService creates, lists and revokes the hub's named access tokens.
   * Only an admin token (or the access key) may call it. A token's secret is
   * returned once, by CreateToken; the hub keeps only a salted hash of it.
   * </pre>
   */
  public static final class TokenServiceStub
      extends io.grpc.stub.AbstractAsyncStub<TokenServiceStub> {
    private TokenServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected TokenServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new TokenServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * CreateToken makes a new named token and returns its secret (shown once).
     * ALREADY_EXISTS when a token of that name exists; INVALID_ARGUMENT for a
     * bad name, scope, node id pattern or expiry, and for the add-on scopes
     * "workspace" and "terminal" given alone (they go beside "app" or "read").
     * Not journaled: a
     * journaled response would keep the secret in clear; the name is the
     * idempotency key (a retried create gets ALREADY_EXISTS).
     * </pre>
     */
    public void createToken(dev.aophub.api.v1.CreateTokenRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.CreateTokenResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCreateTokenMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ListTokens returns every token (never a secret), ordered by name.
     * </pre>
     */
    public void listTokens(dev.aophub.api.v1.ListTokensRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListTokensResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListTokensMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * RevokeToken deletes a token: it is refused from now on and the
     * connections it opened are closed. NOT_FOUND when no token has that name
     * (so a retried revoke changes nothing).
     * </pre>
     */
    public void revokeToken(dev.aophub.api.v1.RevokeTokenRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.RevokeTokenResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRevokeTokenMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service TokenService.
   * <pre>
   * TokenService creates, lists and revokes the hub's named access tokens.
   * Only an admin token (or the access key) may call it. A token's secret is
   * returned once, by CreateToken; the hub keeps only a salted hash of it.
   * </pre>
   */
  public static final class TokenServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<TokenServiceBlockingV2Stub> {
    private TokenServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected TokenServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new TokenServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * CreateToken makes a new named token and returns its secret (shown once).
     * ALREADY_EXISTS when a token of that name exists; INVALID_ARGUMENT for a
     * bad name, scope, node id pattern or expiry, and for the add-on scopes
     * "workspace" and "terminal" given alone (they go beside "app" or "read").
     * Not journaled: a
     * journaled response would keep the secret in clear; the name is the
     * idempotency key (a retried create gets ALREADY_EXISTS).
     * </pre>
     */
    public dev.aophub.api.v1.CreateTokenResponse createToken(dev.aophub.api.v1.CreateTokenRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCreateTokenMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListTokens returns every token (never a secret), ordered by name.
     * </pre>
     */
    public dev.aophub.api.v1.ListTokensResponse listTokens(dev.aophub.api.v1.ListTokensRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListTokensMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * RevokeToken deletes a token: it is refused from now on and the
     * connections it opened are closed. NOT_FOUND when no token has that name
     * (so a retried revoke changes nothing).
     * </pre>
     */
    public dev.aophub.api.v1.RevokeTokenResponse revokeToken(dev.aophub.api.v1.RevokeTokenRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRevokeTokenMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service TokenService.
   * <pre>
   * TokenService creates, lists and revokes the hub's named access tokens.
   * Only an admin token (or the access key) may call it. A token's secret is
   * returned once, by CreateToken; the hub keeps only a salted hash of it.
   * </pre>
   */
  public static final class TokenServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<TokenServiceBlockingStub> {
    private TokenServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected TokenServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new TokenServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * CreateToken makes a new named token and returns its secret (shown once).
     * ALREADY_EXISTS when a token of that name exists; INVALID_ARGUMENT for a
     * bad name, scope, node id pattern or expiry, and for the add-on scopes
     * "workspace" and "terminal" given alone (they go beside "app" or "read").
     * Not journaled: a
     * journaled response would keep the secret in clear; the name is the
     * idempotency key (a retried create gets ALREADY_EXISTS).
     * </pre>
     */
    public dev.aophub.api.v1.CreateTokenResponse createToken(dev.aophub.api.v1.CreateTokenRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCreateTokenMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListTokens returns every token (never a secret), ordered by name.
     * </pre>
     */
    public dev.aophub.api.v1.ListTokensResponse listTokens(dev.aophub.api.v1.ListTokensRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListTokensMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * RevokeToken deletes a token: it is refused from now on and the
     * connections it opened are closed. NOT_FOUND when no token has that name
     * (so a retried revoke changes nothing).
     * </pre>
     */
    public dev.aophub.api.v1.RevokeTokenResponse revokeToken(dev.aophub.api.v1.RevokeTokenRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRevokeTokenMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service TokenService.
   * <pre>
   * TokenService creates, lists and revokes the hub's named access tokens.
   * Only an admin token (or the access key) may call it. A token's secret is
   * returned once, by CreateToken; the hub keeps only a salted hash of it.
   * </pre>
   */
  public static final class TokenServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<TokenServiceFutureStub> {
    private TokenServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected TokenServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new TokenServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * CreateToken makes a new named token and returns its secret (shown once).
     * ALREADY_EXISTS when a token of that name exists; INVALID_ARGUMENT for a
     * bad name, scope, node id pattern or expiry, and for the add-on scopes
     * "workspace" and "terminal" given alone (they go beside "app" or "read").
     * Not journaled: a
     * journaled response would keep the secret in clear; the name is the
     * idempotency key (a retried create gets ALREADY_EXISTS).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.CreateTokenResponse> createToken(
        dev.aophub.api.v1.CreateTokenRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCreateTokenMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ListTokens returns every token (never a secret), ordered by name.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.ListTokensResponse> listTokens(
        dev.aophub.api.v1.ListTokensRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListTokensMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * RevokeToken deletes a token: it is refused from now on and the
     * connections it opened are closed. NOT_FOUND when no token has that name
     * (so a retried revoke changes nothing).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.RevokeTokenResponse> revokeToken(
        dev.aophub.api.v1.RevokeTokenRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRevokeTokenMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_CREATE_TOKEN = 0;
  private static final int METHODID_LIST_TOKENS = 1;
  private static final int METHODID_REVOKE_TOKEN = 2;

  private static final class MethodHandlers<Req, Resp> implements
      io.grpc.stub.ServerCalls.UnaryMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ServerStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ClientStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.BidiStreamingMethod<Req, Resp> {
    private final AsyncService serviceImpl;
    private final int methodId;

    MethodHandlers(AsyncService serviceImpl, int methodId) {
      this.serviceImpl = serviceImpl;
      this.methodId = methodId;
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public void invoke(Req request, io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_CREATE_TOKEN:
          serviceImpl.createToken((dev.aophub.api.v1.CreateTokenRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.CreateTokenResponse>) responseObserver);
          break;
        case METHODID_LIST_TOKENS:
          serviceImpl.listTokens((dev.aophub.api.v1.ListTokensRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListTokensResponse>) responseObserver);
          break;
        case METHODID_REVOKE_TOKEN:
          serviceImpl.revokeToken((dev.aophub.api.v1.RevokeTokenRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.RevokeTokenResponse>) responseObserver);
          break;
        default:
          throw new AssertionError();
      }
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public io.grpc.stub.StreamObserver<Req> invoke(
        io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getCreateTokenMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.CreateTokenRequest,
              dev.aophub.api.v1.CreateTokenResponse>(
                service, METHODID_CREATE_TOKEN)))
        .addMethod(
          getListTokensMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.ListTokensRequest,
              dev.aophub.api.v1.ListTokensResponse>(
                service, METHODID_LIST_TOKENS)))
        .addMethod(
          getRevokeTokenMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.RevokeTokenRequest,
              dev.aophub.api.v1.RevokeTokenResponse>(
                service, METHODID_REVOKE_TOKEN)))
        .build();
  }

  private static abstract class TokenServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    TokenServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.aophub.api.v1.TokenOuterClass.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("TokenService");
    }
  }

  private static final class TokenServiceFileDescriptorSupplier
      extends TokenServiceBaseDescriptorSupplier {
    TokenServiceFileDescriptorSupplier() {}
  }

  private static final class TokenServiceMethodDescriptorSupplier
      extends TokenServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    TokenServiceMethodDescriptorSupplier(java.lang.String methodName) {
      this.methodName = methodName;
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.MethodDescriptor getMethodDescriptor() {
      return getServiceDescriptor().findMethodByName(methodName);
    }
  }

  private static volatile io.grpc.ServiceDescriptor serviceDescriptor;

  public static io.grpc.ServiceDescriptor getServiceDescriptor() {
    io.grpc.ServiceDescriptor result = serviceDescriptor;
    if (result == null) {
      synchronized (TokenServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new TokenServiceFileDescriptorSupplier())
              .addMethod(getCreateTokenMethod())
              .addMethod(getListTokensMethod())
              .addMethod(getRevokeTokenMethod())
              .build();
        }
      }
    }
    return result;
  }
}
