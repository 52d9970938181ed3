package dev.aophub.api.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * ArtifactService synchronises the artifact archive: append artifact events
 * and read the archive by cursor in one call.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class ArtifactServiceGrpc {

  private ArtifactServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "aophub.v1.ArtifactService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.SyncArtifactsRequest,
      dev.aophub.api.v1.SyncArtifactsResponse> getSyncArtifactsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "SyncArtifacts",
      requestType = dev.aophub.api.v1.SyncArtifactsRequest.class,
      responseType = dev.aophub.api.v1.SyncArtifactsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.SyncArtifactsRequest,
      dev.aophub.api.v1.SyncArtifactsResponse> getSyncArtifactsMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.SyncArtifactsRequest, dev.aophub.api.v1.SyncArtifactsResponse> getSyncArtifactsMethod;
    if ((getSyncArtifactsMethod = ArtifactServiceGrpc.getSyncArtifactsMethod) == null) {
      synchronized (ArtifactServiceGrpc.class) {
        if ((getSyncArtifactsMethod = ArtifactServiceGrpc.getSyncArtifactsMethod) == null) {
          ArtifactServiceGrpc.getSyncArtifactsMethod = getSyncArtifactsMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.SyncArtifactsRequest, dev.aophub.api.v1.SyncArtifactsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "SyncArtifacts"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.SyncArtifactsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.SyncArtifactsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ArtifactServiceMethodDescriptorSupplier("SyncArtifacts"))
              .build();
        }
      }
    }
    return getSyncArtifactsMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static ArtifactServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ArtifactServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ArtifactServiceStub>() {
        @java.lang.Override
        public ArtifactServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ArtifactServiceStub(channel, callOptions);
        }
      };
    return ArtifactServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static ArtifactServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ArtifactServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ArtifactServiceBlockingV2Stub>() {
        @java.lang.Override
        public ArtifactServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ArtifactServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return ArtifactServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static ArtifactServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ArtifactServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ArtifactServiceBlockingStub>() {
        @java.lang.Override
        public ArtifactServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ArtifactServiceBlockingStub(channel, callOptions);
        }
      };
    return ArtifactServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static ArtifactServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ArtifactServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ArtifactServiceFutureStub>() {
        @java.lang.Override
        public ArtifactServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ArtifactServiceFutureStub(channel, callOptions);
        }
      };
    return ArtifactServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * ArtifactService synchronises the artifact archive: append artifact events
   * and read the archive by cursor in one call.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * SyncArtifacts appends events (at most 100 and 50 MiB per call, else
     * RESOURCE_EXHAUSTED; each needs id, emitted_at and an aop.tool.Artifact
     * extension payload, else INVALID_ARGUMENT) and returns the archive after
     * after_cursor. Appending an event id that is already archived is a no-op,
     * so retries are safe.
     * </pre>
     */
    default void syncArtifacts(dev.aophub.api.v1.SyncArtifactsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.SyncArtifactsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getSyncArtifactsMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service ArtifactService.
   * <pre>
   * ArtifactService synchronises the artifact archive: append artifact events
   * and read the archive by cursor in one call.
   * </pre>
   */
  public static abstract class ArtifactServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return ArtifactServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service ArtifactService.
   * <pre>
   * ArtifactService synchronises the artifact archive: append artifact events
   * and read the archive by cursor in one call.
   * </pre>
   */
  public static final class ArtifactServiceStub
      extends io.grpc.stub.AbstractAsyncStub<ArtifactServiceStub> {
    private ArtifactServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ArtifactServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ArtifactServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * SyncArtifacts appends events (at most 100 and 50 MiB per call, else
     * RESOURCE_EXHAUSTED; each needs id, emitted_at and an aop.tool.Artifact
     * extension payload, else INVALID_ARGUMENT) and returns the archive after
     * after_cursor. Appending an event id that is already archived is a no-op,
     * so retries are safe.
     * </pre>
     */
    public void syncArtifacts(dev.aophub.api.v1.SyncArtifactsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.SyncArtifactsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getSyncArtifactsMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service ArtifactService.
   * <pre>
   * ArtifactService synchronises the artifact archive: append artifact events
   * and read the archive by cursor in one call.
   * </pre>
   */
  public static final class ArtifactServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<ArtifactServiceBlockingV2Stub> {
    private ArtifactServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ArtifactServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ArtifactServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * SyncArtifacts appends events (at most 100 and 50 MiB per call, else
     * RESOURCE_EXHAUSTED; each needs id, emitted_at and an aop.tool.Artifact
     * extension payload, else INVALID_ARGUMENT) and returns the archive after
     * after_cursor. Appending an event id that is already archived is a no-op,
     * so retries are safe.
     * </pre>
     */
    public dev.aophub.api.v1.SyncArtifactsResponse syncArtifacts(dev.aophub.api.v1.SyncArtifactsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getSyncArtifactsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service ArtifactService.
   * <pre>
   * ArtifactService synchronises the artifact archive: append artifact events
   * and read the archive by cursor in one call.
   * </pre>
   */
  public static final class ArtifactServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<ArtifactServiceBlockingStub> {
    private ArtifactServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ArtifactServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ArtifactServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * SyncArtifacts appends events (at most 100 and 50 MiB per call, else
     * RESOURCE_EXHAUSTED; each needs id, emitted_at and an aop.tool.Artifact
     * extension payload, else INVALID_ARGUMENT) and returns the archive after
     * after_cursor. Appending an event id that is already archived is a no-op,
     * so retries are safe.
     * </pre>
     */
    public dev.aophub.api.v1.SyncArtifactsResponse syncArtifacts(dev.aophub.api.v1.SyncArtifactsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getSyncArtifactsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service ArtifactService.
   * <pre>
   * ArtifactService synchronises the artifact archive: append artifact events
   * and read the archive by cursor in one call.
   * </pre>
   */
  public static final class ArtifactServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<ArtifactServiceFutureStub> {
    private ArtifactServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ArtifactServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ArtifactServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * SyncArtifacts appends events (at most 100 and 50 MiB per call, else
     * RESOURCE_EXHAUSTED; each needs id, emitted_at and an aop.tool.Artifact
     * extension payload, else INVALID_ARGUMENT) and returns the archive after
     * after_cursor. Appending an event id that is already archived is a no-op,
     * so retries are safe.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.SyncArtifactsResponse> syncArtifacts(
        dev.aophub.api.v1.SyncArtifactsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getSyncArtifactsMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_SYNC_ARTIFACTS = 0;

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
        case METHODID_SYNC_ARTIFACTS:
          serviceImpl.syncArtifacts((dev.aophub.api.v1.SyncArtifactsRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.SyncArtifactsResponse>) responseObserver);
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
          getSyncArtifactsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.SyncArtifactsRequest,
              dev.aophub.api.v1.SyncArtifactsResponse>(
                service, METHODID_SYNC_ARTIFACTS)))
        .build();
  }

  private static abstract class ArtifactServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    ArtifactServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.aophub.api.v1.Artifact.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("ArtifactService");
    }
  }

  private static final class ArtifactServiceFileDescriptorSupplier
      extends ArtifactServiceBaseDescriptorSupplier {
    ArtifactServiceFileDescriptorSupplier() {}
  }

  private static final class ArtifactServiceMethodDescriptorSupplier
      extends ArtifactServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    ArtifactServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (ArtifactServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new ArtifactServiceFileDescriptorSupplier())
              .addMethod(getSyncArtifactsMethod())
              .build();
        }
      }
    }
    return result;
  }
}
