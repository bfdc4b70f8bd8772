/**
 * The streaming endpoints with a fake runtime: checks and refusals with
 * upstream's statuses and messages, the CRI calls they make, and the proxy to
 * the URL the runtime returns (a fake streaming server on loopback).
 */

import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { CriError, type ExecSyncResponse, GrpcCode } from "../../lib/cri/mod.ts";
import type { RuntimePodStatus } from "../../lib/kuberuntime/mod.ts";
import { createStreamingHandlers, type StreamingOptions } from "../../lib/streaming/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import {
  RawClient,
  startFakeBackend,
  startUpgradeServer,
  upgradeRequest,
} from "./_streaming_kit.ts";

const pod: Pod = {
  metadata: { name: "web", namespace: "prod", uid: "uid-1" },
  spec: { containers: [{ name: "app", image: "busybox" }] },
};

function runtimeStatus(over: Partial<RuntimePodStatus> = {}): RuntimePodStatus {
  const container = (name: string, id: string, state: "running" | "exited") => ({
    id,
    sandboxId: "sb-1",
    name,
    state,
    createdAt: 0,
    startedAt: 0,
    finishedAt: 0,
    exitCode: 0,
    reason: "",
    message: "",
    image: "busybox",
    imageRef: "",
    restartCount: 0,
    hash: "",
  });
  return {
    uid: "uid-1",
    name: "web",
    namespace: "prod",
    sandboxes: [{
      id: "sb-1",
      state: "ready",
      attempt: 0,
      createdAt: 0,
      ip: "",
      additionalIps: [],
      hostNetwork: true,
    }],
    containers: [container("app", "ctr-new", "running"), container("app", "ctr-old", "exited")],
    ...over,
  };
}

interface Call {
  method: string;
  args: unknown[];
}

function fakeOptions(
  over: {
    url?: string;
    fail?: unknown;
    execSync?: ExecSyncResponse;
    status?: RuntimePodStatus;
  } = {},
) {
  const calls: Call[] = [];
  const answer = (method: string) => (...args: unknown[]) => {
    calls.push({ method, args });
    if (over.fail) return Promise.reject(over.fail);
    return Promise.resolve(over.url ?? "http://127.0.0.1:1/x");
  };
  const opts: StreamingOptions = {
    runtime: {
      exec: answer("exec"),
      attach: answer("attach"),
      portForward: answer("portForward"),
      execSync: (...args: unknown[]) => {
        calls.push({ method: "execSync", args });
        return Promise.resolve(
          over.execSync ?? { stdout: new Uint8Array(), stderr: new Uint8Array(), exitCode: 0 },
        );
      },
    },
    getPodByName: (ns, name) => ns === "prod" && name === "web" ? pod : undefined,
    getPodStatus: (uid) =>
      Promise.resolve(
        uid === "uid-1" ? over.status ?? runtimeStatus() : runtimeStatus({
          uid,
          sandboxes: [],
          containers: [],
        }),
      ),
    clock: new FakeClock(),
  };
  return { opts, calls };
}

async function plain(
  opts: StreamingOptions,
  method: string,
  path: string,
  headers: Record<string, string> = {},
) {
  const h = createStreamingHandlers(opts);
  const url = new URL(`http://node:10250${path}`);
  const res = await h.handle(new Request(url, { method, headers }), url);
  return { status: res.status, body: await res.text(), headers: res.headers };
}

Deno.test("handle() refuses a non-upgrade exec as upstream: 500 Upgrade request required, no CRI call", async () => {
  const { opts, calls } = fakeOptions();
  const r = await plain(opts, "GET", "/exec/prod/web/app?command=ls&output=1");
  assert.deepEqual([r.status, r.body], [500, "Upgrade request required\n"]);
  assert.deepEqual(calls, []);
});

Deno.test("handle() checks stream options before the pod: 400 with upstream's message", async () => {
  const { opts } = fakeOptions();
  const r = await plain(opts, "POST", "/exec/prod/missing/app?command=ls");
  assert.deepEqual(
    [r.status, r.body],
    [400, "you must specify at least 1 of stdin, stdout, stderr"],
  );
});

