package dev.aophub.api.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * ConfigService reads and changes the configuration. It lives in a YAML file
 * under the data directory; changes are validated, written atomically and
 * applied without a restart. Secrets are never returned.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class ConfigServiceGrpc {

  private ConfigServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "aophub.v1.ConfigService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.GetConfigRequest,
      dev.aophub.api.v1.GetConfigResponse> getGetConfigMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetConfig",
      requestType = dev.aophub.api.v1.GetConfigRequest.class,
      responseType = dev.aophub.api.v1.GetConfigResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.GetConfigRequest,
      dev.aophub.api.v1.GetConfigResponse> getGetConfigMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.GetConfigRequest, dev.aophub.api.v1.GetConfigResponse> getGetConfigMethod;
    if ((getGetConfigMethod = ConfigServiceGrpc.getGetConfigMethod) == null) {
      synchronized (ConfigServiceGrpc.class) {
        if ((getGetConfigMethod = ConfigServiceGrpc.getGetConfigMethod) == null) {
          ConfigServiceGrpc.getGetConfigMethod = getGetConfigMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.GetConfigRequest, dev.aophub.api.v1.GetConfigResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetConfig"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.GetConfigRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.GetConfigResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ConfigServiceMethodDescriptorSupplier("GetConfig"))
              .build();
        }
      }
    }
    return getGetConfigMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.UpdateConfigRequest,
      dev.aophub.api.v1.UpdateConfigResponse> getUpdateConfigMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "UpdateConfig",
      requestType = dev.aophub.api.v1.UpdateConfigRequest.class,
      responseType = dev.aophub.api.v1.UpdateConfigResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.UpdateConfigRequest,
      dev.aophub.api.v1.UpdateConfigResponse> getUpdateConfigMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.UpdateConfigRequest, dev.aophub.api.v1.UpdateConfigResponse> getUpdateConfigMethod;
    if ((getUpdateConfigMethod = ConfigServiceGrpc.getUpdateConfigMethod) == null) {
      synchronized (ConfigServiceGrpc.class) {
        if ((getUpdateConfigMethod = ConfigServiceGrpc.getUpdateConfigMethod) == null) {
          ConfigServiceGrpc.getUpdateConfigMethod = getUpdateConfigMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.UpdateConfigRequest, dev.aophub.api.v1.UpdateConfigResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "UpdateConfig"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.UpdateConfigRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.UpdateConfigResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ConfigServiceMethodDescriptorSupplier("UpdateConfig"))
              .build();
        }
      }
    }
    return getUpdateConfigMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.ActivateProfileRequest,
      dev.aophub.api.v1.ActivateProfileResponse> getActivateProfileMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ActivateProfile",
      requestType = dev.aophub.api.v1.ActivateProfileRequest.class,
      responseType = dev.aophub.api.v1.ActivateProfileResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.ActivateProfileRequest,
      dev.aophub.api.v1.ActivateProfileResponse> getActivateProfileMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.ActivateProfileRequest, dev.aophub.api.v1.ActivateProfileResponse> getActivateProfileMethod;
    if ((getActivateProfileMethod = ConfigServiceGrpc.getActivateProfileMethod) == null) {
      synchronized (ConfigServiceGrpc.class) {
        if ((getActivateProfileMethod = ConfigServiceGrpc.getActivateProfileMethod) == null) {
          ConfigServiceGrpc.getActivateProfileMethod = getActivateProfileMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.ActivateProfileRequest, dev.aophub.api.v1.ActivateProfileResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ActivateProfile"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ActivateProfileRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ActivateProfileResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ConfigServiceMethodDescriptorSupplier("ActivateProfile"))
              .build();
        }
      }
    }
    return getActivateProfileMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.TestLLMRequest,
      dev.aophub.api.v1.TestLLMResponse> getTestLLMMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "TestLLM",
      requestType = dev.aophub.api.v1.TestLLMRequest.class,
      responseType = dev.aophub.api.v1.TestLLMResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.TestLLMRequest,
      dev.aophub.api.v1.TestLLMResponse> getTestLLMMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.TestLLMRequest, dev.aophub.api.v1.TestLLMResponse> getTestLLMMethod;
    if ((getTestLLMMethod = ConfigServiceGrpc.getTestLLMMethod) == null) {
      synchronized (ConfigServiceGrpc.class) {
        if ((getTestLLMMethod = ConfigServiceGrpc.getTestLLMMethod) == null) {
          ConfigServiceGrpc.getTestLLMMethod = getTestLLMMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.TestLLMRequest, dev.aophub.api.v1.TestLLMResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "TestLLM"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.TestLLMRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.TestLLMResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ConfigServiceMethodDescriptorSupplier("TestLLM"))
              .build();
        }
      }
    }
    return getTestLLMMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.ListModelsRequest,
      dev.aophub.api.v1.ListModelsResponse> getListModelsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListModels",
      requestType = dev.aophub.api.v1.ListModelsRequest.class,
      responseType = dev.aophub.api.v1.ListModelsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.ListModelsRequest,
      dev.aophub.api.v1.ListModelsResponse> getListModelsMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.ListModelsRequest, dev.aophub.api.v1.ListModelsResponse> getListModelsMethod;
    if ((getListModelsMethod = ConfigServiceGrpc.getListModelsMethod) == null) {
      synchronized (ConfigServiceGrpc.class) {
        if ((getListModelsMethod = ConfigServiceGrpc.getListModelsMethod) == null) {
          ConfigServiceGrpc.getListModelsMethod = getListModelsMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.ListModelsRequest, dev.aophub.api.v1.ListModelsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListModels"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListModelsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListModelsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ConfigServiceMethodDescriptorSupplier("ListModels"))
              .build();
        }
      }
    }
    return getListModelsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.TestConnectionRequest,
      dev.aophub.api.v1.TestConnectionResponse> getTestConnectionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "TestConnection",
      requestType = dev.aophub.api.v1.TestConnectionRequest.class,
      responseType = dev.aophub.api.v1.TestConnectionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.TestConnectionRequest,
      dev.aophub.api.v1.TestConnectionResponse> getTestConnectionMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.TestConnectionRequest, dev.aophub.api.v1.TestConnectionResponse> getTestConnectionMethod;
    if ((getTestConnectionMethod = ConfigServiceGrpc.getTestConnectionMethod) == null) {
      synchronized (ConfigServiceGrpc.class) {
        if ((getTestConnectionMethod = ConfigServiceGrpc.getTestConnectionMethod) == null) {
          ConfigServiceGrpc.getTestConnectionMethod = getTestConnectionMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.TestConnectionRequest, dev.aophub.api.v1.TestConnectionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "TestConnection"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.TestConnectionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.TestConnectionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ConfigServiceMethodDescriptorSupplier("TestConnection"))
              .build();
        }
      }
    }
    return getTestConnectionMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static ConfigServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ConfigServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ConfigServiceStub>() {
        @java.lang.Override
        public ConfigServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ConfigServiceStub(channel, callOptions);
        }
      };
    return ConfigServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static ConfigServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ConfigServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ConfigServiceBlockingV2Stub>() {
        @java.lang.Override
        public ConfigServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ConfigServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return ConfigServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static ConfigServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ConfigServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ConfigServiceBlockingStub>() {
        @java.lang.Override
        public ConfigServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ConfigServiceBlockingStub(channel, callOptions);
        }
      };
    return ConfigServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static ConfigServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ConfigServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ConfigServiceFutureStub>() {
        @java.lang.Override
        public ConfigServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ConfigServiceFutureStub(channel, callOptions);
        }
      };
    return ConfigServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * ConfigService reads and changes the configuration. It lives in a YAML file
   * under the data directory; changes are validated, written atomically and
   * applied without a restart. Secrets are never returned.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * GetConfig returns the configuration without secrets.
     * </pre>
     */
    default void getConfig(dev.aophub.api.v1.GetConfigRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetConfigResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetConfigMethod(), responseObserver);
    }

    /**
     * <pre>
     * UpdateConfig replaces the configuration.
     * </pre>
     */
    default void updateConfig(dev.aophub.api.v1.UpdateConfigRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.UpdateConfigResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getUpdateConfigMethod(), responseObserver);
    }

    /**
     * <pre>
     * ActivateProfile makes an LLM profile the built-in agent's active one.
     * </pre>
     */
    default void activateProfile(dev.aophub.api.v1.ActivateProfileRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ActivateProfileResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getActivateProfileMethod(), responseObserver);
    }

    /**
     * <pre>
     * TestLLM makes a real call to a profile's endpoint.
     * </pre>
     */
    default void testLLM(dev.aophub.api.v1.TestLLMRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.TestLLMResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getTestLLMMethod(), responseObserver);
    }

    /**
     * <pre>
     * ListModels asks a profile's endpoint for its models.
     * </pre>
     */
    default void listModels(dev.aophub.api.v1.ListModelsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListModelsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListModelsMethod(), responseObserver);
    }

    /**
     * <pre>
     * TestConnection checks that the caller reaches this hub and is authenticated.
     * </pre>
     */
    default void testConnection(dev.aophub.api.v1.TestConnectionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.TestConnectionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getTestConnectionMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service ConfigService.
   * <pre>
   * ConfigService reads and changes the configuration. It lives in a YAML file
   * under the data directory; changes are validated, written atomically and
   * applied without a restart. Secrets are never returned.
   * </pre>
   */
  public static abstract class ConfigServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return ConfigServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service ConfigService.
   * <pre>
   * ConfigService reads and changes the configuration. It lives in a YAML file
   * under the data directory; changes are validated, written atomically and
   * applied without a restart. Secrets are never returned.
   * </pre>
   */
  public static final class ConfigServiceStub
      extends io.grpc.stub.AbstractAsyncStub<ConfigServiceStub> {
    private ConfigServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ConfigServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ConfigServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * GetConfig returns the configuration without secrets.
     * </pre>
     */
    public void getConfig(dev.aophub.api.v1.GetConfigRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetConfigResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetConfigMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * UpdateConfig replaces the configuration.
     * </pre>
     */
    public void updateConfig(dev.aophub.api.v1.UpdateConfigRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.UpdateConfigResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getUpdateConfigMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ActivateProfile makes an LLM profile the built-in agent's active one.
     * </pre>
     */
    public void activateProfile(dev.aophub.api.v1.ActivateProfileRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ActivateProfileResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getActivateProfileMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * TestLLM makes a real call to a profile's endpoint.
     * </pre>
     */
    public void testLLM(dev.aophub.api.v1.TestLLMRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.TestLLMResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getTestLLMMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ListModels asks a profile's endpoint for its models.
     * </pre>
     */
    public void listModels(dev.aophub.api.v1.ListModelsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListModelsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListModelsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * TestConnection checks that the caller reaches this hub and is authenticated.
     * </pre>
     */
    public void testConnection(dev.aophub.api.v1.TestConnectionRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.TestConnectionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getTestConnectionMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service ConfigService.
   * <pre>
   * ConfigService reads and changes the configuration. It lives in a YAML file
   * under the data directory; changes are validated, written atomically and
   * applied without a restart. Secrets are never returned.
   * </pre>
   */
  public static final class ConfigServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<ConfigServiceBlockingV2Stub> {
    private ConfigServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ConfigServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ConfigServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * GetConfig returns the configuration without secrets.
     * </pre>
     */
    public dev.aophub.api.v1.GetConfigResponse getConfig(dev.aophub.api.v1.GetConfigRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetConfigMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * UpdateConfig replaces the configuration.
     * </pre>
     */
    public dev.aophub.api.v1.UpdateConfigResponse updateConfig(dev.aophub.api.v1.UpdateConfigRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getUpdateConfigMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ActivateProfile makes an LLM profile the built-in agent's active one.
     * </pre>
     */
    public dev.aophub.api.v1.ActivateProfileResponse activateProfile(dev.aophub.api.v1.ActivateProfileRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getActivateProfileMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * TestLLM makes a real call to a profile's endpoint.
     * </pre>
     */
    public dev.aophub.api.v1.TestLLMResponse testLLM(dev.aophub.api.v1.TestLLMRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getTestLLMMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListModels asks a profile's endpoint for its models.
     * </pre>
     */
    public dev.aophub.api.v1.ListModelsResponse listModels(dev.aophub.api.v1.ListModelsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListModelsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * TestConnection checks that the caller reaches this hub and is authenticated.
     * </pre>
     */
    public dev.aophub.api.v1.TestConnectionResponse testConnection(dev.aophub.api.v1.TestConnectionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getTestConnectionMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service ConfigService.
   * <pre>
   * ConfigService reads and changes the configuration. It lives in a YAML file
   * under the data directory; changes are validated, written atomically and
   * applied without a restart. Secrets are never returned.
   * </pre>
   */
  public static final class ConfigServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<ConfigServiceBlockingStub> {
    private ConfigServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ConfigServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ConfigServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * GetConfig returns the configuration without secrets.
     * </pre>
     */
    public dev.aophub.api.v1.GetConfigResponse getConfig(dev.aophub.api.v1.GetConfigRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetConfigMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * UpdateConfig replaces the configuration.
     * </pre>
     */
    public dev.aophub.api.v1.UpdateConfigResponse updateConfig(dev.aophub.api.v1.UpdateConfigRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getUpdateConfigMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ActivateProfile makes an LLM profile the built-in agent's active one.
     * </pre>
     */
    public dev.aophub.api.v1.ActivateProfileResponse activateProfile(dev.aophub.api.v1.ActivateProfileRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getActivateProfileMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * TestLLM makes a real call to a profile's endpoint.
     * </pre>
     */
    public dev.aophub.api.v1.TestLLMResponse testLLM(dev.aophub.api.v1.TestLLMRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getTestLLMMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListModels asks a profile's endpoint for its models.
     * </pre>
     */
    public dev.aophub.api.v1.ListModelsResponse listModels(dev.aophub.api.v1.ListModelsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListModelsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * TestConnection checks that the caller reaches this hub and is authenticated.
     * </pre>
     */
    public dev.aophub.api.v1.TestConnectionResponse testConnection(dev.aophub.api.v1.TestConnectionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getTestConnectionMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service ConfigService.
   * <pre>
   * ConfigService reads and changes the configuration. It lives in a YAML file
   * under the data directory; changes are validated, written atomically and
   * applied without a restart. Secrets are never returned.
   * </pre>
   */
  public static final class ConfigServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<ConfigServiceFutureStub> {
    private ConfigServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ConfigServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ConfigServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * GetConfig returns the configuration without secrets.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.GetConfigResponse> getConfig(
        dev.aophub.api.v1.GetConfigRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetConfigMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * UpdateConfig replaces the configuration.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.UpdateConfigResponse> updateConfig(
        dev.aophub.api.v1.UpdateConfigRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getUpdateConfigMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ActivateProfile makes an LLM profile the built-in agent's active one.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.ActivateProfileResponse> activateProfile(
        dev.aophub.api.v1.ActivateProfileRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getActivateProfileMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * TestLLM makes a real call to a profile's endpoint.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.TestLLMResponse> testLLM(
        dev.aophub.api.v1.TestLLMRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getTestLLMMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ListModels asks a profile's endpoint for its models.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.ListModelsResponse> listModels(
        dev.aophub.api.v1.ListModelsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListModelsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * TestConnection checks that the caller reaches this hub and is authenticated.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.TestConnectionResponse> testConnection(
        dev.aophub.api.v1.TestConnectionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getTestConnectionMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_GET_CONFIG = 0;
  private static final int METHODID_UPDATE_CONFIG = 1;
  private static final int METHODID_ACTIVATE_PROFILE = 2;
  private static final int METHODID_TEST_LLM = 3;
  private static final int METHODID_LIST_MODELS = 4;
  private static final int METHODID_TEST_CONNECTION = 5;

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
        case METHODID_GET_CONFIG:
          serviceImpl.getConfig((dev.aophub.api.v1.GetConfigRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetConfigResponse>) responseObserver);
          break;
        case METHODID_UPDATE_CONFIG:
          serviceImpl.updateConfig((dev.aophub.api.v1.UpdateConfigRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.UpdateConfigResponse>) responseObserver);
          break;
        case METHODID_ACTIVATE_PROFILE:
          serviceImpl.activateProfile((dev.aophub.api.v1.ActivateProfileRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.ActivateProfileResponse>) responseObserver);
          break;
        case METHODID_TEST_LLM:
          serviceImpl.testLLM((dev.aophub.api.v1.TestLLMRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.TestLLMResponse>) responseObserver);
          break;
        case METHODID_LIST_MODELS:
          serviceImpl.listModels((dev.aophub.api.v1.ListModelsRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListModelsResponse>) responseObserver);
          break;
        case METHODID_TEST_CONNECTION:
          serviceImpl.testConnection((dev.aophub.api.v1.TestConnectionRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.TestConnectionResponse>) responseObserver);
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
          getGetConfigMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.GetConfigRequest,
              dev.aophub.api.v1.GetConfigResponse>(
                service, METHODID_GET_CONFIG)))
        .addMethod(
          getUpdateConfigMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.UpdateConfigRequest,
              dev.aophub.api.v1.UpdateConfigResponse>(
                service, METHODID_UPDATE_CONFIG)))
        .addMethod(
          getActivateProfileMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.ActivateProfileRequest,
              dev.aophub.api.v1.ActivateProfileResponse>(
                service, METHODID_ACTIVATE_PROFILE)))
        .addMethod(
          getTestLLMMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.TestLLMRequest,
              dev.aophub.api.v1.TestLLMResponse>(
                service, METHODID_TEST_LLM)))
        .addMethod(
          getListModelsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.ListModelsRequest,
              dev.aophub.api.v1.ListModelsResponse>(
                service, METHODID_LIST_MODELS)))
        .addMethod(
          getTestConnectionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.TestConnectionRequest,
              dev.aophub.api.v1.TestConnectionResponse>(
                service, METHODID_TEST_CONNECTION)))
        .build();
  }

  private static abstract class ConfigServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    ConfigServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.aophub.api.v1.ConfigOuterClass.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("ConfigService");
    }
  }

  private static final class ConfigServiceFileDescriptorSupplier
      extends ConfigServiceBaseDescriptorSupplier {
    ConfigServiceFileDescriptorSupplier() {}
  }

  private static final class ConfigServiceMethodDescriptorSupplier
      extends ConfigServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    ConfigServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (ConfigServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new ConfigServiceFileDescriptorSupplier())
              .addMethod(getGetConfigMethod())
              .addMethod(getUpdateConfigMethod())
              .addMethod(getActivateProfileMethod())
              .addMethod(getTestLLMMethod())
              .addMethod(getListModelsMethod())
              .addMethod(getTestConnectionMethod())
              .build();
        }
      }
    }
    return result;
  }
}
