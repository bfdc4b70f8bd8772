/**
 * Protobuf encoding of CRI messages from the precompiled descriptor
 * `proto/api.json` (generated from `proto/api.proto`).
 *
 * The descriptor is loaded with `protobufjs/light`, which has no .proto parser:
 * parsing at start-up is what made the upstream proto cost ~30 MB of RSS.
 * Decoded messages follow lib/cri/types.ts: int64 as `number`, enums as
 * numbers, scalar/repeated/map fields always present with their defaults, bytes
 * as `Uint8Array`, and absent sub-messages left out (never `null`).
 *
 * @module
 */

import protobuf from "protobufjs/light";
import descriptor from "../../proto/api.json" with { type: "json" };

/** The proto package every CRI message lives in. */
export const CRI_PACKAGE = "runtime.v1";

/** Encodes and decodes one CRI message type. */
export interface MessageCodec<T> {
  /** Fully qualified message name, e.g. `runtime.v1.PodSandboxConfig`. */
  readonly name: string;
  /**
   * Encodes a plain object shaped like the message (lowerCamelCase fields).
   * @throws Error when a field has a value of the wrong kind
   */
  encode(value: object): Uint8Array;
  /**
   * Decodes wire bytes into a plain object.
   * @throws Error when the bytes are not a valid encoding of the message
   */
  decode(bytes: Uint8Array): T;
}

const root = protobuf.Root.fromJSON(descriptor as protobuf.INamespace);

const toObjectOptions: protobuf.IConversionOptions = {
  longs: Number,
  enums: Number,
  defaults: true,
  arrays: true,
  objects: true,
};

/**
 * protobufjs sets absent sub-messages to `null` when `defaults` is on; the
 * types say "optional", so drop them. Maps and arrays are walked because their
 * elements can be messages too.
 */
function dropNulls(value: unknown): void {
  if (Array.isArray(value)) {
    for (const item of value) dropNulls(item);
    return;
  }
  if (typeof value !== "object" || value === null || value instanceof Uint8Array) return;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const field = record[key];
    if (field === null) delete record[key];
    else if (typeof field === "object") dropNulls(field);
  }
}

const cache = new Map<string, MessageCodec<unknown>>();

/**
 * Returns the codec for a message of the `runtime.v1` package.
 * @param name the short message name, e.g. `PodSandboxConfig`
 * @returns a codec (cached, so repeated calls are cheap)
 * @throws Error when the descriptor has no such message
 */
export function messageCodec<T>(name: string): MessageCodec<T> {
  const cached = cache.get(name);
  if (cached) return cached as MessageCodec<T>;
  const type = root.lookupType(`${CRI_PACKAGE}.${name}`);
  const codec: MessageCodec<T> = {
    name: `${CRI_PACKAGE}.${name}`,
    encode(value: object): Uint8Array {
      // The encoder trusts its input: a string in an int field would be written
      // as 0 and reach the runtime as a silently different request.
      const problem = type.verify(value);
      if (problem !== null) throw new Error(`invalid ${type.fullName.slice(1)}: ${problem}`);
      return type.encode(value).finish();
    },
    decode(bytes: Uint8Array): T {
      const object = type.toObject(type.decode(bytes), toObjectOptions);
      dropNulls(object);
      return object as T;
    },
  };
  cache.set(name, codec as MessageCodec<unknown>);
  return codec;
}
