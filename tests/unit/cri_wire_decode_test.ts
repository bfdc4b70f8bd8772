/**
 * lib/cri/codec.ts encodes and decodes with its own one-pass wire writer and
 * reader. These tests hold them to protobufjs (the library they replaced, here
 * only as the oracle): the writer to the bytes protobufjs's encode writes and to
 * its verify's refusals; the reader to what protobufjs makes of the same bytes
 * with decode, then toObject (longs and enums as numbers, defaults set), then
 * the absent sub-messages' nulls dropped: for every message of the CRI, on
 * random values of every field, and on wire forms protobufjs itself does not
 * write (unknown fields, unpacked repeated numbers, negative int32s in ten bytes).
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import protobuf from "protobufjs/light";
import descriptor from "../../proto/api.json" with { type: "json" };
import { CRI_PACKAGE, messageCodec } from "../../lib/cri/codec.ts";

const root = protobuf.Root.fromJSON(descriptor as protobuf.INamespace);
root.resolveAll();
const pkg = root.lookup(CRI_PACKAGE) as protobuf.Namespace;
const messages = pkg.nestedArray.filter((n): n is protobuf.Type => n instanceof protobuf.Type);

/** The old pipeline: protobufjs decode + toObject, nulls dropped, Buffers as plain bytes. */
function oracle(type: protobuf.Type, bytes: Uint8Array): unknown {
  const object = type.toObject(type.decode(bytes), {
    longs: Number,
    enums: Number,
    defaults: true,
    arrays: true,
    objects: true,
  });
  const clean = (v: unknown): unknown => {
    if (v instanceof Uint8Array) return new Uint8Array(v);
    if (Array.isArray(v)) return v.map(clean);
    if (typeof v !== "object" || v === null) return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = clean(x);
    return out;
  };
  return clean(object);
}

const MAX = Number.MAX_SAFE_INTEGER;
const text = fc.oneof(fc.string({ unit: "binary", maxLength: 8 }), fc.string({ maxLength: 90 }));

function scalar(type: string): fc.Arbitrary<unknown> {
  switch (type) {
    case "string":
      return text;
    case "bytes":
      return fc.uint8Array({ maxLength: 20 });
    case "bool":
      return fc.boolean();
    case "int32":
      return fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
    case "uint32":
      return fc.integer({ min: 0, max: 2 ** 32 - 1 });
    case "int64":
      return fc.oneof(fc.integer({ min: -MAX, max: MAX }), fc.integer({ min: -300, max: 300 }));
    case "uint64":
      return fc.oneof(fc.integer({ min: 0, max: MAX }), fc.integer({ min: 0, max: 300 }));
  }
  throw new Error(`no arbitrary for ${type}`);
}

const wellFormed = text.filter((t) => t.isWellFormed());

/**
 * Random values of a message type. `writable` keeps to what a writer may be given:
 * well-formed strings and the enums' own values (the reader takes any).
 */
function valueOf(
  type: protobuf.Type,
  depth: number,
  writable = false,
): fc.Arbitrary<Record<string, unknown>> {
  const string = writable ? wellFormed : text;
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const f of type.fieldsArray) {
    let one: fc.Arbitrary<unknown>;
    if (f instanceof protobuf.MapField) {
      fields[f.name] = fc.dictionary(string, string, { maxKeys: 3 });
      continue;
    }
    if (f.resolvedType instanceof protobuf.Type) {
      if (depth >= 3) continue;
      one = valueOf(f.resolvedType, depth + 1, writable);
    } else if (f.resolvedType instanceof protobuf.Enum) {
      one = writable
        ? fc.constantFrom(...Object.values(f.resolvedType.values))
        : fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
    } else one = f.type === "string" ? string : scalar(f.type);
    fields[f.name] = f.repeated ? fc.array(one, { maxLength: 3 }) : one;
  }
  return fc.record(fields, { requiredKeys: [] });
}

Deno.test("the wire decoder reads every CRI message as protobufjs's decode + toObject does", () => {
  assert.ok(messages.length > 90, `${messages.length} messages in ${CRI_PACKAGE}`);
  for (const type of messages) {
    const codec = messageCodec<unknown>(type.name);
    fc.assert(
      fc.property(valueOf(type, 0), (value) => {
        const bytes = type.encode(type.fromObject(value)).finish();
        assert.deepEqual(codec.decode(bytes), oracle(type, bytes), type.name);
      }),
      { numRuns: 30, seed: 20261203 },
    );
  }
});

