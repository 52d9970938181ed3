package dev.aophub.api.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * InteractionService answers and lists pending interactions; it is the RPC
 * equivalent of InteractionProtocolMessage on the application channel.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class InteractionServiceGrpc {

  private InteractionServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "aophub.v1.InteractionService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.AnswerInteractionRequest,
      dev.aophub.api.v1.AnswerInteractionResponse> getAnswerInteractionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "AnswerInteraction",
      requestType = dev.aophub.api.v1.AnswerInteractionRequest.class,
      responseType = dev.aophub.api.v1.AnswerInteractionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.AnswerInteractionRequest,
      dev.aophub.api.v1.AnswerInteractionResponse> getAnswerInteractionMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.AnswerInteractionRequest, dev.aophub.api.v1.AnswerInteractionResponse> getAnswerInteractionMethod;
    if ((getAnswerInteractionMethod = InteractionServiceGrpc.getAnswerInteractionMethod) == null) {
      synchronized (InteractionServiceGrpc.class) {
        if ((getAnswerInteractionMethod = InteractionServiceGrpc.getAnswerInteractionMethod) == null) {
          InteractionServiceGrpc.getAnswerInteractionMethod = getAnswerInteractionMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.AnswerInteractionRequest, dev.aophub.api.v1.AnswerInteractionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "AnswerInteraction"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.AnswerInteractionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.AnswerInteractionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new InteractionServiceMethodDescriptorSupplier("AnswerInteraction"))
              .build();
        }
      }
    }
    return getAnswerInteractionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.ListInteractionsRequest,
      dev.aophub.api.v1.ListInteractionsResponse> getListInteractionsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListInteractions",
      requestType = dev.aophub.api.v1.ListInteractionsRequest.class,
      responseType = dev.aophub.api.v1.ListInteractionsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.ListInteractionsRequest,
      dev.aophub.api.v1.ListInteractionsResponse> getListInteractionsMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.ListInteractionsRequest, dev.aophub.api.v1.ListInteractionsResponse> getListInteractionsMethod;
    if ((getListInteractionsMethod = InteractionServiceGrpc.getListInteractionsMethod) == null) {
      synchronized (InteractionServiceGrpc.class) {
        if ((getListInteractionsMethod = InteractionServiceGrpc.getListInteractionsMethod) == null) {
          InteractionServiceGrpc.getListInteractionsMethod = getListInteractionsMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.ListInteractionsRequest, dev.aophub.api.v1.ListInteractionsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListInteractions"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListInteractionsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListInteractionsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new InteractionServiceMethodDescriptorSupplier("ListInteractions"))
              .build();
        }
      }
    }
    return getListInteractionsMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static InteractionServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<InteractionServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<InteractionServiceStub>() {
        @java.lang.Override
        public InteractionServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new InteractionServiceStub(channel, callOptions);
        }
      };
    return InteractionServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static InteractionServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<InteractionServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<InteractionServiceBlockingV2Stub>() {
        @java.lang.Override
        public InteractionServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new InteractionServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return InteractionServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static InteractionServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<InteractionServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<InteractionServiceBlockingStub>() {
        @java.lang.Override
        public InteractionServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new InteractionServiceBlockingStub(channel, callOptions);
        }
      };
    return InteractionServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static InteractionServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<InteractionServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<InteractionServiceFutureStub>() {
        @java.lang.Override
        public InteractionServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new InteractionServiceFutureStub(channel, callOptions);
        }
      };
    return InteractionServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * InteractionService answers and lists pending interactions; it is the RPC
   * equivalent of InteractionProtocolMessage on the application channel.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * AnswerInteraction answers a pending interaction. The first answer wins;
     * later ones are refused with FAILED_PRECONDITION.
     * </pre>
     */
    default void answerInteraction(dev.aophub.api.v1.AnswerInteractionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.AnswerInteractionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getAnswerInteractionMethod(), responseObserver);
    }

    /**
     * <pre>
     * ListInteractions lists interactions, oldest first, a page at a time: a
     * session's, or, without session_id, those of every session (for example
     * everything pending on the hub).
     * </pre>
     */
    default void listInteractions(dev.aophub.api.v1.ListInteractionsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListInteractionsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListInteractionsMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service InteractionService.
   * <pre>
   * InteractionService answers and lists pending interactions; it is the RPC
   * equivalent of InteractionProtocolMessage on the application channel.
   * </pre>
   */
  public static abstract class InteractionServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return InteractionServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service InteractionService.
   * <pre>
   * InteractionService answers and lists pending interactions; it is the RPC
   * equivalent of InteractionProtocolMessage on the application channel.
   * </pre>
   */
  public static final class InteractionServiceStub
      extends io.grpc.stub.AbstractAsyncStub<InteractionServiceStub> {
    private InteractionServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected InteractionServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new InteractionServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * AnswerInteraction answers a pending interaction. The first answer wins;
     * later ones are refused with FAILED_PRECONDITION.
     * </pre>
     */
    public void answerInteraction(dev.aophub.api.v1.AnswerInteractionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.AnswerInteractionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getAnswerInteractionMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ListInteractions lists interactions, oldest first, a page at a time: a
     * session's, or, without session_id, those of every session (for example
     * everything pending on the hub).
     * </pre>
     */
    public void listInteractions(dev.aophub.api.v1.ListInteractionsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListInteractionsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListInteractionsMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service InteractionService.
   * <pre>
   * InteractionService answers and lists pending interactions; it is the RPC
   * equivalent of InteractionProtocolMessage on the application channel.
   * </pre>
   */
  public static final class InteractionServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<InteractionServiceBlockingV2Stub> {
    private InteractionServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected InteractionServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new InteractionServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * AnswerInteraction answers a pending interaction. The first answer wins;
     * later ones are refused with FAILED_PRECONDITION.
     * </pre>
     */
    public dev.aophub.api.v1.AnswerInteractionResponse answerInteraction(dev.aophub.api.v1.AnswerInteractionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getAnswerInteractionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListInteractions lists interactions, oldest first, a page at a time: a
     * session's, or, without session_id, those of every session (for example
     * everything pending on the hub).
     * </pre>
     */
    public dev.aophub.api.v1.ListInteractionsResponse listInteractions(dev.aophub.api.v1.ListInteractionsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListInteractionsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service InteractionService.
   * <pre>
   * InteractionService answers and lists pending interactions; it is the RPC
   * equivalent of InteractionProtocolMessage on the application channel.
   * </pre>
   */
  public static final class InteractionServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<InteractionServiceBlockingStub> {
    private InteractionServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected InteractionServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new InteractionServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * AnswerInteraction answers a pending interaction. The first answer wins;
     * later ones are refused with FAILED_PRECONDITION.
     * </pre>
     */
    public dev.aophub.api.v1.AnswerInteractionResponse answerInteraction(dev.aophub.api.v1.AnswerInteractionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getAnswerInteractionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListInteractions lists interactions, oldest first, a page at a time: a
     * session's, or, without session_id, those of every session (for example
     * everything pending on the hub).
     * </pre>
     */
    public dev.aophub.api.v1.ListInteractionsResponse listInteractions(dev.aophub.api.v1.ListInteractionsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListInteractionsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service InteractionService.
   * <pre>
   * InteractionService answers and lists pending interactions; it is the RPC
   * equivalent of InteractionProtocolMessage on the application channel.
   * </pre>
   */
  public static final class InteractionServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<InteractionServiceFutureStub> {
    private InteractionServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected InteractionServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new InteractionServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * AnswerInteraction answers a pending interaction. The first answer wins;
     * later ones are refused with FAILED_PRECONDITION.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.AnswerInteractionResponse> answerInteraction(
        dev.aophub.api.v1.AnswerInteractionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getAnswerInteractionMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ListInteractions lists interactions, oldest first, a page at a time: a
     * session's, or, without session_id, those of every session (for example
     * everything pending on the hub).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.ListInteractionsResponse> listInteractions(
        dev.aophub.api.v1.ListInteractionsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListInteractionsMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_ANSWER_INTERACTION = 0;
  private static final int METHODID_LIST_INTERACTIONS = 1;

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
        case METHODID_ANSWER_INTERACTION:
          serviceImpl.answerInteraction((dev.aophub.api.v1.AnswerInteractionRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.AnswerInteractionResponse>) responseObserver);
          break;
        case METHODID_LIST_INTERACTIONS:
          serviceImpl.listInteractions((dev.aophub.api.v1.ListInteractionsRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListInteractionsResponse>) responseObserver);
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
          getAnswerInteractionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.AnswerInteractionRequest,
              dev.aophub.api.v1.AnswerInteractionResponse>(
                service, METHODID_ANSWER_INTERACTION)))
        .addMethod(
          getListInteractionsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.ListInteractionsRequest,
              dev.aophub.api.v1.ListInteractionsResponse>(
                service, METHODID_LIST_INTERACTIONS)))
        .build();
  }

  private static abstract class InteractionServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    InteractionServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.aophub.api.v1.InteractionOuterClass.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("InteractionService");
    }
  }

  private static final class InteractionServiceFileDescriptorSupplier
      extends InteractionServiceBaseDescriptorSupplier {
    InteractionServiceFileDescriptorSupplier() {}
  }

  private static final class InteractionServiceMethodDescriptorSupplier
      extends InteractionServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    InteractionServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (InteractionServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new InteractionServiceFileDescriptorSupplier())
              .addMethod(getAnswerInteractionMethod())
              .addMethod(getListInteractionsMethod())
              .build();
        }
      }
    }
    return result;
  }
}
