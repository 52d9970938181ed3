package dev.aophub.api.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * MemoryService lists and edits the long-term memory of the hub's built-in
 * agent (node "local"): dated entries in memory.jsonl in the data directory,
 * written by the model's "remember" tool or by AddMemory. The memory is the
 * agent's, shared by every session on the node, so only an admin token (or
 * the access key) may call it. Text that looks like a key, a token or a
 * password is redacted before it is stored.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class MemoryServiceGrpc {

  private MemoryServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "aophub.v1.MemoryService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.ListMemoryRequest,
      dev.aophub.api.v1.ListMemoryResponse> getListMemoryMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListMemory",
      requestType = dev.aophub.api.v1.ListMemoryRequest.class,
      responseType = dev.aophub.api.v1.ListMemoryResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.ListMemoryRequest,
      dev.aophub.api.v1.ListMemoryResponse> getListMemoryMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.ListMemoryRequest, dev.aophub.api.v1.ListMemoryResponse> getListMemoryMethod;
    if ((getListMemoryMethod = MemoryServiceGrpc.getListMemoryMethod) == null) {
      synchronized (MemoryServiceGrpc.class) {
        if ((getListMemoryMethod = MemoryServiceGrpc.getListMemoryMethod) == null) {
          MemoryServiceGrpc.getListMemoryMethod = getListMemoryMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.ListMemoryRequest, dev.aophub.api.v1.ListMemoryResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListMemory"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListMemoryRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListMemoryResponse.getDefaultInstance()))
              .setSchemaDescriptor(new MemoryServiceMethodDescriptorSupplier("ListMemory"))
              .build();
        }
      }
    }
    return getListMemoryMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.AddMemoryRequest,
      dev.aophub.api.v1.AddMemoryResponse> getAddMemoryMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "AddMemory",
      requestType = dev.aophub.api.v1.AddMemoryRequest.class,
      responseType = dev.aophub.api.v1.AddMemoryResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.AddMemoryRequest,
      dev.aophub.api.v1.AddMemoryResponse> getAddMemoryMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.AddMemoryRequest, dev.aophub.api.v1.AddMemoryResponse> getAddMemoryMethod;
    if ((getAddMemoryMethod = MemoryServiceGrpc.getAddMemoryMethod) == null) {
      synchronized (MemoryServiceGrpc.class) {
        if ((getAddMemoryMethod = MemoryServiceGrpc.getAddMemoryMethod) == null) {
          MemoryServiceGrpc.getAddMemoryMethod = getAddMemoryMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.AddMemoryRequest, dev.aophub.api.v1.AddMemoryResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "AddMemory"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.AddMemoryRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.AddMemoryResponse.getDefaultInstance()))
              .setSchemaDescriptor(new MemoryServiceMethodDescriptorSupplier("AddMemory"))
              .build();
        }
      }
    }
    return getAddMemoryMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.EditMemoryRequest,
      dev.aophub.api.v1.EditMemoryResponse> getEditMemoryMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "EditMemory",
      requestType = dev.aophub.api.v1.EditMemoryRequest.class,
      responseType = dev.aophub.api.v1.EditMemoryResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.EditMemoryRequest,
      dev.aophub.api.v1.EditMemoryResponse> getEditMemoryMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.EditMemoryRequest, dev.aophub.api.v1.EditMemoryResponse> getEditMemoryMethod;
    if ((getEditMemoryMethod = MemoryServiceGrpc.getEditMemoryMethod) == null) {
      synchronized (MemoryServiceGrpc.class) {
        if ((getEditMemoryMethod = MemoryServiceGrpc.getEditMemoryMethod) == null) {
          MemoryServiceGrpc.getEditMemoryMethod = getEditMemoryMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.EditMemoryRequest, dev.aophub.api.v1.EditMemoryResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "EditMemory"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.EditMemoryRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.EditMemoryResponse.getDefaultInstance()))
              .setSchemaDescriptor(new MemoryServiceMethodDescriptorSupplier("EditMemory"))
              .build();
        }
      }
    }
    return getEditMemoryMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.DeleteMemoryRequest,
      dev.aophub.api.v1.DeleteMemoryResponse> getDeleteMemoryMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DeleteMemory",
      requestType = dev.aophub.api.v1.DeleteMemoryRequest.class,
      responseType = dev.aophub.api.v1.DeleteMemoryResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.DeleteMemoryRequest,
      dev.aophub.api.v1.DeleteMemoryResponse> getDeleteMemoryMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.DeleteMemoryRequest, dev.aophub.api.v1.DeleteMemoryResponse> getDeleteMemoryMethod;
    if ((getDeleteMemoryMethod = MemoryServiceGrpc.getDeleteMemoryMethod) == null) {
      synchronized (MemoryServiceGrpc.class) {
        if ((getDeleteMemoryMethod = MemoryServiceGrpc.getDeleteMemoryMethod) == null) {
          MemoryServiceGrpc.getDeleteMemoryMethod = getDeleteMemoryMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.DeleteMemoryRequest, dev.aophub.api.v1.DeleteMemoryResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DeleteMemory"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.DeleteMemoryRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.DeleteMemoryResponse.getDefaultInstance()))
              .setSchemaDescriptor(new MemoryServiceMethodDescriptorSupplier("DeleteMemory"))
              .build();
        }
      }
    }
    return getDeleteMemoryMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.SearchMemoryRequest,
      dev.aophub.api.v1.SearchMemoryResponse> getSearchMemoryMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "SearchMemory",
      requestType = dev.aophub.api.v1.SearchMemoryRequest.class,
      responseType = dev.aophub.api.v1.SearchMemoryResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.SearchMemoryRequest,
      dev.aophub.api.v1.SearchMemoryResponse> getSearchMemoryMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.SearchMemoryRequest, dev.aophub.api.v1.SearchMemoryResponse> getSearchMemoryMethod;
    if ((getSearchMemoryMethod = MemoryServiceGrpc.getSearchMemoryMethod) == null) {
      synchronized (MemoryServiceGrpc.class) {
        if ((getSearchMemoryMethod = MemoryServiceGrpc.getSearchMemoryMethod) == null) {
          MemoryServiceGrpc.getSearchMemoryMethod = getSearchMemoryMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.SearchMemoryRequest, dev.aophub.api.v1.SearchMemoryResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "SearchMemory"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.SearchMemoryRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.SearchMemoryResponse.getDefaultInstance()))
              .setSchemaDescriptor(new MemoryServiceMethodDescriptorSupplier("SearchMemory"))
              .build();
        }
      }
    }
    return getSearchMemoryMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static MemoryServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<MemoryServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<MemoryServiceStub>() {
        @java.lang.Override
        public MemoryServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new MemoryServiceStub(channel, callOptions);
        }
      };
    return MemoryServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static MemoryServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<MemoryServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<MemoryServiceBlockingV2Stub>() {
        @java.lang.Override
        public MemoryServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new MemoryServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return MemoryServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static MemoryServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<MemoryServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<MemoryServiceBlockingStub>() {
        @java.lang.Override
        public MemoryServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new MemoryServiceBlockingStub(channel, callOptions);
        }
      };
    return MemoryServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static MemoryServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<MemoryServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<MemoryServiceFutureStub>() {
        @java.lang.Override
        public MemoryServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new MemoryServiceFutureStub(channel, callOptions);
        }
      };
    return MemoryServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * MemoryService lists and edits the long-term memory of the hub's built-in
   * agent (node "local"): dated entries in memory.jsonl in the data directory,
   * written by the model's "remember" tool or by AddMemory. The memory is the
   * agent's, shared by every session on the node, so only an admin token (or
   * the access key) may call it. Text that looks like a key, a token or a
   * password is redacted before it is stored.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * ListMemory returns every entry, newest first.
     * </pre>
     */
    default void listMemory(dev.aophub.api.v1.ListMemoryRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListMemoryResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListMemoryMethod(), responseObserver);
    }

    /**
     * <pre>
     * AddMemory stores a new entry (rejected INVALID_ARGUMENT when the text is
     * empty or longer than 4096 characters).
     * </pre>
     */
    default void addMemory(dev.aophub.api.v1.AddMemoryRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.AddMemoryResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getAddMemoryMethod(), responseObserver);
    }

    /**
     * <pre>
     * EditMemory replaces an entry's text (rejected NOT_FOUND for an unknown id).
     * </pre>
     */
    default void editMemory(dev.aophub.api.v1.EditMemoryRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.EditMemoryResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getEditMemoryMethod(), responseObserver);
    }

    /**
     * <pre>
     * DeleteMemory removes an entry (rejected NOT_FOUND for an unknown id).
     * </pre>
     */
    default void deleteMemory(dev.aophub.api.v1.DeleteMemoryRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.DeleteMemoryResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDeleteMemoryMethod(), responseObserver);
    }

    /**
     * <pre>
     * SearchMemory returns the entries that contain every word of the query
     * (case-insensitive), newest first.
     * </pre>
     */
    default void searchMemory(dev.aophub.api.v1.SearchMemoryRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.SearchMemoryResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getSearchMemoryMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service MemoryService.
   * <pre>
   * MemoryService lists and edits the long-term memory of the hub's built-in
   * agent (node "local"): dated entries in memory.jsonl in the data directory,
   * written by the model's "remember" tool or by AddMemory. The memory is the
   * agent's, shared by every session on the node, so only an admin token (or
   * the access key) may call it. Text that looks like a key, a token or a
   * password is redacted before it is stored.
   * </pre>
   */
  public static abstract class MemoryServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return MemoryServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service MemoryService.
   * <pre>
   * MemoryService lists and edits the long-term memory of the hub's built-in
   * agent (node "local"): dated entries in memory.jsonl in the data directory,
   * written by the model's "remember" tool or by AddMemory. The memory is the
   * agent's, shared by every session on the node, so only an admin token (or
   * the access key) may call it. Text that looks like a key, a token or a
   * password is redacted before it is stored.
   * </pre>
   */
  public static final class MemoryServiceStub
      extends io.grpc.stub.AbstractAsyncStub<MemoryServiceStub> {
    private MemoryServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected MemoryServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new MemoryServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListMemory returns every entry, newest first.
     * </pre>
     */
    public void listMemory(dev.aophub.api.v1.ListMemoryRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListMemoryResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListMemoryMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * AddMemory stores a new entry (rejected INVALID_ARGUMENT when the text is
     * empty or longer than 4096 characters).
     * </pre>
     */
    public void addMemory(dev.aophub.api.v1.AddMemoryRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.AddMemoryResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getAddMemoryMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * EditMemory replaces an entry's text (rejected NOT_FOUND for an unknown id).
     * </pre>
     */
    public void editMemory(dev.aophub.api.v1.EditMemoryRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.EditMemoryResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getEditMemoryMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * DeleteMemory removes an entry (rejected NOT_FOUND for an unknown id).
     * </pre>
     */
    public void deleteMemory(dev.aophub.api.v1.DeleteMemoryRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.DeleteMemoryResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDeleteMemoryMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * SearchMemory returns the entries that contain every word of the query
     * (case-insensitive), newest first.
     * </pre>
     */
    public void searchMemory(dev.aophub.api.v1.SearchMemoryRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.SearchMemoryResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getSearchMemoryMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service MemoryService.
   * <pre>
   * MemoryService lists and edits the long-term memory of the hub's built-in
   * agent (node "local"): dated entries in memory.jsonl in the data directory,
   * written by the model's "remember" tool or by AddMemory. The memory is the
   * agent's, shared by every session on the node, so only an admin token (or
   * the access key) may call it. Text that looks like a key, a token or a
   * password is redacted before it is stored.
   * </pre>
   */
  public static final class MemoryServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<MemoryServiceBlockingV2Stub> {
    private MemoryServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected MemoryServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new MemoryServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * ListMemory returns every entry, newest first.
     * </pre>
     */
    public dev.aophub.api.v1.ListMemoryResponse listMemory(dev.aophub.api.v1.ListMemoryRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListMemoryMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * AddMemory stores a new entry (rejected INVALID_ARGUMENT when the text is
     * empty or longer than 4096 characters).
     * </pre>
     */
    public dev.aophub.api.v1.AddMemoryResponse addMemory(dev.aophub.api.v1.AddMemoryRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getAddMemoryMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * EditMemory replaces an entry's text (rejected NOT_FOUND for an unknown id).
     * </pre>
     */
    public dev.aophub.api.v1.EditMemoryResponse editMemory(dev.aophub.api.v1.EditMemoryRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getEditMemoryMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * DeleteMemory removes an entry (rejected NOT_FOUND for an unknown id).
     * </pre>
     */
    public dev.aophub.api.v1.DeleteMemoryResponse deleteMemory(dev.aophub.api.v1.DeleteMemoryRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDeleteMemoryMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * SearchMemory returns the entries that contain every word of the query
     * (case-insensitive), newest first.
     * </pre>
     */
    public dev.aophub.api.v1.SearchMemoryResponse searchMemory(dev.aophub.api.v1.SearchMemoryRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getSearchMemoryMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service MemoryService.
   * <pre>
   * MemoryService lists and edits the long-term memory of the hub's built-in
   * agent (node "local"): dated entries in memory.jsonl in the data directory,
   * written by the model's "remember" tool or by AddMemory. The memory is the
   * agent's, shared by every session on the node, so only an admin token (or
   * the access key) may call it. Text that looks like a key, a token or a
   * password is redacted before it is stored.
   * </pre>
   */
  public static final class MemoryServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<MemoryServiceBlockingStub> {
    private MemoryServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected MemoryServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new MemoryServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListMemory returns every entry, newest first.
     * </pre>
     */
    public dev.aophub.api.v1.ListMemoryResponse listMemory(dev.aophub.api.v1.ListMemoryRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListMemoryMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * AddMemory stores a new entry (rejected INVALID_ARGUMENT when the text is
     * empty or longer than 4096 characters).
     * </pre>
     */
    public dev.aophub.api.v1.AddMemoryResponse addMemory(dev.aophub.api.v1.AddMemoryRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getAddMemoryMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * EditMemory replaces an entry's text (rejected NOT_FOUND for an unknown id).
     * </pre>
     */
    public dev.aophub.api.v1.EditMemoryResponse editMemory(dev.aophub.api.v1.EditMemoryRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getEditMemoryMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * DeleteMemory removes an entry (rejected NOT_FOUND for an unknown id).
     * </pre>
     */
    public dev.aophub.api.v1.DeleteMemoryResponse deleteMemory(dev.aophub.api.v1.DeleteMemoryRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDeleteMemoryMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * SearchMemory returns the entries that contain every word of the query
     * (case-insensitive), newest first.
     * </pre>
     */
    public dev.aophub.api.v1.SearchMemoryResponse searchMemory(dev.aophub.api.v1.SearchMemoryRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getSearchMemoryMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service MemoryService.
   * <pre>
   * MemoryService lists and edits the long-term memory of the hub's built-in
   * agent (node "local"): dated entries in memory.jsonl in the data directory,
   * written by the model's "remember" tool or by AddMemory. The memory is the
   * agent's, shared by every session on the node, so only an admin token (or
   * the access key) may call it. Text that looks like a key, a token or a
   * password is redacted before it is stored.
   * </pre>
   */
  public static final class MemoryServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<MemoryServiceFutureStub> {
    private MemoryServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected MemoryServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new MemoryServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListMemory returns every entry, newest first.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.ListMemoryResponse> listMemory(
        dev.aophub.api.v1.ListMemoryRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListMemoryMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * AddMemory stores a new entry (rejected INVALID_ARGUMENT when the text is
     * empty or longer than 4096 characters).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.AddMemoryResponse> addMemory(
        dev.aophub.api.v1.AddMemoryRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getAddMemoryMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * EditMemory replaces an entry's text (rejected NOT_FOUND for an unknown id).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.EditMemoryResponse> editMemory(
        dev.aophub.api.v1.EditMemoryRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getEditMemoryMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * DeleteMemory removes an entry (rejected NOT_FOUND for an unknown id).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.DeleteMemoryResponse> deleteMemory(
        dev.aophub.api.v1.DeleteMemoryRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDeleteMemoryMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * SearchMemory returns the entries that contain every word of the query
     * (case-insensitive), newest first.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.SearchMemoryResponse> searchMemory(
        dev.aophub.api.v1.SearchMemoryRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getSearchMemoryMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_LIST_MEMORY = 0;
  private static final int METHODID_ADD_MEMORY = 1;
  private static final int METHODID_EDIT_MEMORY = 2;
  private static final int METHODID_DELETE_MEMORY = 3;
  private static final int METHODID_SEARCH_MEMORY = 4;

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
        case METHODID_LIST_MEMORY:
          serviceImpl.listMemory((dev.aophub.api.v1.ListMemoryRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListMemoryResponse>) responseObserver);
          break;
        case METHODID_ADD_MEMORY:
          serviceImpl.addMemory((dev.aophub.api.v1.AddMemoryRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.AddMemoryResponse>) responseObserver);
          break;
        case METHODID_EDIT_MEMORY:
          serviceImpl.editMemory((dev.aophub.api.v1.EditMemoryRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.EditMemoryResponse>) responseObserver);
          break;
        case METHODID_DELETE_MEMORY:
          serviceImpl.deleteMemory((dev.aophub.api.v1.DeleteMemoryRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.DeleteMemoryResponse>) responseObserver);
          break;
        case METHODID_SEARCH_MEMORY:
          serviceImpl.searchMemory((dev.aophub.api.v1.SearchMemoryRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.SearchMemoryResponse>) responseObserver);
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
          getListMemoryMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.ListMemoryRequest,
              dev.aophub.api.v1.ListMemoryResponse>(
                service, METHODID_LIST_MEMORY)))
        .addMethod(
          getAddMemoryMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.AddMemoryRequest,
              dev.aophub.api.v1.AddMemoryResponse>(
                service, METHODID_ADD_MEMORY)))
        .addMethod(
          getEditMemoryMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.EditMemoryRequest,
              dev.aophub.api.v1.EditMemoryResponse>(
                service, METHODID_EDIT_MEMORY)))
        .addMethod(
          getDeleteMemoryMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.DeleteMemoryRequest,
              dev.aophub.api.v1.DeleteMemoryResponse>(
                service, METHODID_DELETE_MEMORY)))
        .addMethod(
          getSearchMemoryMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.SearchMemoryRequest,
              dev.aophub.api.v1.SearchMemoryResponse>(
                service, METHODID_SEARCH_MEMORY)))
        .build();
  }

  private static abstract class MemoryServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    MemoryServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.aophub.api.v1.Memory.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("MemoryService");
    }
  }

  private static final class MemoryServiceFileDescriptorSupplier
      extends MemoryServiceBaseDescriptorSupplier {
    MemoryServiceFileDescriptorSupplier() {}
  }

  private static final class MemoryServiceMethodDescriptorSupplier
      extends MemoryServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    MemoryServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (MemoryServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new MemoryServiceFileDescriptorSupplier())
              .addMethod(getListMemoryMethod())
              .addMethod(getAddMemoryMethod())
              .addMethod(getEditMemoryMethod())
              .addMethod(getDeleteMemoryMethod())
              .addMethod(getSearchMemoryMethod())
              .build();
        }
      }
    }
    return result;
  }
}