Deno.test("handle() answers 404 pod does not exist for a pod this node does not run", async () => {
  const { opts } = fakeOptions();
  for (const path of ["/exec/prod/other/app?output=1", "/attach/dev/web/app?input=1"]) {
    const r = await plain(opts, "GET", path);
    assert.deepEqual([r.status, r.body], [404, "pod does not exist"], path);
  }
  const pf = await plain(opts, "POST", "/portForward/prod/other");
  assert.deepEqual([pf.status, pf.body], [404, "pod does not exist"]);
});

Deno.test("handle() answers 500 container not found for an unknown or stopped container", async () => {
  const { opts } = fakeOptions({ status: runtimeStatus({ containers: [] }) });
  const r = await plain(opts, "GET", "/exec/prod/web/app?output=1");
  assert.deepEqual([r.status, r.body], [500, 'container not found ("app")']);
});

Deno.test("handle() answers 404 pod not found for a port forward naming another UID", async () => {
  const { opts } = fakeOptions();
  const r = await plain(opts, "GET", "/portForward/prod/web/uid-2");
  assert.deepEqual([r.status, r.body], [404, "pod not found"]);
});

Deno.test("handle() answers 400 for a WebSocket port forward without ports", async () => {
  const { opts } = fakeOptions();
  const r = await plain(opts, "GET", "/portForward/prod/web", {
    connection: "Upgrade",
    upgrade: "websocket",
  });
  assert.deepEqual([r.status, r.body], [400, 'query parameter "port" is required']);
});

Deno.test("handle() routes as go-restful: 404 for other paths, 405 with Allow for other methods and GET /run", async () => {
  const { opts } = fakeOptions();
  const missing = await plain(opts, "GET", "/exec/prod/web");
  assert.deepEqual([missing.status, missing.body], [404, "404: Page Not Found"]);
  const put = await plain(opts, "PUT", "/exec/prod/web/app?output=1");
  assert.deepEqual([put.status, put.body], [405, "405: Method Not Allowed"]);
  assert.equal(put.headers.get("allow"), "GET, POST");
  const run = await plain(opts, "GET", "/run/prod/web/app?cmd=ls");
  assert.deepEqual([run.status, run.headers.get("allow")], [405, "POST"]);
});

Deno.test("handle() /run runs cmd split on spaces through ExecSync with no timeout and returns stdout+stderr", async () => {
  const enc = new TextEncoder();
  const { opts, calls } = fakeOptions({
    execSync: { stdout: enc.encode("out\n"), stderr: enc.encode("err\n"), exitCode: 0 },
  });
  const r = await plain(opts, "POST", "/run/prod/web/uid-1/app?cmd=ls+-l+/");
  assert.deepEqual([r.status, r.body], [200, "out\nerr\n"]);
  assert.equal(r.headers.get("content-type"), "application/json");
  assert.deepEqual(calls, [{ method: "execSync", args: ["ctr-new", ["ls", "-l", "/"], 0] }]);
});

Deno.test("handle() /run answers 500 with upstream's message when the command fails", async () => {
  const enc = new TextEncoder();
  const { opts } = fakeOptions({
    execSync: { stdout: new Uint8Array(), stderr: enc.encode("boom"), exitCode: 3 },
  });
  const r = await plain(opts, "POST", "/run/prod/web/app?cmd=sh+-c+false");
  assert.deepEqual([r.status, r.body], [500, "command 'sh -c false' exited with 3: boom"]);
});

/** Sends an upgrade request to `h.upgrade` behind a node:http server; returns the raw reply. */
async function upgradeReply(
  opts: StreamingOptions,
  path: string,
  headers: Record<string, string> = {},
): Promise<string> {
  const h = createStreamingHandlers(opts);
  const server = await startUpgradeServer(h.upgrade);
  const client = await RawClient.connect(server.port);
  try {
    await client.send(upgradeRequest(path, headers));
    return await client.readToEnd();
  } finally {
    client.close();
    await server.close();
  }
}

