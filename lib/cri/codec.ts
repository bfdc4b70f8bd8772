/**
 * Protobuf encoding of CRI messages from the precompiled descriptor
 * `proto/api.json` (generated from `proto/api.proto` by `_descriptor_gen.ts`,
 * in protobufjs's JSON form).
 *
 * No protobuf library is loaded: the descriptor is read into a plan per message
 * type (its fields by number, their kinds), which drives this module's one-pass
 * wire writer and reader. The writer checks each value's kind as it goes and
 * writes what protobufjs's verify-then-encode wrote, byte for byte (fields in
 * number order, every field that is present and not null, repeated numbers
 * packed). Decoded messages follow lib/cri/types.ts: int64 as `number`, enums as
 * numbers, scalar/repeated/map fields always present with their defaults, bytes
 * as `Uint8Array`, and absent sub-messages left out (never `null`).
 *
 * @module
 */

import { Buffer } from "node:buffer";
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

/** How a field's value is read off the wire. */
const enum Kind {
  String,
  Bytes,
  Bool,
  Int32,
  Uint32,
  Int64,
  Uint64,
  Message,
  StringMap,
  Enum,
}

/** One field of a {@link Plan}. */
interface FieldPlan {
  name: string;
  number: number;
  kind: Kind;
  repeated: boolean;
  /** The sub-message's plan, for {@link Kind.Message}. */
  message?: Plan;
  /** The enum's values, for {@link Kind.Enum}. */
  values?: ReadonlySet<number>;
}

/** How to encode and decode one message type. */
interface Plan {
  /** Fully qualified name, e.g. `runtime.v1.PodSandboxConfig`. */
  name: string;
  byNumber: Map<number, FieldPlan>;
  /** In declaration order (the decoded object's keys). */
  fields: FieldPlan[];
  /** In number order (the order they are written). */
  written: FieldPlan[];
}

const SCALAR_KINDS: Readonly<Record<string, Kind>> = {
  string: Kind.String,
  bytes: Kind.Bytes,
  bool: Kind.Bool,
  int32: Kind.Int32,
  uint32: Kind.Uint32,
  int64: Kind.Int64,
  uint64: Kind.Uint64,
};

/** A message or enum of a protobufjs JSON descriptor. */
interface DescriptorNode {
  nested?: Record<string, DescriptorNode>;
  fields?: Record<string, { type: string; id: number; rule?: string; keyType?: string }>;
  values?: Record<string, number>;
}

/** A map entry's key (field 1) and value (field 2), both length-delimited (wire type 2). */
const MAP_KEY_TAG = (1 << 3) | 2;
const MAP_VALUE_TAG = (2 << 3) | 2;

/**
 * The message types of one descriptor, planned on first use.
 */
class Descriptor {
  readonly #root: DescriptorNode;
  readonly #plans = new Map<string, Plan>();

  /** @param root a protobufjs JSON descriptor (`{ nested: { pkg: { nested: ... } } }`) */
  constructor(root: DescriptorNode) {
    this.#root = root;
  }

  /** The node at a dotted path from the root, if any. */
  #node(path: readonly string[]): DescriptorNode | undefined {
    let node: DescriptorNode | undefined = this.#root;
    for (const part of path) node = node?.nested?.[part];
    return node;
  }

  /**
   * Resolves a type name as protobuf scopes do: in the message itself, then in each
   * enclosing scope out to the root.
   */
  #resolve(name: string, scope: readonly string[]): { path: string[]; node: DescriptorNode } {
    const parts = name.split(".");
    for (let n = scope.length; n >= 0; n--) {
      const path = [...scope.slice(0, n), ...parts];
      const node = this.#node(path);
      if (node) return { path, node };
    }
    throw new Error(`${scope.join(".")}: no such type ${name}`);
  }

  /**
   * The plan of a message type.
   * @param fullName e.g. `runtime.v1.PodSandboxConfig`
   * @throws Error when there is no such message, or it has a field type the CRI does not use
   */
  plan(fullName: string): Plan {
    const known = this.#plans.get(fullName);
    if (known) return known;
    const path = fullName.split(".");
    const node = this.#node(path);
    if (node?.fields === undefined) throw new Error(`no such type: ${fullName}`);
    const plan: Plan = { name: fullName, byNumber: new Map(), fields: [], written: [] };
    this.#plans.set(fullName, plan); // before the fields: messages can nest themselves
    for (const [name, f] of Object.entries(node.fields)) {
      const repeated = f.rule === "repeated";
      let field: FieldPlan;
      if (f.keyType !== undefined) {
        if (f.keyType !== "string" || f.type !== "string") {
          throw new Error(`${fullName}.${name}: only map<string, string> is encoded`);
        }
        field = { name, number: f.id, kind: Kind.StringMap, repeated: false };
      } else if (SCALAR_KINDS[f.type] !== undefined) {
        field = { name, number: f.id, kind: SCALAR_KINDS[f.type]!, repeated };
      } else {
        const target = this.#resolve(f.type, path);
        if (target.node.values !== undefined) {
          const values = new Set(Object.values(target.node.values));
          field = { name, number: f.id, kind: Kind.Enum, repeated, values };
        } else if (target.node.fields !== undefined) {
          field = { name, number: f.id, kind: Kind.Message, repeated };
          field.message = this.plan(target.path.join("."));
        } else {
          throw new Error(`${fullName}.${name}: type ${f.type}`);
        }
      }
      plan.byNumber.set(f.id, field);
      plan.fields.push(field);
    }
    plan.written = [...plan.fields].sort((x, y) => x.number - y.number);
    return plan;
  }
}

