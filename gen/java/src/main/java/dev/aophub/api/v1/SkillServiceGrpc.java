package dev.aophub.api.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * SkillService lists the skills of the hub's built-in agent (node "local")
 * and enables or disables them. A skill is a folder with a SKILL.md: in
 * &lt;workspace&gt;/skills/ or built into the hub. The enabled, available skills'
 * one-line summaries go into the system prompt when agent.skills_enabled is
 * set. Enabling and disabling change every session's prompt on the node, so
 * the service is admin-only, like MemoryService and ConfigService.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class SkillServiceGrpc {

  private SkillServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "aophub.v1.SkillService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.ListSkillsRequest,
      dev.aophub.api.v1.ListSkillsResponse> getListSkillsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListSkills",
      requestType = dev.aophub.api.v1.ListSkillsRequest.class,
      responseType = dev.aophub.api.v1.ListSkillsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.ListSkillsRequest,
      dev.aophub.api.v1.ListSkillsResponse> getListSkillsMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.ListSkillsRequest, dev.aophub.api.v1.ListSkillsResponse> getListSkillsMethod;
    if ((getListSkillsMethod = SkillServiceGrpc.getListSkillsMethod) == null) {
      synchronized (SkillServiceGrpc.class) {
        if ((getListSkillsMethod = SkillServiceGrpc.getListSkillsMethod) == null) {
          SkillServiceGrpc.getListSkillsMethod = getListSkillsMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.ListSkillsRequest, dev.aophub.api.v1.ListSkillsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListSkills"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListSkillsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.ListSkillsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SkillServiceMethodDescriptorSupplier("ListSkills"))
              .build();
        }
      }
    }
    return getListSkillsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.GetSkillRequest,
      dev.aophub.api.v1.GetSkillResponse> getGetSkillMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetSkill",
      requestType = dev.aophub.api.v1.GetSkillRequest.class,
      responseType = dev.aophub.api.v1.GetSkillResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.GetSkillRequest,
      dev.aophub.api.v1.GetSkillResponse> getGetSkillMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.GetSkillRequest, dev.aophub.api.v1.GetSkillResponse> getGetSkillMethod;
    if ((getGetSkillMethod = SkillServiceGrpc.getGetSkillMethod) == null) {
      synchronized (SkillServiceGrpc.class) {
        if ((getGetSkillMethod = SkillServiceGrpc.getGetSkillMethod) == null) {
          SkillServiceGrpc.getGetSkillMethod = getGetSkillMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.GetSkillRequest, dev.aophub.api.v1.GetSkillResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetSkill"))
              .setSafe(true)
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.GetSkillRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.GetSkillResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SkillServiceMethodDescriptorSupplier("GetSkill"))
              .build();
        }
      }
    }
    return getGetSkillMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.EnableSkillRequest,
      dev.aophub.api.v1.EnableSkillResponse> getEnableSkillMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "EnableSkill",
      requestType = dev.aophub.api.v1.EnableSkillRequest.class,
      responseType = dev.aophub.api.v1.EnableSkillResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.EnableSkillRequest,
      dev.aophub.api.v1.EnableSkillResponse> getEnableSkillMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.EnableSkillRequest, dev.aophub.api.v1.EnableSkillResponse> getEnableSkillMethod;
    if ((getEnableSkillMethod = SkillServiceGrpc.getEnableSkillMethod) == null) {
      synchronized (SkillServiceGrpc.class) {
        if ((getEnableSkillMethod = SkillServiceGrpc.getEnableSkillMethod) == null) {
          SkillServiceGrpc.getEnableSkillMethod = getEnableSkillMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.EnableSkillRequest, dev.aophub.api.v1.EnableSkillResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "EnableSkill"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.EnableSkillRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.EnableSkillResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SkillServiceMethodDescriptorSupplier("EnableSkill"))
              .build();
        }
      }
    }
    return getEnableSkillMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.aophub.api.v1.DisableSkillRequest,
      dev.aophub.api.v1.DisableSkillResponse> getDisableSkillMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DisableSkill",
      requestType = dev.aophub.api.v1.DisableSkillRequest.class,
      responseType = dev.aophub.api.v1.DisableSkillResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.aophub.api.v1.DisableSkillRequest,
      dev.aophub.api.v1.DisableSkillResponse> getDisableSkillMethod() {
    io.grpc.MethodDescriptor<dev.aophub.api.v1.DisableSkillRequest, dev.aophub.api.v1.DisableSkillResponse> getDisableSkillMethod;
    if ((getDisableSkillMethod = SkillServiceGrpc.getDisableSkillMethod) == null) {
      synchronized (SkillServiceGrpc.class) {
        if ((getDisableSkillMethod = SkillServiceGrpc.getDisableSkillMethod) == null) {
          SkillServiceGrpc.getDisableSkillMethod = getDisableSkillMethod =
              io.grpc.MethodDescriptor.<dev.aophub.api.v1.DisableSkillRequest, dev.aophub.api.v1.DisableSkillResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DisableSkill"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.DisableSkillRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.aophub.api.v1.DisableSkillResponse.getDefaultInstance()))
              .setSchemaDescriptor(new SkillServiceMethodDescriptorSupplier("DisableSkill"))
              .build();
        }
      }
    }
    return getDisableSkillMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static SkillServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<SkillServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<SkillServiceStub>() {
        @java.lang.Override
        public SkillServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new SkillServiceStub(channel, callOptions);
        }
      };
    return SkillServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static SkillServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<SkillServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<SkillServiceBlockingV2Stub>() {
        @java.lang.Override
        public SkillServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new SkillServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return SkillServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static SkillServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<SkillServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<SkillServiceBlockingStub>() {
        @java.lang.Override
        public SkillServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new SkillServiceBlockingStub(channel, callOptions);
        }
      };
    return SkillServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static SkillServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<SkillServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<SkillServiceFutureStub>() {
        @java.lang.Override
        public SkillServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new SkillServiceFutureStub(channel, callOptions);
        }
      };
    return SkillServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * SkillService lists the skills of the hub's built-in agent (node "local")
   * and enables or disables them. A skill is a folder with a SKILL.md: in
   * &lt;workspace&gt;/skills/ or built into the hub. The enabled, available skills'
   * one-line summaries go into the system prompt when agent.skills_enabled is
   * set. Enabling and disabling change every session's prompt on the node, so
   * the service is admin-only, like MemoryService and ConfigService.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * ListSkills returns every discovered skill, sorted by name.
     * </pre>
     */
    default void listSkills(dev.aophub.api.v1.ListSkillsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListSkillsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListSkillsMethod(), responseObserver);
    }

    /**
     * <pre>
     * GetSkill returns one skill and its SKILL.md (NOT_FOUND for an unknown name).
     * </pre>
     */
    default void getSkill(dev.aophub.api.v1.GetSkillRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetSkillResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetSkillMethod(), responseObserver);
    }

    /**
     * <pre>
     * EnableSkill enables a skill (rejected NOT_FOUND for an unknown name);
     * kept across restarts. Enabling an enabled skill changes nothing.
     * </pre>
     */
    default void enableSkill(dev.aophub.api.v1.EnableSkillRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.EnableSkillResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getEnableSkillMethod(), responseObserver);
    }

    /**
     * <pre>
     * DisableSkill disables a skill: it leaves the system prompt (rejected
     * NOT_FOUND for an unknown name); kept across restarts.
     * </pre>
     */
    default void disableSkill(dev.aophub.api.v1.DisableSkillRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.DisableSkillResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDisableSkillMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service SkillService.
   * <pre>
   * SkillService lists the skills of the hub's built-in agent (node "local")
   * and enables or disables them. A skill is a folder with a SKILL.md: in
   * &lt;workspace&gt;/skills/ or built into the hub. The enabled, available skills'
   * one-line summaries go into the system prompt when agent.skills_enabled is
   * set. Enabling and disabling change every session's prompt on the node, so
   * the service is admin-only, like MemoryService and ConfigService.
   * </pre>
   */
  public static abstract class SkillServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return SkillServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service SkillService.
   * <pre>
   * SkillService lists the skills of the hub's built-in agent (node "local")
   * and enables or disables them. A skill is a folder with a SKILL.md: in
   * &lt;workspace&gt;/skills/ or built into the hub. The enabled, available skills'
   * one-line summaries go into the system prompt when agent.skills_enabled is
   * set. Enabling and disabling change every session's prompt on the node, so
   * the service is admin-only, like MemoryService and ConfigService.
   * </pre>
   */
  public static final class SkillServiceStub
      extends io.grpc.stub.AbstractAsyncStub<SkillServiceStub> {
    private SkillServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected SkillServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new SkillServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListSkills returns every discovered skill, sorted by name.
     * </pre>
     */
    public void listSkills(dev.aophub.api.v1.ListSkillsRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListSkillsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListSkillsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * GetSkill returns one skill and its SKILL.md (NOT_FOUND for an unknown name).
     * </pre>
     */
    public void getSkill(dev.aophub.api.v1.GetSkillRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetSkillResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetSkillMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * EnableSkill enables a skill (rejected NOT_FOUND for an unknown name);
     * kept across restarts. Enabling an enabled skill changes nothing.
     * </pre>
     */
    public void enableSkill(dev.aophub.api.v1.EnableSkillRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.EnableSkillResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getEnableSkillMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * DisableSkill disables a skill: it leaves the system prompt (rejected
     * NOT_FOUND for an unknown name); kept across restarts.
     * </pre>
     */
    public void disableSkill(dev.aophub.api.v1.DisableSkillRequest request,
        io.grpc.stub.StreamObserver<dev.aophub.api.v1.DisableSkillResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDisableSkillMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service SkillService.
   * <pre>
   * SkillService lists the skills of the hub's built-in agent (node "local")
   * and enables or disables them. A skill is a folder with a SKILL.md: in
   * &lt;workspace&gt;/skills/ or built into the hub. The enabled, available skills'
   * one-line summaries go into the system prompt when agent.skills_enabled is
   * set. Enabling and disabling change every session's prompt on the node, so
   * the service is admin-only, like MemoryService and ConfigService.
   * </pre>
   */
  public static final class SkillServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<SkillServiceBlockingV2Stub> {
    private SkillServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected SkillServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new SkillServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * ListSkills returns every discovered skill, sorted by name.
     * </pre>
     */
    public dev.aophub.api.v1.ListSkillsResponse listSkills(dev.aophub.api.v1.ListSkillsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListSkillsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetSkill returns one skill and its SKILL.md (NOT_FOUND for an unknown name).
     * </pre>
     */
    public dev.aophub.api.v1.GetSkillResponse getSkill(dev.aophub.api.v1.GetSkillRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetSkillMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * EnableSkill enables a skill (rejected NOT_FOUND for an unknown name);
     * kept across restarts. Enabling an enabled skill changes nothing.
     * </pre>
     */
    public dev.aophub.api.v1.EnableSkillResponse enableSkill(dev.aophub.api.v1.EnableSkillRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getEnableSkillMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * DisableSkill disables a skill: it leaves the system prompt (rejected
     * NOT_FOUND for an unknown name); kept across restarts.
     * </pre>
     */
    public dev.aophub.api.v1.DisableSkillResponse disableSkill(dev.aophub.api.v1.DisableSkillRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDisableSkillMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service SkillService.
   * <pre>
   * SkillService lists the skills of the hub's built-in agent (node "local")
   * and enables or disables them. A skill is a folder with a SKILL.md: in
   * &lt;workspace&gt;/skills/ or built into the hub. The enabled, available skills'
   * one-line summaries go into the system prompt when agent.skills_enabled is
   * set. Enabling and disabling change every session's prompt on the node, so
   * the service is admin-only, like MemoryService and ConfigService.
   * </pre>
   */
  public static final class SkillServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<SkillServiceBlockingStub> {
    private SkillServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected SkillServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new SkillServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListSkills returns every discovered skill, sorted by name.
     * </pre>
     */
    public dev.aophub.api.v1.ListSkillsResponse listSkills(dev.aophub.api.v1.ListSkillsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListSkillsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetSkill returns one skill and its SKILL.md (NOT_FOUND for an unknown name).
     * </pre>
     */
    public dev.aophub.api.v1.GetSkillResponse getSkill(dev.aophub.api.v1.GetSkillRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetSkillMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * EnableSkill enables a skill (rejected NOT_FOUND for an unknown name);
     * kept across restarts. Enabling an enabled skill changes nothing.
     * </pre>
     */
    public dev.aophub.api.v1.EnableSkillResponse enableSkill(dev.aophub.api.v1.EnableSkillRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getEnableSkillMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * DisableSkill disables a skill: it leaves the system prompt (rejected
     * NOT_FOUND for an unknown name); kept across restarts.
     * </pre>
     */
    public dev.aophub.api.v1.DisableSkillResponse disableSkill(dev.aophub.api.v1.DisableSkillRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDisableSkillMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service SkillService.
   * <pre>
   * SkillService lists the skills of the hub's built-in agent (node "local")
   * and enables or disables them. A skill is a folder with a SKILL.md: in
   * &lt;workspace&gt;/skills/ or built into the hub. The enabled, available skills'
   * one-line summaries go into the system prompt when agent.skills_enabled is
   * set. Enabling and disabling change every session's prompt on the node, so
   * the service is admin-only, like MemoryService and ConfigService.
   * </pre>
   */
  public static final class SkillServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<SkillServiceFutureStub> {
    private SkillServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected SkillServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new SkillServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * ListSkills returns every discovered skill, sorted by name.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.ListSkillsResponse> listSkills(
        dev.aophub.api.v1.ListSkillsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListSkillsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * GetSkill returns one skill and its SKILL.md (NOT_FOUND for an unknown name).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.GetSkillResponse> getSkill(
        dev.aophub.api.v1.GetSkillRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetSkillMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * EnableSkill enables a skill (rejected NOT_FOUND for an unknown name);
     * kept across restarts. Enabling an enabled skill changes nothing.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.EnableSkillResponse> enableSkill(
        dev.aophub.api.v1.EnableSkillRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getEnableSkillMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * DisableSkill disables a skill: it leaves the system prompt (rejected
     * NOT_FOUND for an unknown name); kept across restarts.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.aophub.api.v1.DisableSkillResponse> disableSkill(
        dev.aophub.api.v1.DisableSkillRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDisableSkillMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_LIST_SKILLS = 0;
  private static final int METHODID_GET_SKILL = 1;
  private static final int METHODID_ENABLE_SKILL = 2;
  private static final int METHODID_DISABLE_SKILL = 3;

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
        case METHODID_LIST_SKILLS:
          serviceImpl.listSkills((dev.aophub.api.v1.ListSkillsRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.ListSkillsResponse>) responseObserver);
          break;
        case METHODID_GET_SKILL:
          serviceImpl.getSkill((dev.aophub.api.v1.GetSkillRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.GetSkillResponse>) responseObserver);
          break;
        case METHODID_ENABLE_SKILL:
          serviceImpl.enableSkill((dev.aophub.api.v1.EnableSkillRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.EnableSkillResponse>) responseObserver);
          break;
        case METHODID_DISABLE_SKILL:
          serviceImpl.disableSkill((dev.aophub.api.v1.DisableSkillRequest) request,
              (io.grpc.stub.StreamObserver<dev.aophub.api.v1.DisableSkillResponse>) responseObserver);
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
          getListSkillsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.ListSkillsRequest,
              dev.aophub.api.v1.ListSkillsResponse>(
                service, METHODID_LIST_SKILLS)))
        .addMethod(
          getGetSkillMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.GetSkillRequest,
              dev.aophub.api.v1.GetSkillResponse>(
                service, METHODID_GET_SKILL)))
        .addMethod(
          getEnableSkillMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.EnableSkillRequest,
              dev.aophub.api.v1.EnableSkillResponse>(
                service, METHODID_ENABLE_SKILL)))
        .addMethod(
          getDisableSkillMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.aophub.api.v1.DisableSkillRequest,
              dev.aophub.api.v1.DisableSkillResponse>(
                service, METHODID_DISABLE_SKILL)))
        .build();
  }

  private static abstract class SkillServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    SkillServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.aophub.api.v1.SkillOuterClass.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("SkillService");
    }
  }

  private static final class SkillServiceFileDescriptorSupplier
      extends SkillServiceBaseDescriptorSupplier {
    SkillServiceFileDescriptorSupplier() {}
  }

  private static final class SkillServiceMethodDescriptorSupplier
      extends SkillServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    SkillServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (SkillServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new SkillServiceFileDescriptorSupplier())
              .addMethod(getListSkillsMethod())
              .addMethod(getGetSkillMethod())
              .addMethod(getEnableSkillMethod())
              .addMethod(getDisableSkillMethod())
              .build();
        }
      }
    }
    return result;
  }
}