Deno.test("upgrade() writes refusals on the socket with upstream's statuses", async () => {
  const { opts, calls } = fakeOptions();
  assert.match(
    await upgradeReply(opts, "/exec/prod/web/app?command=ls"),
    /^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*\r\n\r\nyou must specify at least 1 of stdin, stdout, stderr$/,
  );
  assert.match(
    await upgradeReply(opts, "/attach/prod/nope/app?output=1"),
    /^HTTP\/1\.1 404 Not Found\r\n[\s\S]*\r\n\r\npod does not exist$/,
  );
  assert.match(await upgradeReply(opts, "/run/prod/web/app?cmd=ls"), /^HTTP\/1\.1 404 /);
  assert.match(await upgradeReply(opts, "/stats/summary"), /^HTTP\/1\.1 404 /);
  assert.deepEqual(calls, []);
});

Deno.test("upgrade() maps the runtime's NotFound to 404 and ResourceExhausted to 429 with Retry-After", async () => {
  const notFound = new CriError({
    call: "Exec",
    object: "ctr-new",
    code: GrpcCode.NOT_FOUND,
    details: "no such container",
  });
  const busy = new CriError({
    call: "Exec",
    object: "ctr-new",
    code: GrpcCode.RESOURCE_EXHAUSTED,
    details: "too many requests",
  });
  assert.match(
    await upgradeReply(fakeOptions({ fail: notFound }).opts, "/exec/prod/web/app?output=1"),
    /^HTTP\/1\.1 404 [\s\S]*no such container/,
  );
  const reply = await upgradeReply(
    fakeOptions({ fail: busy }).opts,
    "/exec/prod/web/app?output=1",
  );
  assert.match(reply, /^HTTP\/1\.1 429 /);
  assert.match(reply, /\r\nRetry-After: 60\r\n/);
});

Deno.test("upgrade() asks CRI for the stream the query describes and proxies to its URL", async () => {
  const backend = startFakeBackend({ echo: true });
  const { opts, calls } = fakeOptions({ url: backend.url("/exec/abc").href });
  const h = createStreamingHandlers(opts);
  const server = await startUpgradeServer(h.upgrade);
  try {
    const client = await RawClient.connect(server.port);
    await client.send(
      upgradeRequest(
        "/exec/prod/web/app?command=sh&command=-c&command=cat&input=1&output=1&error=1&tty=1",
      ),
    );
    const conn = await backend.next();
    assert.match(conn.head, /^POST \/exec\/abc HTTP\/1\.1\r\n/);
    await client.readUntil((t) => t.includes("\r\n\r\n"));
    await client.send("hello");
    await client.readUntil((t) => t.endsWith("hello"));
    assert.equal(h.openStreams(), 1);
    client.close();
    await conn.closed;
    assert.deepEqual(calls, [{
      method: "exec",
      args: ["ctr-new", {
        cmd: ["sh", "-c", "cat"],
        stdin: true,
        stdout: true,
        stderr: false,
        tty: true,
      }],
    }]);
    const pf = await RawClient.connect(server.port);
    await pf.send(upgradeRequest("/portForward/prod/web/uid-1?port=80", {
      Connection: "Upgrade",
      Upgrade: "websocket",
    }));
    (await backend.next()).close();
    await pf.readToEnd();
    pf.close();
    assert.deepEqual(calls[1], { method: "portForward", args: ["sb-1", [80]] });
    const attach = await RawClient.connect(server.port);
    await attach.send(upgradeRequest("/attach/prod/web/app?output=1&error=1"));
    (await backend.next()).close();
    await attach.readToEnd();
    attach.close();
    assert.deepEqual(calls[2], {
      method: "attach",
      args: ["ctr-new", { stdin: false, stdout: true, stderr: true, tty: false }],
    });
  } finally {
    h.closeAll();
    await server.close();
    await backend.close();
  }
});