/**
 * ASCII strings decoded before, by a hash of their bytes: a relist decodes the
 * same IDs, names, labels and annotations every second, and a string found
 * here is returned instead of a new copy. One string per slot, the last one
 * decoded into it, so what it holds is bounded ({@link INTERN_SLOTS} strings
 * of at most {@link INTERN_MAX_LENGTH} bytes) and most of it is held anyway
 * by the agent's view of the runtime.
 */
class StringTable {
  readonly #slots: (string | undefined)[] = new Array(INTERN_SLOTS).fill(undefined);

  /**
   * The string of `buf[start, end)`, a held one when it has the same bytes.
   * @returns undefined when the bytes are not ASCII or too long to hold
   */
  get(buf: Buffer, start: number, end: number): string | undefined {
    const length = end - start;
    if (length > INTERN_MAX_LENGTH) return undefined;
    let hash = 0x811c9dc5 ^ length; // FNV-1a
    let high = 0;
    for (let i = start; i < end; i++) {
      const byte = buf[i]!;
      high |= byte;
      hash = Math.imul(hash ^ byte, 0x01000193);
    }
    if (high >= 0x80) return undefined;
    const slot = (hash >>> 0) & (INTERN_SLOTS - 1);
    const held = this.#slots[slot];
    if (held !== undefined && held.length === length) {
      let i = 0;
      while (i < length && held.charCodeAt(i) === buf[start + i]) i++;
      if (i === length) return held;
    }
    const fresh = buf.toString("latin1", start, end);
    this.#slots[slot] = fresh;
    return fresh;
  }
}

/**
 * Slots of the string table (a power of two): several times the distinct strings of a
 * 110-pod relist, whose IDs, names and UIDs are a handful a pod (the label and annotation
 * keys are shared).
 */
const INTERN_SLOTS = 8192;
/** Longer strings (messages, paths, URLs) are decoded each time. */
const INTERN_MAX_LENGTH = 128;
const strings = new StringTable();

/**
 * A decoder of protobuf wire bytes into the plain objects of lib/cri/types.ts,
 * in one pass: defaults set, int64 as number, enums as numbers, absent
 * sub-messages left out. It does what protobufjs's decode, then toObject, then
 * dropping the nulls did, with one object per message instead of three, no
 * Long per int64 and no key arrays: CRI responses are decoded several times a
 * second (PLEG's two List calls), and those copies were a quarter of a steady
 * node's allocations.
 */
class WireReader {
  pos = 0;
  readonly buf: Buffer;
  readonly end: number;

  /** @param bytes the wire bytes (a view, not copied) */
  constructor(bytes: Uint8Array) {
    this.buf = Buffer.isBuffer(bytes)
      ? bytes
      : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.end = bytes.byteLength;
  }

