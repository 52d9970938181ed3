// A registry of every message, enum and service generated from proto/.
//
// toJson/fromJson need it to write and read google.protobuf.Any values (the
// Envelope payload, request and event extensions) as ProtoJSON with "@type".
// test/golden.test.ts checks that this list covers every file in src/gen.

import { createRegistry, type DescFile } from "@bufbuild/protobuf";

import { file_aiscan_agent_detail } from "./gen/aiscan/agent/detail_pb.js";
import { file_aiscan_command_protocol } from "./gen/aiscan/command/protocol_pb.js";
import { file_aiscan_config_config } from "./gen/aiscan/config/config_pb.js";
import { file_aiscan_reload_protocol } from "./gen/aiscan/reload/protocol_pb.js";
import { file_aop_chat } from "./gen/aop/chat_pb.js";
import { file_aop_content } from "./gen/aop/content_pb.js";
import { file_aop_envelope } from "./gen/aop/envelope_pb.js";
import { file_aop_event } from "./gen/aop/event_pb.js";
import { file_aop_exec_protocol } from "./gen/aop/exec/protocol_pb.js";
import { file_aop_file_protocol } from "./gen/aop/file/protocol_pb.js";
import { file_aop_protocol } from "./gen/aop/protocol_pb.js";
import { file_aop_pty_protocol } from "./gen/aop/pty/protocol_pb.js";
import { file_aop_tool_protocol } from "./gen/aop/tool/protocol_pb.js";
import { file_aop_value } from "./gen/aop/value_pb.js";
import { file_aophub_v1_agent } from "./gen/aophub/v1/agent_pb.js";
import { file_aophub_v1_artifact } from "./gen/aophub/v1/artifact_pb.js";
import { file_aophub_v1_config } from "./gen/aophub/v1/config_pb.js";
import { file_aophub_v1_extensions } from "./gen/aophub/v1/extensions_pb.js";
import { file_aophub_v1_interaction } from "./gen/aophub/v1/interaction_pb.js";
import { file_aophub_v1_memory } from "./gen/aophub/v1/memory_pb.js";
import { file_aophub_v1_scan } from "./gen/aophub/v1/scan_pb.js";
import { file_aophub_v1_session } from "./gen/aophub/v1/session_pb.js";
import { file_aophub_v1_skill } from "./gen/aophub/v1/skill_pb.js";
import { file_aophub_v1_subagent } from "./gen/aophub/v1/subagent_pb.js";
import { file_aophub_v1_system } from "./gen/aophub/v1/system_pb.js";
import { file_aophub_v1_token } from "./gen/aophub/v1/token_pb.js";
import { file_aophub_v1_workspace } from "./gen/aophub/v1/workspace_pb.js";
import { file_cyber_command_protocol } from "./gen/cyber/command/protocol_pb.js";
import { file_cyber_config_config } from "./gen/cyber/config/config_pb.js";
import { file_cyber_reload_protocol } from "./gen/cyber/reload/protocol_pb.js";

/** Every generated file descriptor, in proto file name order. */
export const files: readonly DescFile[] = [
  file_aiscan_agent_detail,
  file_aiscan_command_protocol,
  file_aiscan_config_config,
  file_aiscan_reload_protocol,
  file_aop_chat,
  file_aop_content,
  file_aop_envelope,
  file_aop_event,
  file_aop_exec_protocol,
  file_aop_file_protocol,
  file_aop_protocol,
  file_aop_pty_protocol,
  file_aop_tool_protocol,
  file_aop_value,
  file_aophub_v1_agent,
  file_aophub_v1_artifact,
  file_aophub_v1_config,
  file_aophub_v1_extensions,
  file_aophub_v1_interaction,
  file_aophub_v1_memory,
  file_aophub_v1_scan,
  file_aophub_v1_session,
  file_aophub_v1_skill,
  file_aophub_v1_subagent,
  file_aophub_v1_system,
  file_aophub_v1_token,
  file_aophub_v1_workspace,
  file_cyber_command_protocol,
  file_cyber_config_config,
  file_cyber_reload_protocol,
];

/** Resolves every type in `files` (for Any in toJson, fromJson and anyUnpack). */
export const registry = createRegistry(...files);
