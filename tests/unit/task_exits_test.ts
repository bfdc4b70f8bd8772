/**
 * lib/cri/task_exits.ts: the Subscribe request's filter, the envelopes it decodes (a
 * CRI container's exit; other namespaces and topics ignored), and the watch's
 * resubscription against a node:http2 server speaking the Events service.
 */

import assert from "node:assert/strict";
import http2 from "node:http2";
import {
  decodeTaskExit,
  envelopeCodec,
  SUBSCRIBE_METHOD,
  subscribeRequest,
  type TaskExit,
  taskExitCodec,
  watchTaskExits,
} from "../../lib/cri/task_exits.ts";
import { realClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { waitFor } from "../kit/mod.ts";

function envelope(namespace: string, topic: string, containerId: string): Uint8Array {
  const exit = taskExitCodec.encode({
    containerId,
    id: containerId,
    pid: 4242,
    exitStatus: 137,
    exitedAt: { seconds: 1_764_800_000, nanos: 250_000_000 },
  });
  return envelopeCodec.encode({
    timestamp: { seconds: 1_764_800_000, nanos: 300_000_000 },
    namespace,
    topic,
    event: { typeUrl: "containerd.events.TaskExit", value: exit },
  });
}

Deno.test("decodeTaskExit() reads a CRI container's exit and passes over the rest", () => {
  assert.deepEqual(decodeTaskExit(envelope("k8s.io", "/tasks/exit", "abc")), {
    containerId: "abc",
    exitStatus: 137,
    exitedAt: 1_764_800_000_250,
  });
  assert.equal(decodeTaskExit(envelope("moby", "/tasks/exit", "abc")), undefined);
  assert.equal(decodeTaskExit(envelope("k8s.io", "/tasks/start", "abc")), undefined);
  assert.throws(() => decodeTaskExit(new Uint8Array([0x0a, 0xff])));
});

function frame(body: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + body.byteLength);
  new DataView(out.buffer).setUint32(1, body.byteLength);
  out.set(body, 5);
  return out;
}

Deno.test("watchTaskExits() asks for CRI exits only, hands them over, subscribes again after a break", async () => {
  const dir = await Deno.makeTempDir({ prefix: "denolet-exits-" });
  const socket = `${dir}/containerd.sock`;
  const requests: { path: string; filters: string[] }[] = [];
  const server = http2.createServer();
  const sessions: http2.ServerHttp2Session[] = [];
  server.on("session", (s) => sessions.push(s));
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    stream.on("error", () => {});
    const chunks: Uint8Array[] = [];
    stream.on("data", (c: Uint8Array) => chunks.push(c));
    stream.on("end", () => {
      const body = Buffer.concat(chunks).subarray(5);
      requests.push({
        path: String(headers[":path"]),
        filters: subscribeRequest.decode(body).filters,
      });
      stream.respond({ ":status": 200, "content-type": "application/grpc" });
      // Each subscription gets one exit of its own, and one of another namespace.
      stream.write(frame(envelope("moby", "/tasks/exit", "other")));
      stream.write(frame(envelope("k8s.io", "/tasks/exit", `c${requests.length}`)));
      // The first stream breaks (a restarting runtime); the second stays open.
      if (requests.length === 1) {
        setTimeout(() => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR), 50);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  const abort = new AbortController();
  const exits: TaskExit[] = [];
  const watching = watchTaskExits({
    endpoint: `unix://${socket}`,
    onExit: (e) => exits.push(e),
    clock: realClock,
    logger: silentLogger,
    signal: abort.signal,
    backoff: { initialMs: 10, maxMs: 100 },
  });
  try {
    await waitFor("the exits of two subscriptions", () => exits.length === 2 || undefined);
    assert.deepEqual(exits.map((e) => e.containerId), ["c1", "c2"]);
    assert.equal(requests.length, 2);
    for (const r of requests) {
      assert.equal(r.path, SUBSCRIBE_METHOD);
      assert.deepEqual(r.filters, ['namespace=="k8s.io",topic=="/tasks/exit"']);
    }
  } finally {
    abort.abort();
    await watching;
    for (const s of sessions) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("watchTaskExits() returns at once from a runtime without containerd's events", async () => {
  const dir = await Deno.makeTempDir({ prefix: "denolet-exits-" });
  const socket = `${dir}/crio.sock`;
  const server = http2.createServer();
  const sessions: http2.ServerHttp2Session[] = [];
  server.on("session", (s) => sessions.push(s));
  server.on("stream", (stream: http2.ServerHttp2Stream) => {
    stream.on("error", () => {});
    stream.on("data", () => {});
    stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "12" }, {
      endStream: true,
    });
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  try {
    await watchTaskExits({
      endpoint: socket,
      onExit: () => assert.fail("no exit expected"),
      clock: realClock,
      logger: silentLogger,
      signal: new AbortController().signal,
    });
  } finally {
    for (const s of sessions) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await Deno.remove(dir, { recursive: true });
  }
});