  #fail(what: string): never {
    throw new RangeError(`invalid protobuf: ${what} at byte ${this.pos}`);
  }

  /** A varint's low 32 bits (the rest read and dropped), unsigned. */
  uint32(): number {
    const b = this.buf;
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (this.pos >= this.end) this.#fail("truncated varint");
      const byte = b[this.pos++]!;
      value |= (byte & 0x7f) << shift;
      if (byte < 0x80) return value >>> 0;
    }
    // Bits 35-69: past 32 bits, only skipped (a negative int32 is ten bytes).
    for (let i = 0; i < 5; i++) {
      if (this.pos >= this.end) this.#fail("truncated varint");
      if (b[this.pos++]! < 0x80) return value >>> 0;
    }
    return this.#fail("varint longer than ten bytes");
  }

  /** A 64-bit varint as a number (exact up to 2^53), signed or not. */
  int64(unsigned: boolean): number {
    const b = this.buf;
    let lo = 0;
    let hi = 0;
    let shift = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) this.#fail("truncated varint");
      const byte = b[this.pos++]!;
      const bits = byte & 0x7f;
      if (shift < 28) lo |= bits << shift;
      else if (shift === 28) {
        lo |= bits << 28;
        hi |= bits >>> 4;
      } else hi |= bits << (shift - 32);
      if (byte < 0x80) {
        lo >>>= 0;
        hi >>>= 0;
        if (!unsigned && hi >>> 31) {
          // two's complement: the magnitude, negated
          const nlo = (~lo + 1) >>> 0;
          const nhi = (~hi + (nlo === 0 ? 1 : 0)) >>> 0;
          return -(nlo + nhi * 4294967296);
        }
        return lo + hi * 4294967296;
      }
      shift += 7;
    }
    return this.#fail("varint longer than ten bytes");
  }

  /** The end of a length-delimited field starting here. */
  delimited(): number {
    const len = this.uint32();
    const end = this.pos + len;
    if (end > this.end) this.#fail(`length ${len} past the end`);
    return end;
  }

  string(): string {
    const end = this.delimited();
    const start = this.pos;
    this.pos = end;
    // Buffer's decoder: half TextDecoder's time a string here.
    return strings.get(this.buf, start, end) ?? this.buf.toString("utf8", start, end);
  }

  bytes(): Uint8Array {
    const end = this.delimited();
    const out = new Uint8Array(this.buf.subarray(this.pos, end)); // a copy, not a Buffer
    this.pos = end;
    return out;
  }

  /** Skips a field of this wire type. */
  skip(wireType: number): void {
    switch (wireType) {
      case 0:
        this.int64(true);
        return;
      case 1:
        this.pos += 8;
        break;
      case 2:
        this.pos = this.delimited();
        return;
      case 5:
        this.pos += 4;
        break;
      default:
        this.#fail(`wire type ${wireType}`);
    }
    if (this.pos > this.end) this.#fail("truncated field");
  }

  /** One scalar of a varint kind. */
  varint(kind: Kind): number | boolean {
    switch (kind) {
      case Kind.Bool:
        return this.int64(true) !== 0;
      case Kind.Int32:
      case Kind.Enum:
        return this.uint32() | 0;
      case Kind.Uint32:
        return this.uint32();
      case Kind.Int64:
        return this.int64(false);
      default:
        return this.int64(true);
    }
  }

  message(plan: Plan, end: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const f of plan.fields) {
      if (f.repeated) out[f.name] = [];
      else if (f.kind === Kind.StringMap) out[f.name] = {};
      else if (f.kind !== Kind.Message) out[f.name] = defaultOf(f.kind);
    }
    while (this.pos < end) {
      const tag = this.uint32();
      const f = plan.byNumber.get(tag >>> 3);
      const wireType = tag & 7;
      if (f === undefined) {
        this.skip(wireType);
        continue;
      }
      this.#field(f, wireType, out);
    }
    if (this.pos !== end) this.#fail("field past the end of its message");
    return out;
  }

  #field(f: FieldPlan, wireType: number, out: Record<string, unknown>): void {
    switch (f.kind) {
      case Kind.String:
        this.#expect(wireType, 2, f);
        if (f.repeated) (out[f.name] as string[]).push(this.string());
        else out[f.name] = this.string();
        return;
      case Kind.Bytes:
        this.#expect(wireType, 2, f);
        if (f.repeated) (out[f.name] as Uint8Array[]).push(this.bytes());
        else out[f.name] = this.bytes();
        return;
      case Kind.Message: {
        this.#expect(wireType, 2, f);
        const end = this.delimited();
        const value = this.message(f.message!, end);
        if (f.repeated) (out[f.name] as unknown[]).push(value);
        else out[f.name] = value;
        return;
      }
      case Kind.StringMap: {
        this.#expect(wireType, 2, f);
        const end = this.delimited();
        let key = "";
        let value = "";
        while (this.pos < end) {
          const tag = this.uint32();
          if (tag === MAP_KEY_TAG) key = this.string();
          else if (tag === MAP_VALUE_TAG) value = this.string();
          else this.skip(tag & 7);
        }
        if (this.pos !== end) this.#fail("map entry past its end");
        (out[f.name] as Record<string, string>)[key] = value;
        return;
      }
      default:
        if (!f.repeated) {
          this.#expect(wireType, 0, f);
          out[f.name] = this.varint(f.kind);
          return;
        }
        if (wireType === 2) { // packed
          const end = this.delimited();
          while (this.pos < end) (out[f.name] as unknown[]).push(this.varint(f.kind));
          if (this.pos !== end) this.#fail("packed field past its end");
          return;
        }
        this.#expect(wireType, 0, f);
        (out[f.name] as unknown[]).push(this.varint(f.kind));
    }
  }

  #expect(wireType: number, want: number, f: FieldPlan): void {
    if (wireType !== want) this.#fail(`wire type ${wireType} for field ${f.name}`);
  }
}

