package dev.aophub.api.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * SubagentService lists and cancels the subagents of a session. A subagent is
 * a background task the agent of a session started with its "spawn" tool: it
 * runs in a child session on the same node (OpenSessionRequest.parent_session_id
 * and parent_tool_call_id set), queued behind a concurrency bound, with a
 * timeout, and reports its progress and its answer into the parent session as
 * SubagentUpdate events. Only those who may see the parent session see its
 * subagents; only those who may act in it cancel them.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class SubagentServiceGrpc {

  private SubagentServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "aophub.v1.SubagentService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.ListSubagentsRequest,
      dev.aophub.api.v1.ListSubagentsResponse> getListSubagentsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListSubagents",
      requestType = dev.aophub.api.v1.ListSubagentsRequest.class,
      responseType = dev.aophub.api.v1.ListSubagentsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.ListSubagentsRequest,
      dev.aophub.api.v1.ListSubagentsResponse> getListSubagentsMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.ListSubagentsRequest, dev.aophub.api.v1.ListSubagentsResponse> getListSubagentsMethod;
    if ((getListSubagentsMethod = SubagentServiceGrpc.getListSubagentsMethod) == null) {
      synchronized (SubagentServiceGrpc.class) {
        if ((getListSubagentsMethod = SubagentServiceGrpc.getListSubagentsMethod) == null) {
          SubagentServiceGrpc.getListSubagentsMethod = getListSubagentsMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.ListSubagentsRequest, dev.aophub.api.v1.ListSubagentsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListSubagents"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListSubagentsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListSubagentsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SubagentServiceMethodDescriptorSupplier("ListSubagents"))
              .build();
        }
      }
    }
    return getListSubagentsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.CancelSubagentRequest,
      dev.aophub.api.v1.CancelSubagentResponse> getCancelSubagentMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CancelSubagent",
      requestType = dev.aophub.api.v1.CancelSubagentRequest.class,
      responseType = dev.aophub.api.v1.CancelSubagentResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.CancelSubagentRequest,
      dev.aophub.api.v1.CancelSubagentResponse> getCancelSubagentMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.CancelSubagentRequest, dev.aophub.api.v1.CancelSubagentResponse> getCancelSubagentMethod;
    if ((getCancelSubagentMethod = SubagentServiceGrpc.getCancelSubagentMethod) == null) {
      synchronized (SubagentServiceGrpc.class) {
        if ((getCancelSubagentMethod = SubagentServiceGrpc.getCancelSubagentMethod) == null) {
          SubagentServiceGrpc.getCancelSubagentMethod = getCancelSubagentMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.CancelSubagentRequest, dev.aophub.api.v1.CancelSubagentResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CancelSubagent"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.CancelSubagentRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.CancelSubagentResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SubagentServiceMethodDescriptorSupplier("CancelSubagent"))
              .build();
        }
      }
    }
    return getCancelSubagentMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static SubagentServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<SubagentServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<SubagentServiceStub>() {
        @java.lang.Override
        public SubagentServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new SubagentServiceStub(channel, callOptions);
        }
      };
    return SubagentServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static SubagentServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<SubagentServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<SubagentServiceBlockingV2Stub>() {
        @java.lang.Override
        public SubagentServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new SubagentServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return SubagentServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static SubagentServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<SubagentServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<SubagentServiceBlockingStub>() {
        @java.lang.Override
        public SubagentServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new SubagentServiceBlockingStub(channel, callOptions);
        }
      };
    return SubagentServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static SubagentServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<SubagentServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<SubagentServiceFutureStub>() {
        @java.lang.Override
        public SubagentServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new SubagentServiceFutureStub(channel, callOptions);
        }
      };
    return SubagentServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * SubagentService lists and cancels the subagents of a session. A subagent is
   * a background task the agent of a session started with its "spawn" tool: it
   * runs in a child session on the same node (OpenSessionRequest.parent_session_id
   * and parent_tool_call_id set), queued behind a concurrency bound, with a
   * timeout, and reports its progress and its answer into the parent session as
   * SubagentUpdate events. Only those who may see the parent session see its
   * subagents; only those who may act in it cancel them.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * ListSubagents returns the subagents of one parent session, oldest first.
     * </pre>
     */
    default void listSubagents(dev.aophub.api.v1.ListSubagentsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListSubagentsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListSubagentsMethod(), responseObserver);
    }

    /**
     * <pre>
     * CancelSubagent cancels a queued or running subagent; canceling a finished
     * one returns it unchanged.
     * </pre>
     */
    default void cancelSubagent(dev.aophub.api.v1.CancelSubagentRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.CancelSubagentResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCancelSubagentMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service SubagentService.
   * <pre>
   * SubagentService lists and cancels the subagents of a session. A subagent is
   * a background task the agent of a session started with its "spawn" tool: it
   * runs in a child session on the same node (OpenSessionRequest.parent_session_id
   * and parent_tool_call_id set), queued behind a concurrency bound, with a
   * timeout, and reports its progress and its answer into the parent session as
   * SubagentUpdate events. Only those who may see the parent session see its
   * subagents; only those who may act in it cancel them.
   * </pre>
   */
  public static abstract class SubagentServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return SubagentServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service SubagentService.
   * <pre>
   * SubagentService lists and cancels the subagents of a session. A subagent is
   * a background task the agent of a session started with its "spawn" tool: it
   * runs in a child session on the same node (OpenSessionRequest.parent_session_id
   * and parent_tool_call_id set), queued behind a concurrency bound, with a
   * timeout, and reports its progress and its answer into the parent session as
   * SubagentUpdate events. Only those who may see the parent session see its
   * subagents; only those who may act in it cancel them.
   * </pre>
   */
  public static final class SubagentServiceStub
      extends io.grpc.stub.AbstractAsyncStub<SubagentServiceStub> {
    private SubagentServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected SubagentServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new SubagentServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListSubagents returns the subagents of one parent session, oldest first.
     * </pre>
     */
    public void listSubagents(dev.aophub.api.v1.ListSubagentsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListSubagentsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListSubagentsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * CancelSubagent cancels a queued or running subagent; canceling a finished
     * one returns it unchanged.
     * </pre>
     */
    public void cancelSubagent(dev.aophub.api.v1.CancelSubagentRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.CancelSubagentResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCancelSubagentMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service SubagentService.
   * <pre>
   * SubagentService lists and cancels the subagents of a session. A subagent is
   * a background task the agent of a session started with its "spawn" tool: it
   * runs in a child session on the same node (OpenSessionRequest.parent_session_id
   * and parent_tool_call_id set), queued behind a concurrency bound, with a
   * timeout, and reports its progress and its answer into the parent session as
   * SubagentUpdate events. Only those who may see the parent session see its
   * subagents; only those who may act in it cancel them.
   * </pre>
   */
  public static final class SubagentServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<SubagentServiceBlockingV2Stub> {
    private SubagentServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected SubagentServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new SubagentServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * ListSubagents returns the subagents of one parent session, oldest first.
     * </pre>
     */
    public dev.aophub.api.v1.ListSubagentsResponse listSubagents(dev.aophub.api.v1.ListSubagentsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListSubagentsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * CancelSubagent cancels a queued or running subagent; canceling a finished
     * one returns it unchanged.
     * </pre>
     */
    public dev.aophub.api.v1.CancelSubagentResponse cancelSubagent(dev.aophub.api.v1.CancelSubagentRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCancelSubagentMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service SubagentService.
   * <pre>
   * SubagentService lists and cancels the subagents of a session. A subagent is
   * a background task the agent of a session started with its "spawn" tool: it
   * runs in a child session on the same node (OpenSessionRequest.parent_session_id
   * and parent_tool_call_id set), queued behind a concurrency bound, with a
   * timeout, and reports its progress and its answer into the parent session as
   * SubagentUpdate events. Only those who may see the parent session see its
   * subagents; only those who may act in it cancel them.
   * </pre>
   */
  public static final class SubagentServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<SubagentServiceBlockingStub> {
    private SubagentServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected SubagentServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new SubagentServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListSubagents returns the subagents of one parent session, oldest first.
     * </pre>
     */
    public dev.aophub.api.v1.ListSubagentsResponse listSubagents(dev.aophub.api.v1.ListSubagentsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListSubagentsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * CancelSubagent cancels a queued or running subagent; canceling a finished
     * one returns it unchanged.
     * </pre>
     */
    public dev.aophub.api.v1.CancelSubagentResponse cancelSubagent(dev.aophub.api.v1.CancelSubagentRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCancelSubagentMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service SubagentService.
   * <pre>
   * SubagentService lists and cancels the subagents of a session. A subagent is
   * a background task the agent of a session started with its "spawn" tool: it
   * runs in a child session on the same node (OpenSessionRequest.parent_session_id
   * and parent_tool_call_id set), queued behind a concurrency bound, with a
   * timeout, and reports its progress and its answer into the parent session as
   * SubagentUpdate events. Only those who may see the parent session see its
   * subagents; only those who may act in it cancel them.
   * </pre>
   */
  public static final class SubagentServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<SubagentServiceFutureStub> {
    private SubagentServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected SubagentServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new SubagentServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListSubagents returns the subagents of one parent session, oldest first.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.ListSubagentsResponse> listSubagents(
        dev.aophub.api.v1.ListSubagentsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListSubagentsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * CancelSubagent cancels a queued or running subagent; canceling a finished
     * one returns it unchanged.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.CancelSubagentResponse> cancelSubagent(
        dev.aophub.api.v1.CancelSubagentRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCancelSubagentMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_LIST_SUBAGENTS = 0;
  private static final int METHODID_CANCEL_SUBAGENT = 1;

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
        case METHODID_LIST_SUBAGENTS:
          serviceImpl.listSubagents((dev.aophub.api.v1.ListSubagentsRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListSubagentsResponse>) responseObserver);
          break;
        case METHODID_CANCEL_SUBAGENT:
          serviceImpl.cancelSubagent((dev.aophub.api.v1.CancelSubagentRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.CancelSubagentResponse>) responseObserver);
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
          getListSubagentsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.ListSubagentsRequest,
              dev.aophub.api.v1.ListSubagentsResponse>(
                service, METHODID_LIST_SUBAGENTS)))
        .addMethod(
          getCancelSubagentMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.CancelSubagentRequest,
              dev.aophub.api.v1.CancelSubagentResponse>(
                service, METHODID_CANCEL_SUBAGENT)))
        .build();
  }

  private static abstract class SubagentServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    SubagentServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.aophub.api.v1.SubagentOuterClass.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("SubagentService");
    }
  }

  private static final class SubagentServiceFileDescriptorSupplier
      extends SubagentServiceBaseDescriptorSupplier {
    SubagentServiceFileDescriptorSupplier() {}
  }

  private static final class SubagentServiceMethodDescriptorSupplier
      extends SubagentServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    SubagentServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (SubagentServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new SubagentServiceFileDescriptorSupplier())
              .addMethod(getListSubagentsMethod())
              .addMethod(getCancelSubagentMethod())
              .build();
        }
      }
    }
    return result;
  }
}
