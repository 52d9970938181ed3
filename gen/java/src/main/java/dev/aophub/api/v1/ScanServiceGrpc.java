package dev.aophub.api.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * ScanService submits and follows scans. A scan is an unattended agent job,
 * "do task MODE against TARGET on a node and report", running in its own
 * session so that its whole event stream can be watched.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class ScanServiceGrpc {

  private ScanServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "aophub.v1.ScanService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.SubmitScanRequest,
      dev.aophub.api.v1.SubmitScanResponse> getSubmitScanMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "SubmitScan",
      requestType = dev.aophub.api.v1.SubmitScanRequest.class,
      responseType = dev.aophub.api.v1.SubmitScanResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.SubmitScanRequest,
      dev.aophub.api.v1.SubmitScanResponse> getSubmitScanMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.SubmitScanRequest, dev.aophub.api.v1.SubmitScanResponse> getSubmitScanMethod;
    if ((getSubmitScanMethod = ScanServiceGrpc.getSubmitScanMethod) == null) {
      synchronized (ScanServiceGrpc.class) {
        if ((getSubmitScanMethod = ScanServiceGrpc.getSubmitScanMethod) == null) {
          ScanServiceGrpc.getSubmitScanMethod = getSubmitScanMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.SubmitScanRequest, dev.aophub.api.v1.SubmitScanResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "SubmitScan"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.SubmitScanRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.SubmitScanResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScanServiceMethodDescriptorSupplier("SubmitScan"))
              .build();
        }
      }
    }
    return getSubmitScanMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.GetScanRequest,
      dev.aophub.api.v1.GetScanResponse> getGetScanMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetScan",
      requestType = dev.aophub.api.v1.GetScanRequest.class,
      responseType = dev.aophub.api.v1.GetScanResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.GetScanRequest,
      dev.aophub.api.v1.GetScanResponse> getGetScanMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.GetScanRequest, dev.aophub.api.v1.GetScanResponse> getGetScanMethod;
    if ((getGetScanMethod = ScanServiceGrpc.getGetScanMethod) == null) {
      synchronized (ScanServiceGrpc.class) {
        if ((getGetScanMethod = ScanServiceGrpc.getGetScanMethod) == null) {
          ScanServiceGrpc.getGetScanMethod = getGetScanMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.GetScanRequest, dev.aophub.api.v1.GetScanResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetScan"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.GetScanRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.GetScanResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScanServiceMethodDescriptorSupplier("GetScan"))
              .build();
        }
      }
    }
    return getGetScanMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.ListScansRequest,
      dev.aophub.api.v1.ListScansResponse> getListScansMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListScans",
      requestType = dev.aophub.api.v1.ListScansRequest.class,
      responseType = dev.aophub.api.v1.ListScansResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.ListScansRequest,
      dev.aophub.api.v1.ListScansResponse> getListScansMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.ListScansRequest, dev.aophub.api.v1.ListScansResponse> getListScansMethod;
    if ((getListScansMethod = ScanServiceGrpc.getListScansMethod) == null) {
      synchronized (ScanServiceGrpc.class) {
        if ((getListScansMethod = ScanServiceGrpc.getListScansMethod) == null) {
          ScanServiceGrpc.getListScansMethod = getListScansMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.ListScansRequest, dev.aophub.api.v1.ListScansResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListScans"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListScansRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListScansResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScanServiceMethodDescriptorSupplier("ListScans"))
              .build();
        }
      }
    }
    return getListScansMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.CancelScanRequest,
      dev.aophub.api.v1.CancelScanResponse> getCancelScanMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CancelScan",
      requestType = dev.aophub.api.v1.CancelScanRequest.class,
      responseType = dev.aophub.api.v1.CancelScanResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.CancelScanRequest,
      dev.aophub.api.v1.CancelScanResponse> getCancelScanMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.CancelScanRequest, dev.aophub.api.v1.CancelScanResponse> getCancelScanMethod;
    if ((getCancelScanMethod = ScanServiceGrpc.getCancelScanMethod) == null) {
      synchronized (ScanServiceGrpc.class) {
        if ((getCancelScanMethod = ScanServiceGrpc.getCancelScanMethod) == null) {
          ScanServiceGrpc.getCancelScanMethod = getCancelScanMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.CancelScanRequest, dev.aophub.api.v1.CancelScanResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CancelScan"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.CancelScanRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.CancelScanResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScanServiceMethodDescriptorSupplier("CancelScan"))
              .build();
        }
      }
    }
    return getCancelScanMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.GetScanReportRequest,
      dev.aophub.api.v1.GetScanReportResponse> getGetScanReportMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetScanReport",
      requestType = dev.aophub.api.v1.GetScanReportRequest.class,
      responseType = dev.aophub.api.v1.GetScanReportResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.GetScanReportRequest,
      dev.aophub.api.v1.GetScanReportResponse> getGetScanReportMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.GetScanReportRequest, dev.aophub.api.v1.GetScanReportResponse> getGetScanReportMethod;
    if ((getGetScanReportMethod = ScanServiceGrpc.getGetScanReportMethod) == null) {
      synchronized (ScanServiceGrpc.class) {
        if ((getGetScanReportMethod = ScanServiceGrpc.getGetScanReportMethod) == null) {
          ScanServiceGrpc.getGetScanReportMethod = getGetScanReportMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.GetScanReportRequest, dev.aophub.api.v1.GetScanReportResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetScanReport"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.GetScanReportRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.GetScanReportResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScanServiceMethodDescriptorSupplier("GetScanReport"))
              .build();
        }
      }
    }
    return getGetScanReportMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static ScanServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ScanServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ScanServiceStub>() {
        @java.lang.Override
        public ScanServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ScanServiceStub(channel, callOptions);
        }
      };
    return ScanServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static ScanServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ScanServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ScanServiceBlockingV2Stub>() {
        @java.lang.Override
        public ScanServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ScanServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return ScanServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static ScanServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ScanServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ScanServiceBlockingStub>() {
        @java.lang.Override
        public ScanServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ScanServiceBlockingStub(channel, callOptions);
        }
      };
    return ScanServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static ScanServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ScanServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ScanServiceFutureStub>() {
        @java.lang.Override
        public ScanServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ScanServiceFutureStub(channel, callOptions);
        }
      };
    return ScanServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * ScanService submits and follows scans. A scan is an unattended agent job,
   * "do task MODE against TARGET on a node and report", running in its own
   * session so that its whole event stream can be watched.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * SubmitScan queues a scan; it runs when a concurrency slot is free.
     * </pre>
     */
    default void submitScan(dev.aophub.api.v1.SubmitScanRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.SubmitScanResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getSubmitScanMethod(), responseObserver);
    }

    /**
     * <pre>
     * GetScan returns one scan.
     * </pre>
     */
    default void getScan(dev.aophub.api.v1.GetScanRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetScanResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetScanMethod(), responseObserver);
    }

    /**
     * <pre>
     * ListScans pages scans, newest first.
     * </pre>
     */
    default void listScans(dev.aophub.api.v1.ListScansRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListScansResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListScansMethod(), responseObserver);
    }

    /**
     * <pre>
     * CancelScan cancels a queued or running scan; canceling a finished scan
     * returns it unchanged.
     * </pre>
     */
    default void cancelScan(dev.aophub.api.v1.CancelScanRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.CancelScanResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCancelScanMethod(), responseObserver);
    }

    /**
     * <pre>
     * GetScanReport returns the final report as markdown; FAILED_PRECONDITION
     * until the scan has completed.
     * </pre>
     */
    default void getScanReport(dev.aophub.api.v1.GetScanReportRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetScanReportResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetScanReportMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service ScanService.
   * <pre>
   * ScanService submits and follows scans. A scan is an unattended agent job,
   * "do task MODE against TARGET on a node and report", running in its own
   * session so that its whole event stream can be watched.
   * </pre>
   */
  public static abstract class ScanServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return ScanServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service ScanService.
   * <pre>
   * ScanService submits and follows scans. A scan is an unattended agent job,
   * "do task MODE against TARGET on a node and report", running in its own
   * session so that its whole event stream can be watched.
   * </pre>
   */
  public static final class ScanServiceStub
      extends io.grpc.stub.AbstractAsyncStub<ScanServiceStub> {
    private ScanServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ScanServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ScanServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * SubmitScan queues a scan; it runs when a concurrency slot is free.
     * </pre>
     */
    public void submitScan(dev.aophub.api.v1.SubmitScanRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.SubmitScanResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getSubmitScanMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * GetScan returns one scan.
     * </pre>
     */
    public void getScan(dev.aophub.api.v1.GetScanRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetScanResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetScanMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ListScans pages scans, newest first.
     * </pre>
     */
    public void listScans(dev.aophub.api.v1.ListScansRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListScansResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListScansMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * CancelScan cancels a queued or running scan; canceling a finished scan
     * returns it unchanged.
     * </pre>
     */
    public void cancelScan(dev.aophub.api.v1.CancelScanRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.CancelScanResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCancelScanMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * GetScanReport returns the final report as markdown; FAILED_PRECONDITION
     * until the scan has completed.
     * </pre>
     */
    public void getScanReport(dev.aophub.api.v1.GetScanReportRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetScanReportResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetScanReportMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service ScanService.
   * <pre>
   * ScanService submits and follows scans. A scan is an unattended agent job,
   * "do task MODE against TARGET on a node and report", running in its own
   * session so that its whole event stream can be watched.
   * </pre>
   */
  public static final class ScanServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<ScanServiceBlockingV2Stub> {
    private ScanServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ScanServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ScanServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * SubmitScan queues a scan; it runs when a concurrency slot is free.
     * </pre>
     */
    public dev.aophub.api.v1.SubmitScanResponse submitScan(dev.aophub.api.v1.SubmitScanRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getSubmitScanMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetScan returns one scan.
     * </pre>
     */
    public dev.aophub.api.v1.GetScanResponse getScan(dev.aophub.api.v1.GetScanRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetScanMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListScans pages scans, newest first.
     * </pre>
     */
    public dev.aophub.api.v1.ListScansResponse listScans(dev.aophub.api.v1.ListScansRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListScansMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * CancelScan cancels a queued or running scan; canceling a finished scan
     * returns it unchanged.
     * </pre>
     */
    public dev.aophub.api.v1.CancelScanResponse cancelScan(dev.aophub.api.v1.CancelScanRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCancelScanMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetScanReport returns the final report as markdown; FAILED_PRECONDITION
     * until the scan has completed.
     * </pre>
     */
    public dev.aophub.api.v1.GetScanReportResponse getScanReport(dev.aophub.api.v1.GetScanReportRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetScanReportMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service ScanService.
   * <pre>
   * ScanService submits and follows scans. A scan is an unattended agent job,
   * "do task MODE against TARGET on a node and report", running in its own
   * session so that its whole event stream can be watched.
   * </pre>
   */
  public static final class ScanServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<ScanServiceBlockingStub> {
    private ScanServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ScanServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ScanServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * SubmitScan queues a scan; it runs when a concurrency slot is free.
     * </pre>
     */
    public dev.aophub.api.v1.SubmitScanResponse submitScan(dev.aophub.api.v1.SubmitScanRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getSubmitScanMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetScan returns one scan.
     * </pre>
     */
    public dev.aophub.api.v1.GetScanResponse getScan(dev.aophub.api.v1.GetScanRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetScanMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListScans pages scans, newest first.
     * </pre>
     */
    public dev.aophub.api.v1.ListScansResponse listScans(dev.aophub.api.v1.ListScansRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListScansMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * CancelScan cancels a queued or running scan; canceling a finished scan
     * returns it unchanged.
     * </pre>
     */
    public dev.aophub.api.v1.CancelScanResponse cancelScan(dev.aophub.api.v1.CancelScanRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCancelScanMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetScanReport returns the final report as markdown; FAILED_PRECONDITION
     * until the scan has completed.
     * </pre>
     */
    public dev.aophub.api.v1.GetScanReportResponse getScanReport(dev.aophub.api.v1.GetScanReportRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetScanReportMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service ScanService.
   * <pre>
   * ScanService submits and follows scans. A scan is an unattended agent job,
   * "do task MODE against TARGET on a node and report", running in its own
   * session so that its whole event stream can be watched.
   * </pre>
   */
  public static final class ScanServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<ScanServiceFutureStub> {
    private ScanServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ScanServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ScanServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * SubmitScan queues a scan; it runs when a concurrency slot is free.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.SubmitScanResponse> submitScan(
        dev.aophub.api.v1.SubmitScanRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getSubmitScanMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * GetScan returns one scan.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.GetScanResponse> getScan(
        dev.aophub.api.v1.GetScanRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetScanMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ListScans pages scans, newest first.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.ListScansResponse> listScans(
        dev.aophub.api.v1.ListScansRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListScansMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * CancelScan cancels a queued or running scan; canceling a finished scan
     * returns it unchanged.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.CancelScanResponse> cancelScan(
        dev.aophub.api.v1.CancelScanRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCancelScanMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * GetScanReport returns the final report as markdown; FAILED_PRECONDITION
     * until the scan has completed.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.GetScanReportResponse> getScanReport(
        dev.aophub.api.v1.GetScanReportRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetScanReportMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_SUBMIT_SCAN = 0;
  private static final int METHODID_GET_SCAN = 1;
  private static final int METHODID_LIST_SCANS = 2;
  private static final int METHODID_CANCEL_SCAN = 3;
  private static final int METHODID_GET_SCAN_REPORT = 4;

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
        case METHODID_SUBMIT_SCAN:
          serviceImpl.submitScan((dev.aophub.api.v1.SubmitScanRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.SubmitScanResponse>) responseObserver);
          break;
        case METHODID_GET_SCAN:
          serviceImpl.getScan((dev.aophub.api.v1.GetScanRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetScanResponse>) responseObserver);
          break;
        case METHODID_LIST_SCANS:
          serviceImpl.listScans((dev.aophub.api.v1.ListScansRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListScansResponse>) responseObserver);
          break;
        case METHODID_CANCEL_SCAN:
          serviceImpl.cancelScan((dev.aophub.api.v1.CancelScanRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.CancelScanResponse>) responseObserver);
          break;
        case METHODID_GET_SCAN_REPORT:
          serviceImpl.getScanReport((dev.aophub.api.v1.GetScanReportRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetScanReportResponse>) responseObserver);
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
          getSubmitScanMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.SubmitScanRequest,
              dev.aophub.api.v1.SubmitScanResponse>(
                service, METHODID_SUBMIT_SCAN)))
        .addMethod(
          getGetScanMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.GetScanRequest,
              dev.aophub.api.v1.GetScanResponse>(
                service, METHODID_GET_SCAN)))
        .addMethod(
          getListScansMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.ListScansRequest,
              dev.aophub.api.v1.ListScansResponse>(
                service, METHODID_LIST_SCANS)))
        .addMethod(
          getCancelScanMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.CancelScanRequest,
              dev.aophub.api.v1.CancelScanResponse>(
                service, METHODID_CANCEL_SCAN)))
        .addMethod(
          getGetScanReportMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.GetScanReportRequest,
              dev.aophub.api.v1.GetScanReportResponse>(
                service, METHODID_GET_SCAN_REPORT)))
        .build();
  }

  private static abstract class ScanServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    ScanServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.aophub.api.v1.ScanOuterClass.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("ScanService");
    }
  }

  private static final class ScanServiceFileDescriptorSupplier
      extends ScanServiceBaseDescriptorSupplier {
    ScanServiceFileDescriptorSupplier() {}
  }

  private static final class ScanServiceMethodDescriptorSupplier
      extends ScanServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    ScanServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (ScanServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new ScanServiceFileDescriptorSupplier())
              .addMethod(getSubmitScanMethod())
              .addMethod(getGetScanMethod())
              .addMethod(getListScansMethod())
              .addMethod(getCancelScanMethod())
              .addMethod(getGetScanReportMethod())
              .build();
        }
      }
    }
    return result;
  }
}