function defaultOf(kind: Kind): unknown {
  switch (kind) {
    case Kind.String:
      return "";
    case Kind.Bytes:
      return new Uint8Array(0);
    case Kind.Bool:
      return false;
    default:
      return 0;
  }
}

/** A value of the wrong kind for its field: the message names the field's path. */
class KindError extends Error {
  constructor(readonly path: string, readonly expected: string) {
    super(`${path}: ${expected} expected`);
  }
}

const utf8 = new TextEncoder();

/**
 * A writer of protobuf wire bytes from the plain objects of lib/cri/types.ts, in one
 * pass that checks each value's kind as it writes it. A sub-message's length is written
 * before its bytes: one byte is kept for it, and the bytes move over when it needs more.
 */
class WireWriter {
  buf = new Uint8Array(256);
  pos = 0;

  #reserve(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
  }

  /** A varint of an unsigned 32-bit value. */
  uint32(value: number): void {
    this.#reserve(5);
    let v = value >>> 0;
    while (v > 127) {
      this.buf[this.pos++] = (v & 127) | 128;
      v >>>= 7;
    }
    this.buf[this.pos++] = v;
  }

  /** A varint of a 64-bit integer given as a number, two's complement when negative. */
  int64(value: number): void {
    const magnitude = Math.abs(value);
    let lo = magnitude % 4294967296 >>> 0;
    let hi = Math.floor(magnitude / 4294967296) >>> 0;
    if (value < 0) {
      lo = (~lo + 1) >>> 0;
      hi = (~hi + (lo === 0 ? 1 : 0)) >>> 0;
    }
    this.#reserve(10);
    while (hi !== 0) {
      this.buf[this.pos++] = (lo & 127) | 128;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    this.uint32(lo);
  }

  /** An int32 (or enum): negative ones take ten bytes, as int64. */
  int32(value: number): void {
    if (value < 0) this.int64(value);
    else this.uint32(value);
  }

  bytes(value: Uint8Array): void {
    this.uint32(value.byteLength);
    this.#reserve(value.byteLength);
    this.buf.set(value, this.pos);
    this.pos += value.byteLength;
  }

  string(value: string): void {
    // ASCII, the common case, in one byte a character; else through the encoder.
    const length = value.length;
    let ascii = length < 128;
    for (let i = 0; ascii && i < length; i++) ascii = value.charCodeAt(i) < 128;
    if (ascii) {
      this.#reserve(1 + length);
      this.buf[this.pos++] = length;
      for (let i = 0; i < length; i++) this.buf[this.pos++] = value.charCodeAt(i);
      return;
    }
    this.bytes(utf8.encode(value));
  }

  /** Starts a length-delimited part; {@link end} writes its length. */
  begin(): number {
    this.#reserve(1);
    return this.pos++;
  }

  /** Ends the part that {@link begin} started at `start`. */
  end(start: number): void {
    const length = this.pos - start - 1;
    let size = 1;
    for (let v = length; v > 127; v >>>= 7) size++;
    if (size > 1) {
      this.#reserve(size - 1);
      this.buf.copyWithin(start + size, start + 1, this.pos);
      this.pos += size - 1;
    }
    let at = start;
    let v = length;
    while (v > 127) {
      this.buf[at++] = (v & 127) | 128;
      v >>>= 7;
    }
    this.buf[at] = v;
  }

  message(plan: Plan, value: unknown, path: string): void {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new KindError(path || plan.name, "object");
    }
    const object = value as Record<string, unknown>;
    for (const f of plan.written) {
      const v = object[f.name];
      if (v == null || !Object.hasOwn(object, f.name)) continue;
      const at = path ? `${path}.${f.name}` : f.name;
      if (f.kind === Kind.StringMap) this.#map(f, v, at);
      else if (!f.repeated) this.#one(f, v, at);
      else if (!Array.isArray(v)) throw new KindError(at, "array");
      else if (f.kind <= Kind.Bytes || f.kind === Kind.Message) {
        for (const item of v) this.#one(f, item, at);
      } else if (v.length > 0) {
        this.uint32((f.number << 3) | 2); // packed
        const start = this.begin();
        for (const item of v) this.#scalar(f, item, at);
        this.end(start);
      }
    }
  }

  #map(f: FieldPlan, value: unknown, path: string): void {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new KindError(path, "object");
    }
    for (const [k, v] of Object.entries(value)) {
      if (typeof v !== "string") throw new KindError(path, "string{k:string}");
      this.uint32((f.number << 3) | 2);
      const start = this.begin();
      this.uint32(MAP_KEY_TAG);
      this.string(k);
      this.uint32(MAP_VALUE_TAG);
      this.string(v);
      this.end(start);
    }
  }

  #one(f: FieldPlan, value: unknown, path: string): void {
    switch (f.kind) {
      case Kind.String:
        if (typeof value !== "string") throw new KindError(path, "string");
        this.uint32((f.number << 3) | 2);
        this.string(value);
        return;
      case Kind.Bytes:
        if (!(value instanceof Uint8Array)) throw new KindError(path, "buffer");
        this.uint32((f.number << 3) | 2);
        this.bytes(value);
        return;
      case Kind.Message: {
        this.uint32((f.number << 3) | 2);
        const start = this.begin();
        this.message(f.message!, value, path);
        this.end(start);
        return;
      }
      default:
        this.uint32(f.number << 3);
        this.#scalar(f, value, path);
    }
  }

  /** A value of a varint kind, without its tag. */
  #scalar(f: FieldPlan, value: unknown, path: string): void {
    if (f.kind === Kind.Bool) {
      if (typeof value !== "boolean") throw new KindError(path, "boolean");
      this.uint32(value ? 1 : 0);
      return;
    }
    if (!Number.isInteger(value)) {
      const int64 = f.kind === Kind.Int64 || f.kind === Kind.Uint64;
      throw new KindError(
        path,
        f.kind === Kind.Enum ? "enum value" : int64 ? "integer|Long" : "integer",
      );
    }
    const n = value as number;
    switch (f.kind) {
      case Kind.Enum:
        if (!f.values!.has(n)) throw new KindError(path, "enum value");
        this.int32(n);
        return;
      case Kind.Int32:
        this.int32(n);
        return;
      case Kind.Uint32:
        this.uint32(n);
        return;
      default:
        this.int64(n);
    }
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }
}