Deno.test("the wire decoder skips unknown fields of every wire type", () => {
  const type = root.lookupType(`${CRI_PACKAGE}.ContainerMetadata`);
  const w = protobuf.Writer.create();
  w.uint32((1 << 3) | 2).string("app");
  w.uint32((90 << 3) | 0).int64(-5); // varint, ten bytes
  w.uint32((91 << 3) | 1).fixed64(7);
  w.uint32((92 << 3) | 2).bytes(new Uint8Array([1, 2, 3]));
  w.uint32((93 << 3) | 5).fixed32(9);
  w.uint32((2 << 3) | 0).uint32(4);
  const bytes = w.finish();
  const decoded = messageCodec("ContainerMetadata").decode(bytes);
  assert.deepEqual(decoded, { name: "app", attempt: 4 });
  assert.deepEqual(decoded, oracle(type, bytes));
});

Deno.test("the wire decoder reads repeated numbers packed or not, and ten-byte negative int32s", () => {
  // PortForwardRequest: pod_sandbox_id = 1, repeated int32 port = 2;
  // LinuxSandboxSecurityContext: repeated int64 supplemental_groups = 5.
  const cases: [string, number, string, (w: protobuf.Writer, n: number) => void][] = [
    ["PortForwardRequest", 2, "port", (w, n) => w.int32(n)],
    ["LinuxSandboxSecurityContext", 5, "supplementalGroups", (w, n) => w.int64(n)],
  ];
  for (const [name, id, field, write] of cases) {
    const type = root.lookupType(`${CRI_PACKAGE}.${name}`);
    const codec = messageCodec<Record<string, unknown>>(name);
    const values = [3, -4, 2 ** 31 - 1];
    const packed = type.encode(type.fromObject({ [field]: values })).finish();
    const w = protobuf.Writer.create();
    for (const n of values) write(w.uint32((id << 3) | 0), n);
    const unpacked = w.finish();
    assert.notDeepEqual(unpacked, packed);
    assert.deepEqual(codec.decode(packed)[field], values, name);
    assert.deepEqual(codec.decode(unpacked)[field], values, name);
    assert.deepEqual(codec.decode(unpacked), oracle(type, unpacked), name);
  }
  // A uint32 field sent as a negative int32 (ten bytes): its low 32 bits.
  const meta = root.lookupType(`${CRI_PACKAGE}.PodSandboxMetadata`);
  const neg = protobuf.Writer.create().uint32((4 << 3) | 0).int32(-7).finish();
  assert.equal(neg.length, 11);
  assert.deepEqual(messageCodec("PodSandboxMetadata").decode(neg), oracle(meta, neg));
});

Deno.test("the wire decoder refuses truncated and overlong input with a RangeError", () => {
  const codec = messageCodec("ContainerMetadata");
  for (
    const bad of [
      [0x0a, 0x05, 0x61], // a string of 5 bytes with 1 present
      [0x10], // a tag without its varint
      [0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], // 11-byte varint
      [0x0b], // wire type 3 (groups)
    ]
  ) {
    assert.throws(() => codec.decode(new Uint8Array(bad)), RangeError, JSON.stringify(bad));
  }
});

