package dev.aophub.api.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * SessionService lists, inspects and manages sessions. Sessions are opened
 * and turns are run on the application channel (/api/aop/application/ws).
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class SessionServiceGrpc {

  private SessionServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "aophub.v1.SessionService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.ListSessionsRequest,
      dev.aophub.api.v1.ListSessionsResponse> getListSessionsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListSessions",
      requestType = dev.aophub.api.v1.ListSessionsRequest.class,
      responseType = dev.aophub.api.v1.ListSessionsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.ListSessionsRequest,
      dev.aophub.api.v1.ListSessionsResponse> getListSessionsMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.ListSessionsRequest, dev.aophub.api.v1.ListSessionsResponse> getListSessionsMethod;
    if ((getListSessionsMethod = SessionServiceGrpc.getListSessionsMethod) == null) {
      synchronized (SessionServiceGrpc.class) {
        if ((getListSessionsMethod = SessionServiceGrpc.getListSessionsMethod) == null) {
          SessionServiceGrpc.getListSessionsMethod = getListSessionsMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.ListSessionsRequest, dev.aophub.api.v1.ListSessionsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListSessions"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListSessionsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListSessionsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SessionServiceMethodDescriptorSupplier("ListSessions"))
              .build();
        }
      }
    }
    return getListSessionsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.GetSessionRequest,
      dev.aophub.api.v1.GetSessionResponse> getGetSessionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetSession",
      requestType = dev.aophub.api.v1.GetSessionRequest.class,
      responseType = dev.aophub.api.v1.GetSessionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.GetSessionRequest,
      dev.aophub.api.v1.GetSessionResponse> getGetSessionMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.GetSessionRequest, dev.aophub.api.v1.GetSessionResponse> getGetSessionMethod;
    if ((getGetSessionMethod = SessionServiceGrpc.getGetSessionMethod) == null) {
      synchronized (SessionServiceGrpc.class) {
        if ((getGetSessionMethod = SessionServiceGrpc.getGetSessionMethod) == null) {
          SessionServiceGrpc.getGetSessionMethod = getGetSessionMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.GetSessionRequest, dev.aophub.api.v1.GetSessionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetSession"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.GetSessionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.GetSessionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SessionServiceMethodDescriptorSupplier("GetSession"))
              .build();
        }
      }
    }
    return getGetSessionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.UpdateSessionRequest,
      dev.aophub.api.v1.UpdateSessionResponse> getUpdateSessionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "UpdateSession",
      requestType = dev.aophub.api.v1.UpdateSessionRequest.class,
      responseType = dev.aophub.api.v1.UpdateSessionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.UpdateSessionRequest,
      dev.aophub.api.v1.UpdateSessionResponse> getUpdateSessionMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.UpdateSessionRequest, dev.aophub.api.v1.UpdateSessionResponse> getUpdateSessionMethod;
    if ((getUpdateSessionMethod = SessionServiceGrpc.getUpdateSessionMethod) == null) {
      synchronized (SessionServiceGrpc.class) {
        if ((getUpdateSessionMethod = SessionServiceGrpc.getUpdateSessionMethod) == null) {
          SessionServiceGrpc.getUpdateSessionMethod = getUpdateSessionMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.UpdateSessionRequest, dev.aophub.api.v1.UpdateSessionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "UpdateSession"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.UpdateSessionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.UpdateSessionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SessionServiceMethodDescriptorSupplier("UpdateSession"))
              .build();
        }
      }
    }
    return getUpdateSessionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.ResetSessionRequest,
      dev.aophub.api.v1.ResetSessionResponse> getResetSessionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ResetSession",
      requestType = dev.aophub.api.v1.ResetSessionRequest.class,
      responseType = dev.aophub.api.v1.ResetSessionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.ResetSessionRequest,
      dev.aophub.api.v1.ResetSessionResponse> getResetSessionMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.ResetSessionRequest, dev.aophub.api.v1.ResetSessionResponse> getResetSessionMethod;
    if ((getResetSessionMethod = SessionServiceGrpc.getResetSessionMethod) == null) {
      synchronized (SessionServiceGrpc.class) {
        if ((getResetSessionMethod = SessionServiceGrpc.getResetSessionMethod) == null) {
          SessionServiceGrpc.getResetSessionMethod = getResetSessionMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.ResetSessionRequest, dev.aophub.api.v1.ResetSessionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ResetSession"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ResetSessionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ResetSessionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SessionServiceMethodDescriptorSupplier("ResetSession"))
              .build();
        }
      }
    }
    return getResetSessionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.DeleteSessionRequest,
      dev.aophub.api.v1.DeleteSessionResponse> getDeleteSessionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DeleteSession",
      requestType = dev.aophub.api.v1.DeleteSessionRequest.class,
      responseType = dev.aophub.api.v1.DeleteSessionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.DeleteSessionRequest,
      dev.aophub.api.v1.DeleteSessionResponse> getDeleteSessionMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.DeleteSessionRequest, dev.aophub.api.v1.DeleteSessionResponse> getDeleteSessionMethod;
    if ((getDeleteSessionMethod = SessionServiceGrpc.getDeleteSessionMethod) == null) {
      synchronized (SessionServiceGrpc.class) {
        if ((getDeleteSessionMethod = SessionServiceGrpc.getDeleteSessionMethod) == null) {
          SessionServiceGrpc.getDeleteSessionMethod = getDeleteSessionMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.DeleteSessionRequest, dev.aophub.api.v1.DeleteSessionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DeleteSession"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.DeleteSessionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.DeleteSessionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SessionServiceMethodDescriptorSupplier("DeleteSession"))
              .build();
        }
      }
    }
    return getDeleteSessionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.ListCommandsRequest,
      dev.aophub.api.v1.ListCommandsResponse> getListCommandsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListCommands",
      requestType = dev.aophub.api.v1.ListCommandsRequest.class,
      responseType = dev.aophub.api.v1.ListCommandsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.ListCommandsRequest,
      dev.aophub.api.v1.ListCommandsResponse> getListCommandsMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.ListCommandsRequest, dev.aophub.api.v1.ListCommandsResponse> getListCommandsMethod;
    if ((getListCommandsMethod = SessionServiceGrpc.getListCommandsMethod) == null) {
      synchronized (SessionServiceGrpc.class) {
        if ((getListCommandsMethod = SessionServiceGrpc.getListCommandsMethod) == null) {
          SessionServiceGrpc.getListCommandsMethod = getListCommandsMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.ListCommandsRequest, dev.aophub.api.v1.ListCommandsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListCommands"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListCommandsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListCommandsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SessionServiceMethodDescriptorSupplier("ListCommands"))
              .build();
        }
      }
    }
    return getListCommandsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.RunCommandRequest,
      dev.aophub.api.v1.RunCommandResponse> getRunCommandMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "RunCommand",
      requestType = dev.aophub.api.v1.RunCommandRequest.class,
      responseType = dev.aophub.api.v1.RunCommandResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.RunCommandRequest,
      dev.aophub.api.v1.RunCommandResponse> getRunCommandMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.RunCommandRequest, dev.aophub.api.v1.RunCommandResponse> getRunCommandMethod;
    if ((getRunCommandMethod = SessionServiceGrpc.getRunCommandMethod) == null) {
      synchronized (SessionServiceGrpc.class) {
        if ((getRunCommandMethod = SessionServiceGrpc.getRunCommandMethod) == null) {
          SessionServiceGrpc.getRunCommandMethod = getRunCommandMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.RunCommandRequest, dev.aophub.api.v1.RunCommandResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "RunCommand"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.RunCommandRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.RunCommandResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SessionServiceMethodDescriptorSupplier("RunCommand"))
              .build();
        }
      }
    }
    return getRunCommandMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.aop.ListEventsRequest,
      dev.aophub.aop.ListEventsResponse> getListEventsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListEvents",
      requestType = dev.aophub.aop.ListEventsRequest.class,
      responseType = dev.aophub.aop.ListEventsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.aop.ListEventsRequest,
      dev.aophub.aop.ListEventsResponse> getListEventsMethod() {
    io.grpc.MethodDescriptor<dev.aophub.aop.ListEventsRequest, dev.aophub.aop.ListEventsResponse> getListEventsMethod;
    if ((getListEventsMethod = SessionServiceGrpc.getListEventsMethod) == null) {
      synchronized (SessionServiceGrpc.class) {
        if ((getListEventsMethod = SessionServiceGrpc.getListEventsMethod) == null) {
          SessionServiceGrpc.getListEventsMethod = getListEventsMethod =
              io.grpc.MethodDescriptor.<dev.aophub.aop.ListEventsRequest, dev.aophub.aop.ListEventsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListEvents"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.aop.ListEventsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.aop.ListEventsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SessionServiceMethodDescriptorSupplier("ListEvents"))
              .build();
        }
      }
    }
    return getListEventsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.ShareSessionRequest,
      dev.aophub.api.v1.ShareSessionResponse> getShareSessionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ShareSession",
      requestType = dev.aophub.api.v1.ShareSessionRequest.class,
      responseType = dev.aophub.api.v1.ShareSessionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.ShareSessionRequest,
      dev.aophub.api.v1.ShareSessionResponse> getShareSessionMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.ShareSessionRequest, dev.aophub.api.v1.ShareSessionResponse> getShareSessionMethod;
    if ((getShareSessionMethod = SessionServiceGrpc.getShareSessionMethod) == null) {
      synchronized (SessionServiceGrpc.class) {
        if ((getShareSessionMethod = SessionServiceGrpc.getShareSessionMethod) == null) {
          SessionServiceGrpc.getShareSessionMethod = getShareSessionMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.ShareSessionRequest, dev.aophub.api.v1.ShareSessionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ShareSession"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ShareSessionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ShareSessionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SessionServiceMethodDescriptorSupplier("ShareSession"))
              .build();
        }
      }
    }
    return getShareSessionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.UnshareSessionRequest,
      dev.aophub.api.v1.UnshareSessionResponse> getUnshareSessionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "UnshareSession",
      requestType = dev.aophub.api.v1.UnshareSessionRequest.class,
      responseType = dev.aophub.api.v1.UnshareSessionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.UnshareSessionRequest,
      dev.aophub.api.v1.UnshareSessionResponse> getUnshareSessionMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.UnshareSessionRequest, dev.aophub.api.v1.UnshareSessionResponse> getUnshareSessionMethod;
    if ((getUnshareSessionMethod = SessionServiceGrpc.getUnshareSessionMethod) == null) {
      synchronized (SessionServiceGrpc.class) {
        if ((getUnshareSessionMethod = SessionServiceGrpc.getUnshareSessionMethod) == null) {
          SessionServiceGrpc.getUnshareSessionMethod = getUnshareSessionMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.UnshareSessionRequest, dev.aophub.api.v1.UnshareSessionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "UnshareSession"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.UnshareSessionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.UnshareSessionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SessionServiceMethodDescriptorSupplier("UnshareSession"))
              .build();
        }
      }
    }
    return getUnshareSessionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.SummarizeSessionRequest,
      dev.aophub.api.v1.SummarizeSessionResponse> getSummarizeSessionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "SummarizeSession",
      requestType = dev.aophub.api.v1.SummarizeSessionRequest.class,
      responseType = dev.aophub.api.v1.SummarizeSessionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.SummarizeSessionRequest,
      dev.aophub.api.v1.SummarizeSessionResponse> getSummarizeSessionMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.SummarizeSessionRequest, dev.aophub.api.v1.SummarizeSessionResponse> getSummarizeSessionMethod;
    if ((getSummarizeSessionMethod = SessionServiceGrpc.getSummarizeSessionMethod) == null) {
      synchronized (SessionServiceGrpc.class) {
        if ((getSummarizeSessionMethod = SessionServiceGrpc.getSummarizeSessionMethod) == null) {
          SessionServiceGrpc.getSummarizeSessionMethod = getSummarizeSessionMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.SummarizeSessionRequest, dev.aophub.api.v1.SummarizeSessionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "SummarizeSession"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.SummarizeSessionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.SummarizeSessionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SessionServiceMethodDescriptorSupplier("SummarizeSession"))
              .build();
        }
      }
    }
    return getSummarizeSessionMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static SessionServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<SessionServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<SessionServiceStub>() {
        @java.lang.Override
        public SessionServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new SessionServiceStub(channel, callOptions);
        }
      };
    return SessionServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static SessionServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<SessionServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<SessionServiceBlockingV2Stub>() {
        @java.lang.Override
        public SessionServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new SessionServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return SessionServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static SessionServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<SessionServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<SessionServiceBlockingStub>() {
        @java.lang.Override
        public SessionServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new SessionServiceBlockingStub(channel, callOptions);
        }
      };
    return SessionServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static SessionServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<SessionServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<SessionServiceFutureStub>() {
        @java.lang.Override
        public SessionServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new SessionServiceFutureStub(channel, callOptions);
        }
      };
    return SessionServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * SessionService lists, inspects and manages sessions. Sessions are opened
   * and turns are run on the application channel (/api/aop/application/ws).
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * ListSessions pages sessions, most recently updated first; optionally only
     * those whose title contains a text (title_contains).
     * </pre>
     */
    default void listSessions(dev.aophub.api.v1.ListSessionsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListSessionsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListSessionsMethod(), responseObserver);
    }

    /**
     * <pre>
     * GetSession returns one session.
     * </pre>
     */
    default void getSession(dev.aophub.api.v1.GetSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetSessionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetSessionMethod(), responseObserver);
    }

    /**
     * <pre>
     * UpdateSession changes a session's title or archive flag.
     * </pre>
     */
    default void updateSession(dev.aophub.api.v1.UpdateSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.UpdateSessionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getUpdateSessionMethod(), responseObserver);
    }

    /**
     * <pre>
     * ResetSession opens a new session on the same node and closes the old one
     * with reason "reset".
     * </pre>
     */
    default void resetSession(dev.aophub.api.v1.ResetSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ResetSessionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getResetSessionMethod(), responseObserver);
    }

    /**
     * <pre>
     * DeleteSession deletes a session with its events, turns and interactions.
     * </pre>
     */
    default void deleteSession(dev.aophub.api.v1.DeleteSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.DeleteSessionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDeleteSessionMethod(), responseObserver);
    }

    /**
     * <pre>
     * ListCommands returns the hub's commands and those of the session's node.
     * </pre>
     */
    default void listCommands(dev.aophub.api.v1.ListCommandsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListCommandsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListCommandsMethod(), responseObserver);
    }

    /**
     * <pre>
     * RunCommand runs a slash command line in a session, exactly like
     * aiscan.command.CommandProtocolMessage{request} on the application channel
     * (AOP-nodes 9.7): the hub stores the line, runs /help and /agents itself,
     * refuses the verbs that have their own RPC, and forwards everything else to
     * the session's node. Not journaled: a retry runs the command again.
     * </pre>
     */
    default void runCommand(dev.aophub.api.v1.RunCommandRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.RunCommandResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRunCommandMethod(), responseObserver);
    }

    /**
     * <pre>
     * ListEvents pages a session's persisted events oldest-first, exactly like
     * list_events_request on the application channel.
     * </pre>
     */
    default void listEvents(dev.aophub.aop.ListEventsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.aop.ListEventsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListEventsMethod(), responseObserver);
    }

    /**
     * <pre>
     * ShareSession lets another token name (or "*", every app token) see and
     * act in a session as its owner does. Only the owner or an admin may share.
     * Sharing again with the same name changes nothing.
     * </pre>
     */
    default void shareSession(dev.aophub.api.v1.ShareSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ShareSessionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getShareSessionMethod(), responseObserver);
    }

    /**
     * <pre>
     * UnshareSession takes a share back: the name (or "*") no longer sees the
     * session, and its open watches of it end with NOT_FOUND. Only the owner or
     * an admin may unshare. Unsharing a name the session is not shared with
     * changes nothing.
     * </pre>
     */
    default void unshareSession(dev.aophub.api.v1.UnshareSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.UnshareSessionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getUnshareSessionMethod(), responseObserver);
    }

    /**
     * <pre>
     * SummarizeSession asks the session's node to fold the conversation so far
     * into its running summary now, exactly like the command line "/summarize"
     * (see RunCommand): the summary arrives as an event of the session (an
     * aop.Message with the aophub.v1.ContextSummary extension). Not journaled.
     * </pre>
     */
    default void summarizeSession(dev.aophub.api.v1.SummarizeSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.SummarizeSessionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getSummarizeSessionMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service SessionService.
   * <pre>
   * SessionService lists, inspects and manages sessions. Sessions are opened
   * and turns are run on the application channel (/api/aop/application/ws).
   * </pre>
   */
  public static abstract class SessionServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return SessionServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service SessionService.
   * <pre>
   * SessionService lists, inspects and manages sessions. Sessions are opened
   * and turns are run on the application channel (/api/aop/application/ws).
   * </pre>
   */
  public static final class SessionServiceStub
      extends io.grpc.stub.AbstractAsyncStub<SessionServiceStub> {
    private SessionServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected SessionServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new SessionServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListSessions pages sessions, most recently updated first; optionally only
     * those whose title contains a text (title_contains).
     * </pre>
     */
    public void listSessions(dev.aophub.api.v1.ListSessionsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListSessionsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListSessionsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * GetSession returns one session.
     * </pre>
     */
    public void getSession(dev.aophub.api.v1.GetSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetSessionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetSessionMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * UpdateSession changes a session's title or archive flag.
     * </pre>
     */
    public void updateSession(dev.aophub.api.v1.UpdateSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.UpdateSessionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getUpdateSessionMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ResetSession opens a new session on the same node and closes the old one
     * with reason "reset".
     * </pre>
     */
    public void resetSession(dev.aophub.api.v1.ResetSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ResetSessionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getResetSessionMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * DeleteSession deletes a session with its events, turns and interactions.
     * </pre>
     */
    public void deleteSession(dev.aophub.api.v1.DeleteSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.DeleteSessionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDeleteSessionMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ListCommands returns the hub's commands and those of the session's node.
     * </pre>
     */
    public void listCommands(dev.aophub.api.v1.ListCommandsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListCommandsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListCommandsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * RunCommand runs a slash command line in a session, exactly like
     * aiscan.command.CommandProtocolMessage{request} on the application channel
     * (AOP-nodes 9.7): the hub stores the line, runs /help and /agents itself,
     * refuses the verbs that have their own RPC, and forwards everything else to
     * the session's node. Not journaled: a retry runs the command again.
     * </pre>
     */
    public void runCommand(dev.aophub.api.v1.RunCommandRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.RunCommandResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRunCommandMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ListEvents pages a session's persisted events oldest-first, exactly like
     * list_events_request on the application channel.
     * </pre>
     */
    public void listEvents(dev.aophub.aop.ListEventsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.aop.ListEventsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListEventsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ShareSession lets another token name (or "*", every app token) see and
     * act in a session as its owner does. Only the owner or an admin may share.
     * Sharing again with the same name changes nothing.
     * </pre>
     */
    public void shareSession(dev.aophub.api.v1.ShareSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ShareSessionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getShareSessionMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * UnshareSession takes a share back: the name (or "*") no longer sees the
     * session, and its open watches of it end with NOT_FOUND. Only the owner or
     * an admin may unshare. Unsharing a name the session is not shared with
     * changes nothing.
     * </pre>
     */
    public void unshareSession(dev.aophub.api.v1.UnshareSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.UnshareSessionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getUnshareSessionMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * SummarizeSession asks the session's node to fold the conversation so far
     * into its running summary now, exactly like the command line "/summarize"
     * (see RunCommand): the summary arrives as an event of the session (an
     * aop.Message with the aophub.v1.ContextSummary extension). Not journaled.
     * </pre>
     */
    public void summarizeSession(dev.aophub.api.v1.SummarizeSessionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.SummarizeSessionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getSummarizeSessionMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service SessionService.
   * <pre>
   * SessionService lists, inspects and manages sessions. Sessions are opened
   * and turns are run on the application channel (/api/aop/application/ws).
   * </pre>
   */
  public static final class SessionServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<SessionServiceBlockingV2Stub> {
    private SessionServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected SessionServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new SessionServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * ListSessions pages sessions, most recently updated first; optionally only
     * those whose title contains a text (title_contains).
     * </pre>
     */
    public dev.aophub.api.v1.ListSessionsResponse listSessions(dev.aophub.api.v1.ListSessionsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListSessionsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetSession returns one session.
     * </pre>
     */
    public dev.aophub.api.v1.GetSessionResponse getSession(dev.aophub.api.v1.GetSessionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * UpdateSession changes a session's title or archive flag.
     * </pre>
     */
    public dev.aophub.api.v1.UpdateSessionResponse updateSession(dev.aophub.api.v1.UpdateSessionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getUpdateSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ResetSession opens a new session on the same node and closes the old one
     * with reason "reset".
     * </pre>
     */
    public dev.aophub.api.v1.ResetSessionResponse resetSession(dev.aophub.api.v1.ResetSessionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getResetSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * DeleteSession deletes a session with its events, turns and interactions.
     * </pre>
     */
    public dev.aophub.api.v1.DeleteSessionResponse deleteSession(dev.aophub.api.v1.DeleteSessionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDeleteSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListCommands returns the hub's commands and those of the session's node.
     * </pre>
     */
    public dev.aophub.api.v1.ListCommandsResponse listCommands(dev.aophub.api.v1.ListCommandsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListCommandsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * RunCommand runs a slash command line in a session, exactly like
     * aiscan.command.CommandProtocolMessage{request} on the application channel
     * (AOP-nodes 9.7): the hub stores the line, runs /help and /agents itself,
     * refuses the verbs that have their own RPC, and forwards everything else to
     * the session's node. Not journaled: a retry runs the command again.
     * </pre>
     */
    public dev.aophub.api.v1.RunCommandResponse runCommand(dev.aophub.api.v1.RunCommandRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRunCommandMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListEvents pages a session's persisted events oldest-first, exactly like
     * list_events_request on the application channel.
     * </pre>
     */
    public dev.aophub.aop.ListEventsResponse listEvents(dev.aophub.aop.ListEventsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListEventsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ShareSession lets another token name (or "*", every app token) see and
     * act in a session as its owner does. Only the owner or an admin may share.
     * Sharing again with the same name changes nothing.
     * </pre>
     */
    public dev.aophub.api.v1.ShareSessionResponse shareSession(dev.aophub.api.v1.ShareSessionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getShareSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * UnshareSession takes a share back: the name (or "*") no longer sees the
     * session, and its open watches of it end with NOT_FOUND. Only the owner or
     * an admin may unshare. Unsharing a name the session is not shared with
     * changes nothing.
     * </pre>
     */
    public dev.aophub.api.v1.UnshareSessionResponse unshareSession(dev.aophub.api.v1.UnshareSessionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getUnshareSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * SummarizeSession asks the session's node to fold the conversation so far
     * into its running summary now, exactly like the command line "/summarize"
     * (see RunCommand): the summary arrives as an event of the session (an
     * aop.Message with the aophub.v1.ContextSummary extension). Not journaled.
     * </pre>
     */
    public dev.aophub.api.v1.SummarizeSessionResponse summarizeSession(dev.aophub.api.v1.SummarizeSessionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getSummarizeSessionMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service SessionService.
   * <pre>
   * SessionService lists, inspects and manages sessions. Sessions are opened
   * and turns are run on the application channel (/api/aop/application/ws).
   * </pre>
   */
  public static final class SessionServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<SessionServiceBlockingStub> {
    private SessionServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected SessionServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new SessionServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListSessions pages sessions, most recently updated first; optionally only
     * those whose title contains a text (title_contains).
     * </pre>
     */
    public dev.aophub.api.v1.ListSessionsResponse listSessions(dev.aophub.api.v1.ListSessionsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListSessionsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetSession returns one session.
     * </pre>
     */
    public dev.aophub.api.v1.GetSessionResponse getSession(dev.aophub.api.v1.GetSessionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * UpdateSession changes a session's title or archive flag.
     * </pre>
     */
    public dev.aophub.api.v1.UpdateSessionResponse updateSession(dev.aophub.api.v1.UpdateSessionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getUpdateSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ResetSession opens a new session on the same node and closes the old one
     * with reason "reset".
     * </pre>
     */
    public dev.aophub.api.v1.ResetSessionResponse resetSession(dev.aophub.api.v1.ResetSessionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getResetSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * DeleteSession deletes a session with its events, turns and interactions.
     * </pre>
     */
    public dev.aophub.api.v1.DeleteSessionResponse deleteSession(dev.aophub.api.v1.DeleteSessionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDeleteSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListCommands returns the hub's commands and those of the session's node.
     * </pre>
     */
    public dev.aophub.api.v1.ListCommandsResponse listCommands(dev.aophub.api.v1.ListCommandsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListCommandsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * RunCommand runs a slash command line in a session, exactly like
     * aiscan.command.CommandProtocolMessage{request} on the application channel
     * (AOP-nodes 9.7): the hub stores the line, runs /help and /agents itself,
     * refuses the verbs that have their own RPC, and forwards everything else to
     * the session's node. Not journaled: a retry runs the command again.
     * </pre>
     */
    public dev.aophub.api.v1.RunCommandResponse runCommand(dev.aophub.api.v1.RunCommandRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRunCommandMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListEvents pages a session's persisted events oldest-first, exactly like
     * list_events_request on the application channel.
     * </pre>
     */
    public dev.aophub.aop.ListEventsResponse listEvents(dev.aophub.aop.ListEventsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListEventsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ShareSession lets another token name (or "*", every app token) see and
     * act in a session as its owner does. Only the owner or an admin may share.
     * Sharing again with the same name changes nothing.
     * </pre>
     */
    public dev.aophub.api.v1.ShareSessionResponse shareSession(dev.aophub.api.v1.ShareSessionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getShareSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * UnshareSession takes a share back: the name (or "*") no longer sees the
     * session, and its open watches of it end with NOT_FOUND. Only the owner or
     * an admin may unshare. Unsharing a name the session is not shared with
     * changes nothing.
     * </pre>
     */
    public dev.aophub.api.v1.UnshareSessionResponse unshareSession(dev.aophub.api.v1.UnshareSessionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getUnshareSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * SummarizeSession asks the session's node to fold the conversation so far
     * into its running summary now, exactly like the command line "/summarize"
     * (see RunCommand): the summary arrives as an event of the session (an
     * aop.Message with the aophub.v1.ContextSummary extension). Not journaled.
     * </pre>
     */
    public dev.aophub.api.v1.SummarizeSessionResponse summarizeSession(dev.aophub.api.v1.SummarizeSessionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getSummarizeSessionMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service SessionService.
   * <pre>
   * SessionService lists, inspects and manages sessions. Sessions are opened
   * and turns are run on the application channel (/api/aop/application/ws).
   * </pre>
   */
  public static final class SessionServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<SessionServiceFutureStub> {
    private SessionServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected SessionServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new SessionServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListSessions pages sessions, most recently updated first; optionally only
     * those whose title contains a text (title_contains).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.ListSessionsResponse> listSessions(
        dev.aophub.api.v1.ListSessionsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListSessionsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * GetSession returns one session.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.GetSessionResponse> getSession(
        dev.aophub.api.v1.GetSessionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetSessionMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * UpdateSession changes a session's title or archive flag.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.UpdateSessionResponse> updateSession(
        dev.aophub.api.v1.UpdateSessionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getUpdateSessionMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ResetSession opens a new session on the same node and closes the old one
     * with reason "reset".
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.ResetSessionResponse> resetSession(
        dev.aophub.api.v1.ResetSessionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getResetSessionMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * DeleteSession deletes a session with its events, turns and interactions.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.DeleteSessionResponse> deleteSession(
        dev.aophub.api.v1.DeleteSessionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDeleteSessionMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ListCommands returns the hub's commands and those of the session's node.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.ListCommandsResponse> listCommands(
        dev.aophub.api.v1.ListCommandsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListCommandsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * RunCommand runs a slash command line in a session, exactly like
     * aiscan.command.CommandProtocolMessage{request} on the application channel
     * (AOP-nodes 9.7): the hub stores the line, runs /help and /agents itself,
     * refuses the verbs that have their own RPC, and forwards everything else to
     * the session's node. Not journaled: a retry runs the command again.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.RunCommandResponse> runCommand(
        dev.aophub.api.v1.RunCommandRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRunCommandMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ListEvents pages a session's persisted events oldest-first, exactly like
     * list_events_request on the application channel.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.aop.ListEventsResponse> listEvents(
        dev.aophub.aop.ListEventsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListEventsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ShareSession lets another token name (or "*", every app token) see and
     * act in a session as its owner does. Only the owner or an admin may share.
     * Sharing again with the same name changes nothing.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.ShareSessionResponse> shareSession(
        dev.aophub.api.v1.ShareSessionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getShareSessionMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * UnshareSession takes a share back: the name (or "*") no longer sees the
     * session, and its open watches of it end with NOT_FOUND. Only the owner or
     * an admin may unshare. Unsharing a name the session is not shared with
     * changes nothing.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.UnshareSessionResponse> unshareSession(
        dev.aophub.api.v1.UnshareSessionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getUnshareSessionMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * SummarizeSession asks the session's node to fold the conversation so far
     * into its running summary now, exactly like the command line "/summarize"
     * (see RunCommand): the summary arrives as an event of the session (an
     * aop.Message with the aophub.v1.ContextSummary extension). Not journaled.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.SummarizeSessionResponse> summarizeSession(
        dev.aophub.api.v1.SummarizeSessionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getSummarizeSessionMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_LIST_SESSIONS = 0;
  private static final int METHODID_GET_SESSION = 1;
  private static final int METHODID_UPDATE_SESSION = 2;
  private static final int METHODID_RESET_SESSION = 3;
  private static final int METHODID_DELETE_SESSION = 4;
  private static final int METHODID_LIST_COMMANDS = 5;
  private static final int METHODID_RUN_COMMAND = 6;
  private static final int METHODID_LIST_EVENTS = 7;
  private static final int METHODID_SHARE_SESSION = 8;
  private static final int METHODID_UNSHARE_SESSION = 9;
  private static final int METHODID_SUMMARIZE_SESSION = 10;

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
        case METHODID_LIST_SESSIONS:
          serviceImpl.listSessions((dev.aophub.api.v1.ListSessionsRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListSessionsResponse>) responseObserver);
          break;
        case METHODID_GET_SESSION:
          serviceImpl.getSession((dev.aophub.api.v1.GetSessionRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetSessionResponse>) responseObserver);
          break;
        case METHODID_UPDATE_SESSION:
          serviceImpl.updateSession((dev.aophub.api.v1.UpdateSessionRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.UpdateSessionResponse>) responseObserver);
          break;
        case METHODID_RESET_SESSION:
          serviceImpl.resetSession((dev.aophub.api.v1.ResetSessionRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.ResetSessionResponse>) responseObserver);
          break;
        case METHODID_DELETE_SESSION:
          serviceImpl.deleteSession((dev.aophub.api.v1.DeleteSessionRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.DeleteSessionResponse>) responseObserver);
          break;
        case METHODID_LIST_COMMANDS:
          serviceImpl.listCommands((dev.aophub.api.v1.ListCommandsRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListCommandsResponse>) responseObserver);
          break;
        case METHODID_RUN_COMMAND:
          serviceImpl.runCommand((dev.aophub.api.v1.RunCommandRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.RunCommandResponse>) responseObserver);
          break;
        case METHODID_LIST_EVENTS:
          serviceImpl.listEvents((dev.aophub.aop.ListEventsRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.aop.ListEventsResponse>) responseObserver);
          break;
        case METHODID_SHARE_SESSION:
          serviceImpl.shareSession((dev.aophub.api.v1.ShareSessionRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.ShareSessionResponse>) responseObserver);
          break;
        case METHODID_UNSHARE_SESSION:
          serviceImpl.unshareSession((dev.aophub.api.v1.UnshareSessionRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.UnshareSessionResponse>) responseObserver);
          break;
        case METHODID_SUMMARIZE_SESSION:
          serviceImpl.summarizeSession((dev.aophub.api.v1.SummarizeSessionRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.SummarizeSessionResponse>) responseObserver);
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
          getListSessionsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.ListSessionsRequest,
              dev.aophub.api.v1.ListSessionsResponse>(
                service, METHODID_LIST_SESSIONS)))
        .addMethod(
          getGetSessionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.GetSessionRequest,
              dev.aophub.api.v1.GetSessionResponse>(
                service, METHODID_GET_SESSION)))
        .addMethod(
          getUpdateSessionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.UpdateSessionRequest,
              dev.aophub.api.v1.UpdateSessionResponse>(
                service, METHODID_UPDATE_SESSION)))
        .addMethod(
          getResetSessionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.ResetSessionRequest,
              dev.aophub.api.v1.ResetSessionResponse>(
                service, METHODID_RESET_SESSION)))
        .addMethod(
          getDeleteSessionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.DeleteSessionRequest,
              dev.aophub.api.v1.DeleteSessionResponse>(
                service, METHODID_DELETE_SESSION)))
        .addMethod(
          getListCommandsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.ListCommandsRequest,
              dev.aophub.api.v1.ListCommandsResponse>(
                service, METHODID_LIST_COMMANDS)))
        .addMethod(
          getRunCommandMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.RunCommandRequest,
              dev.aophub.api.v1.RunCommandResponse>(
                service, METHODID_RUN_COMMAND)))
        .addMethod(
          getListEventsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.aop.ListEventsRequest,
              dev.aophub.aop.ListEventsResponse>(
                service, METHODID_LIST_EVENTS)))
        .addMethod(
          getShareSessionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.ShareSessionRequest,
              dev.aophub.api.v1.ShareSessionResponse>(
                service, METHODID_SHARE_SESSION)))
        .addMethod(
          getUnshareSessionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.UnshareSessionRequest,
              dev.aophub.api.v1.UnshareSessionResponse>(
                service, METHODID_UNSHARE_SESSION)))
        .addMethod(
          getSummarizeSessionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.SummarizeSessionRequest,
              dev.aophub.api.v1.SummarizeSessionResponse>(
                service, METHODID_SUMMARIZE_SESSION)))
        .build();
  }

  private static abstract class SessionServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    SessionServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.aophub.api.v1.SessionProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("SessionService");
    }
  }

  private static final class SessionServiceFileDescriptorSupplier
      extends SessionServiceBaseDescriptorSupplier {
    SessionServiceFileDescriptorSupplier() {}
  }

  private static final class SessionServiceMethodDescriptorSupplier
      extends SessionServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    SessionServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (SessionServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new SessionServiceFileDescriptorSupplier())
              .addMethod(getListSessionsMethod())
              .addMethod(getGetSessionMethod())
              .addMethod(getUpdateSessionMethod())
              .addMethod(getResetSessionMethod())
              .addMethod(getDeleteSessionMethod())
              .addMethod(getListCommandsMethod())
              .addMethod(getRunCommandMethod())
              .addMethod(getListEventsMethod())
              .addMethod(getShareSessionMethod())
              .addMethod(getUnshareSessionMethod())
              .addMethod(getSummarizeSessionMethod())
              .build();
        }
      }
    }
    return result;
  }
}
