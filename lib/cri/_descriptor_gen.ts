/**
 * Turns `proto/api.proto` into the JSON descriptor `proto/api.json` (protobufjs's
 * JSON form) that the runtime codec (`codec.ts`) reads its message plans from.
 *
 * Only the generator (`tools/gen_proto.ts`) and the up-to-date test import this
 * file: it pulls in protobufjs' full build with its .proto parser, which the
 * agent itself never loads (that is the point of precompiling).
 *
 * @module
 */

import protobuf from "protobufjs";

/** Path of the proto source, relative to the repository root. */
export const PROTO_PATH = "proto/api.proto";
/** Path of the generated descriptor, relative to the repository root. */
export const DESCRIPTOR_PATH = "proto/api.json";

/**
 * Parses proto source text and renders its JSON descriptor.
 *
 * Field names become lowerCamelCase (protobufjs' default, matching
 * lib/cri/types.ts); comments are dropped so the file stays small. The output
 * is deterministic, so regenerating an unchanged proto yields identical bytes.
 *
 * @param protoText the contents of a .proto file
 * @returns the descriptor as pretty-printed JSON ending in a newline
 * @throws Error when the proto text does not parse
 */
export function renderDescriptor(protoText: string): string {
  const parsed = protobuf.parse(protoText, { keepCase: false });
  const json = parsed.root.toJSON({ keepComments: false });
  return JSON.stringify(json, null, 2) + "\n";
}
