/**
 * Protobuf encoding of CRI messages from the precompiled descriptor
 * `proto/api.json` (generated from `proto/api.proto`).
 *
 * The descriptor is loaded with `protobufjs/light`, which has no .proto parser:
 * parsing at start-up is what made the upstream proto cost ~30 MB of RSS.
 * protobufjs encodes (after verifying the request); responses are decoded by
 * this module's own one-pass wire reader, driven by the same descriptor.
 * Decoded messages follow lib/cri/types.ts: int64 as `number`, enums as
 * numbers, scalar/repeated/map fields always present with their defaults, bytes
 * as `Uint8Array`, and absent sub-messages left out (never `null`).
 *
 * @module
 */

import { Buffer } from "node:buffer";
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
}

/** One field of a {@link Plan}. */
interface FieldPlan {
  name: string;
  kind: Kind;
  repeated: boolean;
  /** The sub-message's plan, for {@link Kind.Message}. */
  message?: Plan;
}

/** How to decode one message type: its fields by number. */
interface Plan {
  byNumber: Map<number, FieldPlan>;
  fields: FieldPlan[];
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

const plans = new Map<protobuf.Type, Plan>();

/** A map entry's key (field 1) and value (field 2), both length-delimited (wire type 2). */
const MAP_KEY_TAG = (1 << 3) | 2;
const MAP_VALUE_TAG = (2 << 3) | 2;

/**
 * The decoding plan of a message type, from the descriptor.
 * @throws Error for a field type the CRI does not use (and this decoder does not read)
 */
function planOf(type: protobuf.Type): Plan {
  const known = plans.get(type);
  if (known) return known;
  const plan: Plan = { byNumber: new Map(), fields: [] };
  plans.set(type, plan); // before the fields: messages can nest themselves
  for (const f of type.fieldsArray) {
    f.resolve();
    let field: FieldPlan;
    if (f instanceof protobuf.MapField) {
      if (f.keyType !== "string" || f.type !== "string") {
        throw new Error(`${type.fullName}.${f.name}: only map<string, string> is decoded`);
      }
      field = { name: f.name, kind: Kind.StringMap, repeated: false };
    } else if (f.resolvedType instanceof protobuf.Type) {
      field = { name: f.name, kind: Kind.Message, repeated: f.repeated };
      field.message = planOf(f.resolvedType);
    } else if (f.resolvedType instanceof protobuf.Enum) {
      field = { name: f.name, kind: Kind.Int32, repeated: f.repeated };
    } else {
      const kind = SCALAR_KINDS[f.type];
      if (kind === undefined) throw new Error(`${type.fullName}.${f.name}: type ${f.type}`);
      field = { name: f.name, kind, repeated: f.repeated };
    }
    plan.byNumber.set(f.id, field);
    plan.fields.push(field);
  }
  return plan;
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
  const plan = planOf(type);
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
      const reader = new WireReader(bytes);
      return reader.message(plan, reader.end) as T;
    },
  };
  cache.set(name, codec as MessageCodec<unknown>);
  return codec;
}
