import assert from "node:assert/strict";
import { DESCRIPTOR_PATH, PROTO_PATH, renderDescriptor } from "../../lib/cri/_descriptor_gen.ts";
import { messageCodec } from "../../lib/cri/codec.ts";
import type {
  ContainerConfig,
  ContainerStatus,
  ExecSyncResponse,
  LinuxSandboxSecurityContext,
  PodSandboxConfig,
  PodSandboxMetadata,
  PodSandboxStatusResponse,
} from "../../lib/cri/types.ts";

const repo = new URL("../../", import.meta.url);
const bytes = (...b: number[]) => new Uint8Array(b);
const ascii = (s: string) => [...new TextEncoder().encode(s)];
const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join(" ");

Deno.test("renderDescriptor() output matches the committed proto/api.json", async () => {
  const proto = await Deno.readTextFile(new URL(PROTO_PATH, repo));
  const committed = await Deno.readTextFile(new URL(DESCRIPTOR_PATH, repo));
  assert.ok(
    renderDescriptor(proto) === committed,
    "proto/api.json is stale: run `deno run -A tools/gen_proto.ts` and commit both files",
  );
});

Deno.test("messageCodec() encodes PodSandboxMetadata with upstream field numbers 1-4", () => {
  const codec = messageCodec<PodSandboxMetadata>("PodSandboxMetadata");
  const wire = codec.encode({ name: "nginx", uid: "u1", namespace: "default", attempt: 2 });
  // deno-fmt-ignore
  const expected = bytes(
    0x0a, 5, ...ascii("nginx"), // 1: name (string)
    0x12, 2, ...ascii("u1"), // 2: uid
    0x1a, 7, ...ascii("default"), // 3: namespace
    0x20, 2, // 4: attempt (varint)
  );
  assert.equal(hex(wire), hex(expected));
});

Deno.test("messageCodec() encodes a ContainerConfig's labels map as field 9 and linux as 15", () => {
  const codec = messageCodec<ContainerConfig>("ContainerConfig");
  const config: ContainerConfig = {
    metadata: { name: "c", attempt: 1 },
    image: { image: "busybox" },
    labels: { a: "b" },
    linux: { resources: { memoryLimitInBytes: 1 << 20 } },
  };
  // deno-fmt-ignore
  const expected = bytes(
    0x0a, 5, 0x0a, 1, ...ascii("c"), 0x10, 1, // 1: metadata {name, attempt}
    0x12, 9, 0x0a, 7, ...ascii("busybox"), // 2: image {image}
    0x4a, 6, 0x0a, 1, ...ascii("a"), 0x12, 1, ...ascii("b"), // 9: labels entry {key, value}
    0x7a, 6, 0x0a, 4, 0x20, 0x80, 0x80, 0x40, // 15: linux {resources {memory_limit_in_bytes: 2^20}}
  );
  assert.equal(hex(codec.encode(config)), hex(expected));
  assert.deepEqual(codec.decode(expected).labels, { a: "b" });
});

Deno.test("messageCodec() puts run_as_group at field 8 of LinuxSandboxSecurityContext, after readonly_rootfs", () => {
  const codec = messageCodec<LinuxSandboxSecurityContext>("LinuxSandboxSecurityContext");
  const wire = codec.encode({
    runAsUser: { value: 1000 },
    runAsGroup: { value: 1000 },
    readonlyRootfs: true,
  });
  // deno-fmt-ignore
  const expected = bytes(
    0x1a, 3, 0x08, 0xe8, 0x07, // 3: run_as_user {value: 1000}
    0x20, 1, // 4: readonly_rootfs
    0x42, 3, 0x08, 0xe8, 0x07, // 8: run_as_group {value: 1000}
  );
  assert.equal(hex(wire), hex(expected));
});

