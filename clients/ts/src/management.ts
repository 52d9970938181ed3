// The hub's management services: Connect-ES clients over fetch (browsers and
// Node alike), each call carrying the access key as a bearer token.

import { type Client as ServiceClient, type Interceptor, createClient } from "@connectrpc/connect";
import { type ConnectTransportOptions, createConnectTransport } from "@connectrpc/connect-web";

import { AgentService } from "./gen/aophub/v1/agent_pb.js";
import { ArtifactService } from "./gen/aophub/v1/artifact_pb.js";
import { ConfigService } from "./gen/aophub/v1/config_pb.js";
import { InteractionService } from "./gen/aophub/v1/interaction_pb.js";
import { ScanService } from "./gen/aophub/v1/scan_pb.js";
import { SessionService } from "./gen/aophub/v1/session_pb.js";
import { SystemService } from "./gen/aophub/v1/system_pb.js";
import { TokenService } from "./gen/aophub/v1/token_pb.js";

/** The clients of the hub's ConnectRPC services. A refused key gives a ConnectError with Code.Unauthenticated. */
export interface Management {
  sessions: ServiceClient<typeof SessionService>;
  scans: ServiceClient<typeof ScanService>;
  config: ServiceClient<typeof ConfigService>;
  agents: ServiceClient<typeof AgentService>;
  system: ServiceClient<typeof SystemService>;
  artifacts: ServiceClient<typeof ArtifactService>;
  interactions: ServiceClient<typeof InteractionService>;
  tokens: ServiceClient<typeof TokenService>;
}

/**
 * The management clients of the hub at baseUrl (http://host:port), with
 * token attached to every call (none when it is empty: a browser then sends
 * its session cookie). options go to createConnectTransport (for example
 * interceptors, a fetch of your own, or useBinaryFormat).
 */
export function createManagement(
  baseUrl: string,
  token: string,
  options: Partial<ConnectTransportOptions> = {},
): Management {
  const bearer: Interceptor = (next) => (request) => {
    if (token !== "") request.header.set("Authorization", `Bearer ${token}`);
    return next(request);
  };
  const transport = createConnectTransport({
    ...options,
    baseUrl: baseUrl.replace(/\/+$/, ""),
    interceptors: [bearer, ...(options.interceptors ?? [])],
  });
  return {
    sessions: createClient(SessionService, transport),
    scans: createClient(ScanService, transport),
    config: createClient(ConfigService, transport),
    agents: createClient(AgentService, transport),
    system: createClient(SystemService, transport),
    artifacts: createClient(ArtifactService, transport),
    interactions: createClient(InteractionService, transport),
    tokens: createClient(TokenService, transport),
  };
}