/**
 * A codec of one message type of a descriptor.
 * @param types the descriptor's types
 * @param fullName e.g. `runtime.v1.PodSandboxConfig`
 * @throws Error when the descriptor has no such message
 */
function codecOf<T>(types: Descriptor, fullName: string): MessageCodec<T> {
  const plan = types.plan(fullName);
  return {
    name: fullName,
    encode(value: object): Uint8Array {
      const writer = new WireWriter();
      try {
        writer.message(plan, value, "");
      } catch (err) {
        // The writer checks kinds: a string in an int field must not be written as 0
        // and reach the runtime as a silently different request.
        if (err instanceof KindError) throw new Error(`invalid ${fullName}: ${err.message}`);
        throw err;
      }
      return writer.finish();
    },
    decode(bytes: Uint8Array): T {
      const reader = new WireReader(bytes);
      return reader.message(plan, reader.end) as T;
    },
  };
}

/**
 * The codecs of another descriptor than the CRI's, in protobufjs's JSON form (e.g. the
 * gRPC health protocol's two messages).
 * @param root the descriptor
 * @returns a lookup of codecs by fully qualified message name
 */
export function descriptorCodecs(root: object): <T>(fullName: string) => MessageCodec<T> {
  const types = new Descriptor(root as DescriptorNode);
  const codecs = new Map<string, MessageCodec<unknown>>();
  return <T>(fullName: string): MessageCodec<T> => {
    let codec = codecs.get(fullName);
    if (codec === undefined) {
      codec = codecOf(types, fullName);
      codecs.set(fullName, codec);
    }
    return codec as MessageCodec<T>;
  };
}

const criTypes = new Descriptor(descriptor as DescriptorNode);
/** By short name: two lookups a CRI call, so not the fully qualified name made each time. */
const criCodecs = new Map<string, MessageCodec<unknown>>();

/**
 * Returns the codec for a message of the `runtime.v1` package.
 * @param name the short message name, e.g. `PodSandboxConfig`
 * @returns a codec (cached, so repeated calls are cheap)
 * @throws Error when the descriptor has no such message
 */
export function messageCodec<T>(name: string): MessageCodec<T> {
  let codec = criCodecs.get(name);
  if (codec === undefined) {
    codec = codecOf(criTypes, `${CRI_PACKAGE}.${name}`);
    criCodecs.set(name, codec);
  }
  return codec as MessageCodec<T>;
}