Deno.test("messageCodec() round-trips a full PodSandboxConfig", () => {
  const codec = messageCodec<PodSandboxConfig>("PodSandboxConfig");
  const config: PodSandboxConfig = {
    metadata: { name: "web", uid: "9f1c", namespace: "prod", attempt: 3 },
    hostname: "web-0",
    logDirectory: "/var/log/pods/prod_web_9f1c",
    dnsConfig: {
      servers: ["10.0.0.10"],
      searches: ["prod.svc.cluster.local"],
      options: ["ndots:5"],
    },
    portMappings: [{ protocol: 1, containerPort: 53, hostPort: 5353, hostIp: "127.0.0.1" }],
    labels: { "io.kubernetes.pod.uid": "9f1c" },
    annotations: { "kubernetes.io/config.source": "file" },
    linux: {
      cgroupParent: "/kubepods/burstable/pod9f1c",
      securityContext: {
        namespaceOptions: { network: 2, pid: 1, ipc: 0, targetId: "" },
        supplementalGroups: [5, 6],
        privileged: true,
      },
      sysctls: { "net.ipv4.ip_unprivileged_port_start": "0" },
      resources: {
        cpuPeriod: 100000,
        cpuQuota: 50000,
        cpuShares: 512,
        unified: { "memory.high": "max" },
      },
    },
  };
  const decoded = codec.decode(codec.encode(config));
  assert.deepEqual(decoded.metadata, config.metadata);
  assert.deepEqual(decoded.dnsConfig, config.dnsConfig);
  assert.deepEqual(decoded.portMappings, config.portMappings);
  assert.deepEqual(decoded.labels, config.labels);
  assert.equal(decoded.linux?.cgroupParent, "/kubepods/burstable/pod9f1c");
  assert.deepEqual(decoded.linux?.securityContext?.supplementalGroups, [5, 6]);
  assert.equal(decoded.linux?.securityContext?.namespaceOptions?.network, 2);
  assert.equal(decoded.linux?.securityContext?.privileged, true);
  assert.deepEqual(decoded.linux?.sysctls, config.linux?.sysctls);
  assert.equal(decoded.linux?.resources?.cpuQuota, 50000);
  assert.deepEqual(decoded.linux?.resources?.unified, { "memory.high": "max" });
  // Sub-messages that were never set stay absent rather than null.
  assert.equal("overhead" in (decoded.linux ?? {}), false);
});

Deno.test("messageCodec() decodes absent scalars, lists and maps to their defaults", () => {
  const codec = messageCodec<ContainerStatus>("ContainerStatus");
  const status = codec.decode(bytes(0x0a, 2, ...ascii("c1")));
  assert.equal(status.id, "c1");
  assert.equal(status.state, 0);
  assert.equal(status.createdAt, 0);
  assert.equal(status.exitCode, 0);
  assert.equal(status.reason, "");
  assert.deepEqual(status.labels, {});
  assert.deepEqual(status.mounts, []);
  assert.equal("image" in status, false);
  assert.equal("metadata" in status, false);
});

Deno.test("messageCodec() decodes int64 nanosecond timestamps as numbers and enums as numbers", () => {
  const codec = messageCodec<ContainerStatus>("ContainerStatus");
  const createdAt = 1_700_000_000_123_456_768; // exactly representable as a double
  const decoded = codec.decode(codec.encode({ id: "c", state: 2, createdAt, exitCode: -1 }));
  assert.equal(typeof decoded.createdAt, "number");
  assert.equal(decoded.createdAt, createdAt);
  assert.equal(decoded.state, 2);
  assert.equal(decoded.exitCode, -1);
});

Deno.test("messageCodec() decodes ExecSyncResponse bytes fields as Uint8Array", () => {
  const codec = messageCodec<ExecSyncResponse>("ExecSyncResponse");
  const wire = bytes(0x0a, 3, ...ascii("hi\n"), 0x18, 7);
  const decoded = codec.decode(wire);
  assert.ok(decoded.stdout instanceof Uint8Array);
  assert.equal(new TextDecoder().decode(decoded.stdout), "hi\n");
  assert.ok(decoded.stderr instanceof Uint8Array);
  assert.equal(decoded.stderr.length, 0);
  assert.equal(decoded.exitCode, 7);
});

Deno.test("messageCodec() skips fields that upstream has and our proto leaves out", () => {
  const codec = messageCodec<PodSandboxStatusResponse>("PodSandboxStatusResponse");
  // deno-fmt-ignore
  const wire = bytes(
    0x0a, 4, 0x0a, 2, ...ascii("p1"), // 1: status {id}
    0x1a, 2, 0x0a, 0, // 3: containers_statuses (upstream only)
    0x20, 0x96, 0x01, // 4: timestamp 150 (upstream only)
  );
  const decoded = codec.decode(wire);
  assert.equal(decoded.status.id, "p1");
  assert.deepEqual(decoded.info, {});
  assert.deepEqual(Object.keys(decoded).sort(), ["info", "status"]);
});

Deno.test("messageCodec() rejects a value of the wrong kind instead of encoding garbage", () => {
  const codec = messageCodec<PodSandboxMetadata>("PodSandboxMetadata");
  assert.throws(
    () => codec.encode({ name: "x", attempt: "three" }),
    /invalid runtime\.v1\.PodSandboxMetadata: attempt: integer expected/,
  );
});

Deno.test("messageCodec() throws for a message the descriptor lacks", () => {
  assert.throws(() => messageCodec("NoSuchMessage"), /no such type/);
});