Deno.test("strings decoded again come back right when more of them than the string table holds share its slots", () => {
  // ListContainersResponse of containers with IDs and labels: 3 × 12,000 ASCII
  // strings (more than the table's 8,192 slots, so slots are shared and
  // replaced), then the same in reverse, then with one byte changed in each ID
  // and one label value 200 bytes long (past the table's length) or not ASCII.
  const type = root.lookupType(`${CRI_PACKAGE}.ListContainersResponse`);
  const codec = messageCodec<{ containers: { id: string; labels: Record<string, string> }[] }>(
    "ListContainersResponse",
  );
  const rng = fc.sample(fc.stringMatching(/^[0-9a-f]{64}$/), { numRuns: 12_000, seed: 7 });
  const containers = (ids: string[]) =>
    ids.map((id, i) => ({
      id,
      podSandboxId: id.slice(1) + "x",
      labels: { "io.kubernetes.pod.uid": id.slice(0, 36), n: String(i) },
    }));
  const forward = containers(rng);
  const cases = [
    forward,
    [...forward].reverse(),
    containers(rng.map((id) => `${id.slice(0, 63)}${id[63] === "0" ? "1" : "0"}`)),
    forward.map((c, i) => ({
      ...c,
      labels: { ...c.labels, n: i % 2 ? "é".repeat(i % 7) + c.id : c.id.repeat(4) },
    })),
    forward,
  ];
  for (const [n, value] of cases.entries()) {
    const bytes = type.encode(type.fromObject({ containers: value })).finish();
    const want = (oracle(type, bytes) as { containers: unknown[] }).containers;
    const got = codec.decode(bytes).containers;
    assert.equal(got.length, want.length);
    // One container at a time: a failure names it without diffing 12,000.
    for (const [i, c] of got.entries()) assert.deepEqual(c, want[i], `case ${n}, container ${i}`);
  }
});

Deno.test("the wire writer writes every CRI message byte for byte as protobufjs's encode does", () => {
  for (const type of messages) {
    const codec = messageCodec<unknown>(type.name);
    fc.assert(
      fc.property(valueOf(type, 0, true), (value) => {
        assert.equal(type.verify(value), null, type.name);
        const bytes = codec.encode(value);
        assert.deepEqual(bytes, new Uint8Array(type.encode(value).finish()), type.name);
        assert.deepEqual(codec.decode(bytes), oracle(type, bytes), type.name);
      }),
      { numRuns: 30, seed: 20261203 },
    );
  }
});

Deno.test("the wire writer writes sub-messages longer than one and two length bytes hold", () => {
  // A ContainerConfig whose labels pass 127 bytes and then 16,383: its length moves
  // its bytes over by one, then two bytes.
  const type = root.lookupType(`${CRI_PACKAGE}.CreateContainerRequest`);
  const codec = messageCodec("CreateContainerRequest");
  for (const n of [1, 5, 40, 600, 3000]) {
    const labels = Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`key-${i}`, `välue-${i}`]),
    );
    const value = {
      podSandboxId: "p",
      config: {
        metadata: { name: "c", attempt: 2 },
        labels,
        linux: { resources: { cpuShares: 2 } },
      },
    };
    const bytes = codec.encode(value);
    assert.deepEqual(bytes, new Uint8Array(type.encode(value).finish()), `${n} labels`);
  }
});

Deno.test("the wire writer refuses a value of the wrong kind, naming its field as protobufjs's verify did", () => {
  const cases: [string, object, RegExp][] = [
    ["PodSandboxMetadata", { name: "x", attempt: "three" }, /: attempt: integer expected$/],
    ["PodSandboxMetadata", { name: 3 }, /: name: string expected$/],
    ["ContainerStatsRequest", { containerId: ["a"] }, /: containerId: string expected$/],
    [
      "ListContainersRequest",
      { filter: { labelSelector: { a: 1 } } },
      /filter\.labelSelector: string\{k:string\} expected$/,
    ],
    [
      "ListContainersRequest",
      { filter: { state: { state: 9 } } },
      /filter\.state\.state: enum value expected$/,
    ],
    ["ListContainersRequest", { filter: "all" }, /: filter: object expected$/],
    ["PortForwardRequest", { podSandboxId: "p", port: 80 }, /: port: array expected$/],
    ["PortForwardRequest", { podSandboxId: "p", port: [80, 1.5] }, /: port: integer expected$/],
    [
      "StopContainerRequest",
      { containerId: "c", timeout: 2 ** 0.5 },
      /: timeout: integer\|Long expected$/,
    ],
    ["LinuxContainerSecurityContext", { privileged: 1 }, /: privileged: boolean expected$/],
  ];
  // Stricter than protobufjs here: it took a string for bytes, as base64.
  assert.throws(
    () => messageCodec("ExecSyncResponse").encode({ stdout: "text" }),
    /: stdout: buffer expected$/,
  );
  for (const [name, value, message] of cases) {
    const codec = messageCodec(name);
    assert.throws(() => codec.encode(value), message, name);
    assert.match(
      String(root.lookupType(`${CRI_PACKAGE}.${name}`).verify(value)),
      /expected$/,
      name,
    );
  }
});
