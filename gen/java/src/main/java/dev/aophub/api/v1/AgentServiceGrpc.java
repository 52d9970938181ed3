package dev.aophub.api.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * AgentService lists the agent nodes known to the hub.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class AgentServiceGrpc {

  private AgentServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "aophub.v1.AgentService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.ListAgentsRequest,
      dev.aophub.api.v1.ListAgentsResponse> getListAgentsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListAgents",
      requestType = dev.aophub.api.v1.ListAgentsRequest.class,
      responseType = dev.aophub.api.v1.ListAgentsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.ListAgentsRequest,
      dev.aophub.api.v1.ListAgentsResponse> getListAgentsMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.ListAgentsRequest, dev.aophub.api.v1.ListAgentsResponse> getListAgentsMethod;
    if ((getListAgentsMethod = AgentServiceGrpc.getListAgentsMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getListAgentsMethod = AgentServiceGrpc.getListAgentsMethod) == null) {
          AgentServiceGrpc.getListAgentsMethod = getListAgentsMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.ListAgentsRequest, dev.aophub.api.v1.ListAgentsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListAgents"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListAgentsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListAgentsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("ListAgents"))
              .build();
        }
      }
    }
    return getListAgentsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.WatchAgentsRequest,
      dev.aophub.api.v1.WatchAgentsResponse> getWatchAgentsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "WatchAgents",
      requestType = dev.aophub.api.v1.WatchAgentsRequest.class,
      responseType = dev.aophub.api.v1.WatchAgentsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.WatchAgentsRequest,
      dev.aophub.api.v1.WatchAgentsResponse> getWatchAgentsMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.WatchAgentsRequest, dev.aophub.api.v1.WatchAgentsResponse> getWatchAgentsMethod;
    if ((getWatchAgentsMethod = AgentServiceGrpc.getWatchAgentsMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getWatchAgentsMethod = AgentServiceGrpc.getWatchAgentsMethod) == null) {
          AgentServiceGrpc.getWatchAgentsMethod = getWatchAgentsMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.WatchAgentsRequest, dev.aophub.api.v1.WatchAgentsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "WatchAgents"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.WatchAgentsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.WatchAgentsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("WatchAgents"))
              .build();
        }
      }
    }
    return getWatchAgentsMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static AgentServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AgentServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AgentServiceStub>() {
        @java.lang.Override
        public AgentServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AgentServiceStub(channel, callOptions);
        }
      };
    return AgentServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static AgentServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AgentServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AgentServiceBlockingV2Stub>() {
        @java.lang.Override
        public AgentServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AgentServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return AgentServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static AgentServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AgentServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AgentServiceBlockingStub>() {
        @java.lang.Override
        public AgentServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AgentServiceBlockingStub(channel, callOptions);
        }
      };
    return AgentServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static AgentServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AgentServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AgentServiceFutureStub>() {
        @java.lang.Override
        public AgentServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AgentServiceFutureStub(channel, callOptions);
        }
      };
    return AgentServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * AgentService lists the agent nodes known to the hub.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * ListAgents returns every node connected now, and optionally those seen before.
     * </pre>
     */
    default void listAgents(dev.aophub.api.v1.ListAgentsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListAgentsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListAgentsMethod(), responseObserver);
    }

    /**
     * <pre>
     * WatchAgents streams the node list: first a snapshot (what ListAgents
     * answers), then one message per node that changed (connected,
     * disconnected, its status, counters, commands or load changed). A watcher
     * that reads slowly gets each changed node's latest state once, never a
     * backlog. Each token name may run a bounded number of watches at once
     * (aophub serve --max-watches; more: RESOURCE_EXHAUSTED). The stream ends
     * with UNAVAILABLE when the hub stops and UNAUTHENTICATED when its token is
     * revoked or expires; a client watches again for a new snapshot.
     * </pre>
     */
    default void watchAgents(dev.aophub.api.v1.WatchAgentsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.WatchAgentsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getWatchAgentsMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service AgentService.
   * <pre>
   * AgentService lists the agent nodes known to the hub.
   * </pre>
   */
  public static abstract class AgentServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return AgentServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service AgentService.
   * <pre>
   * AgentService lists the agent nodes known to the hub.
   * </pre>
   */
  public static final class AgentServiceStub
      extends io.grpc.stub.AbstractAsyncStub<AgentServiceStub> {
    private AgentServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AgentServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AgentServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListAgents returns every node connected now, and optionally those seen before.
     * </pre>
     */
    public void listAgents(dev.aophub.api.v1.ListAgentsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListAgentsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListAgentsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * WatchAgents streams the node list: first a snapshot (what ListAgents
     * answers), then one message per node that changed (connected,
     * disconnected, its status, counters, commands or load changed). A watcher
     * that reads slowly gets each changed node's latest state once, never a
     * backlog. Each token name may run a bounded number of watches at once
     * (aophub serve --max-watches; more: RESOURCE_EXHAUSTED). The stream ends
     * with UNAVAILABLE when the hub stops and UNAUTHENTICATED when its token is
     * revoked or expires; a client watches again for a new snapshot.
     * </pre>
     */
    public void watchAgents(dev.aophub.api.v1.WatchAgentsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.WatchAgentsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getWatchAgentsMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service AgentService.
   * <pre>
   * AgentService lists the agent nodes known to the hub.
   * </pre>
   */
  public static final class AgentServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<AgentServiceBlockingV2Stub> {
    private AgentServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AgentServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AgentServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * ListAgents returns every node connected now, and optionally those seen before.
     * </pre>
     */
    public dev.aophub.api.v1.ListAgentsResponse listAgents(dev.aophub.api.v1.ListAgentsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListAgentsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * WatchAgents streams the node list: first a snapshot (what ListAgents
     * answers), then one message per node that changed (connected,
     * disconnected, its status, counters, commands or load changed). A watcher
     * that reads slowly gets each changed node's latest state once, never a
     * backlog. Each token name may run a bounded number of watches at once
     * (aophub serve --max-watches; more: RESOURCE_EXHAUSTED). The stream ends
     * with UNAVAILABLE when the hub stops and UNAUTHENTICATED when its token is
     * revoked or expires; a client watches again for a new snapshot.
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<?, dev.aophub.api.v1.WatchAgentsResponse>
        watchAgents(dev.aophub.api.v1.WatchAgentsRequest request) {
      return io.grpc.stub.ClientCalls.blockingV2ServerStreamingCall(
          getChannel(), getWatchAgentsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service AgentService.
   * <pre>
   * AgentService lists the agent nodes known to the hub.
   * </pre>
   */
  public static final class AgentServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<AgentServiceBlockingStub> {
    private AgentServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AgentServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AgentServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListAgents returns every node connected now, and optionally those seen before.
     * </pre>
     */
    public dev.aophub.api.v1.ListAgentsResponse listAgents(dev.aophub.api.v1.ListAgentsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListAgentsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * WatchAgents streams the node list: first a snapshot (what ListAgents
     * answers), then one message per node that changed (connected,
     * disconnected, its status, counters, commands or load changed). A watcher
     * that reads slowly gets each changed node's latest state once, never a
     * backlog. Each token name may run a bounded number of watches at once
     * (aophub serve --max-watches; more: RESOURCE_EXHAUSTED). The stream ends
     * with UNAVAILABLE when the hub stops and UNAUTHENTICATED when its token is
     * revoked or expires; a client watches again for a new snapshot.
     * </pre>
     */
    public java.util.Iterator<dev.aophub.api.v1.WatchAgentsResponse> watchAgents(
        dev.aophub.api.v1.WatchAgentsRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getWatchAgentsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service AgentService.
   * <pre>
   * AgentService lists the agent nodes known to the hub.
   * </pre>
   */
  public static final class AgentServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<AgentServiceFutureStub> {
    private AgentServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AgentServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AgentServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListAgents returns every node connected now, and optionally those seen before.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.ListAgentsResponse> listAgents(
        dev.aophub.api.v1.ListAgentsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListAgentsMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_LIST_AGENTS = 0;
  private static final int METHODID_WATCH_AGENTS = 1;

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
        case METHODID_LIST_AGENTS:
          serviceImpl.listAgents((dev.aophub.api.v1.ListAgentsRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListAgentsResponse>) responseObserver);
          break;
        case METHODID_WATCH_AGENTS:
          serviceImpl.watchAgents((dev.aophub.api.v1.WatchAgentsRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.WatchAgentsResponse>) responseObserver);
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
          getListAgentsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.ListAgentsRequest,
              dev.aophub.api.v1.ListAgentsResponse>(
                service, METHODID_LIST_AGENTS)))
        .addMethod(
          getWatchAgentsMethod(),
          io.grpc.stub.ServerCalls.asyncServerStreamingCall(
            new MethodHandlers<
              dev.aophub.api.v1.WatchAgentsRequest,
              dev.aophub.api.v1.WatchAgentsResponse>(
                service, METHODID_WATCH_AGENTS)))
        .build();
  }

  private static abstract class AgentServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    AgentServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.aophub.api.v1.AgentOuterClass.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("AgentService");
    }
  }

  private static final class AgentServiceFileDescriptorSupplier
      extends AgentServiceBaseDescriptorSupplier {
    AgentServiceFileDescriptorSupplier() {}
  }

  private static final class AgentServiceMethodDescriptorSupplier
      extends AgentServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    AgentServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (AgentServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new AgentServiceFileDescriptorSupplier())
              .addMethod(getListAgentsMethod())
              .addMethod(getWatchAgentsMethod())
              .build();
        }
      }
    }
    return result;
  }
}
