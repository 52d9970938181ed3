package dev.aophub.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.aophub.aop.*;
import dev.aophub.api.v1.*;
import org.junit.jupiter.api.Test;

/**
 * Both generated packages imported with wildcards, next to java.lang: this file only compiles
 * while no class name is in two of them. Before the schema's java_outer_classname options, javac
 * gave 3 errors here: "reference to Session is ambiguous" (dev.aophub.aop.Session and the outer
 * class of aophub/v1/session.proto) twice, and "reference to System is ambiguous"
 * (java.lang.System and the outer class of aophub/v1/system.proto).
 */
class WildcardImportsTest {
  @Test
  void generatedPackagesImportTogether() {
    Session session = Session.newBuilder().setId("s").build();
    GetStatusRequest status = GetStatusRequest.getDefaultInstance();
    System.out.flush();
    assertEquals("s", session.getId());
    assertEquals("aophub.v1.GetStatusRequest", status.getDescriptorForType().getFullName());
    assertEquals("aophub.v1.SessionService", SessionServiceGrpc.SERVICE_NAME);
    assertEquals("aop.Session", Session.getDescriptor().getFullName());
  }
}
