/**
 * The probe handlers against local servers on 127.0.0.1 (HTTP, HTTPS with a
 * self-signed certificate, TCP, a gRPC health server) and a scripted CRI
 * ExecSync.
 */

import assert from "node:assert/strict";
import type { Container } from "../../lib/api/types.ts";
import { startHealthServer } from "../../lib/cri/_health_server.ts";
import { CriError, GrpcCode, type RuntimeService } from "../../lib/cri/mod.ts";
import {
  execProbe,
  grpcProbe,
  httpGetProbe,
  type ProbeTarget,
  runProbe,
  tcpSocketProbe,
} from "../../lib/prober/mod.ts";
import { buildHttpProbeRequest, resolveContainerPort } from "../../lib/probe/mod.ts";

const UA = "kube-probe/1.29";
const never = new AbortController().signal;

// A throwaway self-signed P-256 certificate: the probe skips verification, as upstream.
const CERT = `-----BEGIN CERTIFICATE-----
MIIBgDCCASegAwIBAgIUWH97YJuckOG64qjBv2qZCGm85zAwCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKcHJvYmUtdGVzdDAgFw0yNjExMzAxNjUxMTZaGA8yMTI2MTEw
NjE2NTExNlowFTETMBEGA1UEAwwKcHJvYmUtdGVzdDBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABG69sU7FhIcJIgI9iiRIDFm17DW+10Thl5FNpsYUsNExWYfVOVyk
xr8vtjnib+5zz2FNH22ls+mIy8M+vUkKgB+jUzBRMB0GA1UdDgQWBBSL7owGcWim
v/Bc269WCOI6IINXjzAfBgNVHSMEGDAWgBSL7owGcWimv/Bc269WCOI6IINXjzAP
BgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cAMEQCIDnfGrqamalFEIL09lwK
03TnJ4UxJyJy2P+ouRx7Ps3FAiAxw2PklrWsJkrg3BdRdyKDjHkkakOOTTCHUPxn
WcfhsA==
-----END CERTIFICATE-----`;
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgqe2YhDYZvkUNsbea
iwI4SbEB7ekM7M1v1KQx8bTuCDuhRANCAARuvbFOxYSHCSICPYokSAxZtew1vtdE
4ZeRTabGFLDRMVmH1TlcpMa/L7Y54m/uc89hTR9tpbPpiMvDPr1JCoAf
-----END PRIVATE KEY-----`;

interface Seen {
  path: string;
  headers: Headers;
}

/** A local HTTP(S) server: `/status/N`, `/redirect?to=…`, `/loop`, `/big`, `/hang`. */
async function withServer(
  fn: (port: number, seen: Seen[]) => Promise<void>,
  tls = false,
): Promise<void> {
  const seen: Seen[] = [];
  const release = Promise.withResolvers<void>();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen() {},
    ...(tls ? { cert: CERT, key: KEY } : {}),
  }, async (req) => {
    const url = new URL(req.url);
    seen.push({ path: url.pathname + url.search, headers: req.headers });
    const status = url.pathname.match(/^\/status\/(\d+)$/);
    if (status) {
      const code = Number(status[1]);
      const body = code === 204 || code === 304 ? null : `body ${code}`;
      return new Response(body, { status: code });
    }
    if (url.pathname === "/redirect") {
      return new Response(null, {
        status: 302,
        headers: { location: url.searchParams.get("to")! },
      });
    }
    if (url.pathname === "/loop") {
      return new Response(null, { status: 301, headers: { location: "/loop" } });
    }
    if (url.pathname === "/big") return new Response("x".repeat(50_000));
    if (url.pathname === "/chunked") {
      const parts = ["first ", "second"];
      return new Response(
        new ReadableStream({
          pull(c) {
            const next = parts.shift();
            if (next === undefined) c.close();
            else c.enqueue(new TextEncoder().encode(next));
          },
        }),
      );
    }
    if (url.pathname === "/hang") {
      await release.promise;
      return new Response("late");
    }
    return new Response(`ok ${url.pathname}`);
  });
  try {
    await fn((server.addr as Deno.NetAddr).port, seen);
  } finally {
    release.resolve();
    await server.shutdown();
  }
}

function container(ports: Container["ports"] = []): Container {
  return { name: "app", image: "busybox", ports };
}

function get(
  port: number | string,
  path: string,
  extra: Partial<Parameters<typeof httpGetProbe>[0]> = {},
  timeoutSeconds = 1,
) {
  return httpGetProbe(
    { port, path, ...extra },
    container([{ name: "web", containerPort: typeof port === "number" ? port : 0 }]),
    "127.0.0.1",
    { timeoutSeconds, userAgent: UA, signal: never },
  );
}

Deno.test("httpGetProbe() succeeds on 2xx with the body and fails on 4xx/5xx with the status code", async () => {
  await withServer(async (port) => {
    assert.deepEqual(await get(port, "/status/200"), { result: "success", output: "body 200" });
    assert.deepEqual(await get(port, "/status/204"), { result: "success", output: "" });
    assert.deepEqual(await get(port, "/status/404"), {
      result: "failure",
      output: "HTTP probe failed with statuscode: 404",
    });
    assert.deepEqual(await get(port, "/status/500"), {
      result: "failure",
      output: "HTTP probe failed with statuscode: 500",
    });
  });
});

Deno.test("httpGetProbe() counts a 3xx it does not follow as success with the redirect warning", async () => {
  await withServer(async (port) => {
    const res = await get(port, "/status/304");
    assert.equal(res.result, "success");
    assert.match(res.output, /^Probe terminated redirects, Response body: /);
  });
});

Deno.test("httpGetProbe() follows a redirect on the same host, keeping the probe's headers", async () => {
  await withServer(async (port, seen) => {
    const res = await get(port, "/redirect?to=/final", {
      httpHeaders: [{ name: "x-probe", value: "1" }],
    });
    assert.deepEqual(res, { result: "success", output: "ok /final" });
    assert.deepEqual(seen.map((s) => s.path), ["/redirect?to=/final", "/final"]);
    assert.equal(seen[1]!.headers.get("x-probe"), "1");
  });
});

Deno.test("httpGetProbe() does not follow a redirect to another host and reports the warning", async () => {
  await withServer(async (port, seen) => {
    const res = await get(port, `/redirect?to=http://localhost:${port}/elsewhere`);
    assert.equal(res.result, "success");
    assert.equal(res.output, "Probe terminated redirects, Response body: ");
    assert.deepEqual(seen.map((s) => s.path), [`/redirect?to=http://localhost:${port}/elsewhere`]);
  });
});

Deno.test("httpGetProbe() fails after 10 requests of a redirect loop, naming the Location as Go does", async () => {
  await withServer(async (port, seen) => {
    const res = await get(port, "/loop");
    assert.equal(res.result, "failure");
    assert.equal(res.output, `Get "/loop": stopped after 10 redirects`);
    assert.equal(seen.length, 10);
  });
});

Deno.test("httpGetProbe() sends kube-probe User-Agent, Accept */*, custom headers and a Host override", async () => {
  await withServer(async (port, seen) => {
    await get(port, "/h", {
      httpHeaders: [{ name: "Host", value: "example.test" }, { name: "x-custom", value: "v" }],
    });
    const h = seen[0]!.headers;
    assert.equal(h.get("user-agent"), UA);
    assert.equal(h.get("accept"), "*/*");
    assert.equal(h.get("x-custom"), "v");
    assert.equal(h.get("host"), "example.test");
    await get(port, "/h2", {
      httpHeaders: [{ name: "user-agent", value: "mine" }, { name: "Accept", value: "" }],
    });
    assert.equal(seen[1]!.headers.get("user-agent"), "mine");
    assert.equal(seen[1]!.headers.get("accept"), null);
  });
});

Deno.test("httpGetProbe() resolves a named container port and reports an unknown name as unknown", async () => {
  await withServer(async (port) => {
    const byName = await httpGetProbe(
      { port: "web", path: "/named" },
      container([{ name: "web", containerPort: port }]),
      "127.0.0.1",
      { timeoutSeconds: 1, userAgent: UA, signal: never },
    );
    assert.deepEqual(byName, { result: "success", output: "ok /named" });
    const missing = await httpGetProbe({ port: "nope" }, container(), "127.0.0.1", {
      timeoutSeconds: 1,
      userAgent: UA,
      signal: never,
    });
    assert.equal(missing.result, "unknown");
    assert.match(missing.output, /port nope not found/);
  });
});

Deno.test("httpGetProbe() reads at most 10 KiB of the body", async () => {
  await withServer(async (port) => {
    const res = await get(port, "/big");
    assert.equal(res.result, "success");
    assert.equal(res.output.length, 10 * 1024);
  });
});

Deno.test("httpGetProbe() reads a chunked body", async () => {
  await withServer(async (port) => {
    assert.deepEqual(await get(port, "/chunked"), { result: "success", output: "first second" });
  });
});

/** A server that answers every connection with `answers[path]`'s bytes and closes. */
async function withRawServer(
  answers: Record<string, string>,
  fn: (port: number) => Promise<void>,
): Promise<void> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    for await (const conn of listener) {
      (async () => {
        const buf = new Uint8Array(4096);
        const n = await conn.read(buf);
        const path = /^GET (\S+)/.exec(new TextDecoder().decode(buf.subarray(0, n ?? 0)))?.[1];
        await conn.write(new TextEncoder().encode(answers[path ?? ""] ?? ""));
        conn.close();
      })().catch(() => {});
    }
  })();
  try {
    await fn((listener.addr as Deno.NetAddr).port);
  } finally {
    listener.close();
    await serving.catch(() => {});
  }
}

Deno.test("httpGetProbe() reads a response head as Go's client does", async () => {
  const ok = "Content-Length: 2\r\n\r\nok";
  const answers: Record<string, [string, "success" | "failure"]> = {
    "/spaced": [`HTTP/1.1  200 OK\r\n${ok}`, "success"],
    "/v2": [`HTTP/2.0 200 OK\r\n${ok}`, "success"],
    "/plus": [`HTTP/1.1 +20 OK\r\n${ok}`, "failure"],
    "/v1": [`HTTP/1 200 OK\r\n${ok}`, "failure"],
    "/bad-name": [`HTTP/1.1 200 OK\r\nX{y}: 1\r\n${ok}`, "failure"],
    "/control": [`HTTP/1.1 200 OK\r\nX-C: a\x01b\r\n${ok}`, "failure"],
    "/initial-space": [`HTTP/1.1 200 OK\r\n X-A: 1\r\n${ok}`, "failure"],
    "/folded": [`HTTP/1.1 200 OK\r\nX-A: 1\r\n  more\r\n${ok}`, "success"],
    "/101": [`HTTP/1.1 101 Switching Protocols\r\n\r\nHTTP/1.1 200 OK\r\n${ok}`, "failure"],
  };
  await withRawServer(
    Object.fromEntries(Object.entries(answers).map(([p, [a]]) => [p, a])),
    async (port) => {
      for (const [path, [, want]] of Object.entries(answers)) {
        const res = await get(port, path);
        assert.equal(res.result, want, `${path}: ${res.output}`);
      }
    },
  );
});

Deno.test("httpGetProbe() fails a body Go's client refuses: lengths that lie or conflict, other codings, broken chunks", async () => {
  const answers: Record<string, string> = {
    "/short": "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
    "/conflict": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
    "/not-a-number": "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nok",
    "/gzip": "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    "/chunk-short": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nff\r\nok",
    "/chunk-hex": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\nok\r\n0\r\n\r\n",
    "/chunk-crlf": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n",
    "/no-trailer": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n",
  };
  await withRawServer({
    ...answers,
    // HTTP/1.0 has no transfer codings: the body is what comes until the close.
    "/http10": "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok",
    "/same-twice": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
  }, async (port) => {
    for (const path of Object.keys(answers)) {
      assert.equal((await get(port, path)).result, "failure", path);
    }
    assert.deepEqual(await get(port, "/http10"), { result: "success", output: "2\r\nok" });
    assert.deepEqual(await get(port, "/same-twice"), { result: "success", output: "ok" });
  });
});

Deno.test("httpGetProbe() takes an empty Location as no redirect and fails a same-host redirect to another scheme", async () => {
  await withRawServer({
    "/empty": "HTTP/1.1 302 Found\r\nLocation: \r\nContent-Length: 5\r\n\r\nmoved",
    "/ftp": "HTTP/1.1 302 Found\r\nLocation: ftp://127.0.0.1/x\r\nContent-Length: 0\r\n\r\n",
  }, async (port) => {
    assert.deepEqual(await get(port, "/empty"), {
      result: "success",
      output: "Probe terminated redirects, Response body: moved",
    });
    const ftp = await get(port, "/ftp");
    assert.equal(ftp.result, "failure");
    assert.match(ftp.output, /unsupported protocol scheme "ftp"/);
  });
});

Deno.test("httpGetProbe() follows a redirect whose body is short or badly chunked, as Go's client drops it unread", async () => {
  await withRawServer({
    "/short": "HTTP/1.1 302 Found\r\nLocation: /ok\r\nContent-Length: 100\r\n\r\nabc",
    "/bad-chunk": "HTTP/1.1 307 Found\r\nLocation: /ok\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    "/ok": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
  }, async (port) => {
    assert.deepEqual(await get(port, "/short"), { result: "success", output: "ok" });
    assert.deepEqual(await get(port, "/bad-chunk"), { result: "success", output: "ok" });
  });
});

Deno.test("httpGetProbe() fails on a header value that would split the request", async () => {
  await withServer(async (port, seen) => {
    const res = await get(port, "/", {
      httpHeaders: [{ name: "X-Bad", value: "a\r\nX-Injected: 1" }],
    });
    assert.equal(res.result, "failure");
    assert.match(res.output, /invalid header field value/);
    assert.equal(seen.length, 0);
  });
});

Deno.test("httpGetProbe() fails with a deadline message when the server does not answer in time", async () => {
  await withServer(async (port) => {
    const res = await get(port, "/hang", {}, 0.2);
    assert.equal(res.result, "failure");
    assert.match(res.output, /context deadline exceeded \(Client\.Timeout exceeded/);
  });
});

Deno.test("httpGetProbe() fails with the dial error when nothing listens", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const res = await get(port, "/");
  assert.equal(res.result, "failure");
  assert.match(res.output, new RegExp(`^Get "http://127.0.0.1:${port}/": `));
});

Deno.test("httpGetProbe() probes HTTPS without verifying the certificate", async () => {
  await withServer(async (port, seen) => {
    const res = await httpGetProbe(
      { port, path: "/secure", scheme: "HTTPS" },
      container(),
      "127.0.0.1",
      { timeoutSeconds: 2, userAgent: UA, signal: never },
    );
    assert.deepEqual(res, { result: "success", output: "ok /secure" });
    assert.equal(seen.length, 1);
  }, true);
});

Deno.test("buildHttpProbeRequest() defaults host to the pod IP, brackets IPv6 and adds a leading slash", () => {
  const c = container([{ name: "http", containerPort: 8080 }]);
  const r = buildHttpProbeRequest({ port: "http", path: "healthz?x=1" }, c, "fd00::5", UA);
  assert.equal(r.url.href, "http://[fd00::5]:8080/healthz?x=1");
  assert.equal(r.host, "");
  const h = buildHttpProbeRequest(
    { port: 80, host: "10.0.0.9", httpHeaders: [{ name: "x-a-b", value: "1" }] },
    c,
    "fd00::5",
    UA,
  );
  assert.equal(h.url.href, "http://10.0.0.9/");
  assert.deepEqual(h.headers.get("X-A-B"), ["1"]);
});

Deno.test("resolveContainerPort() takes numbers, names and numeric strings, and rejects the rest", () => {
  const c = container([{ name: "metrics", containerPort: 9090 }]);
  assert.equal(resolveContainerPort(80, c), 80);
  assert.equal(resolveContainerPort("metrics", c), 9090);
  assert.equal(resolveContainerPort("8081", c), 8081);
  assert.throws(() => resolveContainerPort("web", c), /port web not found/);
  assert.throws(() => resolveContainerPort(70000, c), /invalid port number: 70000/);
});

Deno.test("tcpSocketProbe() succeeds when a port accepts and fails when it is closed", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const accepted = (async () => {
    const conn = await listener.accept();
    conn.close();
  })();
  const open = await tcpSocketProbe(
    { port: "svc" },
    container([{ name: "svc", containerPort: port }]),
    "127.0.0.1",
    {
      timeoutSeconds: 1,
      signal: never,
    },
  );
  assert.deepEqual(open, { result: "success", output: "" });
  await accepted;
  listener.close();
  const closed = await tcpSocketProbe({ port }, container(), "127.0.0.1", {
    timeoutSeconds: 1,
    signal: never,
  });
  assert.equal(closed.result, "failure");
  assert.match(closed.output, new RegExp(`^dial tcp 127.0.0.1:${port}: `));
});

Deno.test("grpcProbe() maps Health/Check answers: SERVING succeeds, anything else fails", async () => {
  const server = await startHealthServer();
  try {
    server.setStatus("", "SERVING");
    server.setStatus("db", "NOT_SERVING");
    const opts = { timeoutSeconds: 1, userAgent: UA, signal: never };
    assert.deepEqual(await grpcProbe({ port: server.port }, "127.0.0.1", opts), {
      result: "success",
      output: "service healthy",
    });
    assert.deepEqual(await grpcProbe({ port: server.port, service: "db" }, "127.0.0.1", opts), {
      result: "failure",
      output: `service unhealthy (responded with "NOT_SERVING")`,
    });
    const unknown = await grpcProbe({ port: server.port, service: "x" }, "127.0.0.1", opts);
    assert.equal(unknown.result, "failure");
    assert.match(unknown.output, /^error: health rpc probe failed: /);
    assert.ok(server.userAgents[0]!.startsWith(`${UA} `), String(server.userAgents[0]));
  } finally {
    await server.close();
  }
});

Deno.test("grpcProbe() fails with a connect timeout when nothing listens", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const res = await grpcProbe({ port }, "127.0.0.1", {
    timeoutSeconds: 0.3,
    userAgent: UA,
    signal: never,
  });
  assert.equal(res.result, "failure");
  assert.match(res.output, new RegExp(`^timeout: failed to connect service "127.0.0.1:${port}"`));
});

/** A RuntimeService whose execSync answers from `fn` and records each call. */
function execRuntime(
  fn: (cmd: string[], timeout: number) => Promise<{ exitCode: number; out?: string; err?: string }>,
) {
  const calls: { id: string; cmd: string[]; timeout: number }[] = [];
  const enc = new TextEncoder();
  const runtime = {
    async execSync(id: string, cmd: string[], timeout: number) {
      calls.push({ id, cmd, timeout });
      const r = await fn(cmd, timeout);
      return {
        exitCode: r.exitCode,
        stdout: enc.encode(r.out ?? ""),
        stderr: enc.encode(r.err ?? ""),
      };
    },
  } as unknown as RuntimeService;
  return { runtime, calls };
}

function target(runtime: RuntimeService, c: Partial<Container> = {}): ProbeTarget {
  return {
    podName: "default/p",
    container: { name: "app", ...c },
    containerId: "cid-1",
    podIP: "127.0.0.1",
    userAgent: UA,
    runtime,
  };
}

Deno.test("execProbe() succeeds on exit 0 and fails otherwise, with stdout and stderr as output", async () => {
  const { runtime, calls } = execRuntime((cmd) =>
    Promise.resolve(
      cmd[1] === "ok" ? { exitCode: 0, out: "fine\n" } : { exitCode: 2, out: "a", err: "b" },
    )
  );
  assert.deepEqual(await execProbe({ command: ["check", "ok"] }, target(runtime), 3, never), {
    result: "success",
    output: "fine\n",
  });
  assert.deepEqual(await execProbe({ command: ["check", "bad"] }, target(runtime), 3, never), {
    result: "failure",
    output: "ab",
  });
  assert.deepEqual(calls[0], { id: "cid-1", cmd: ["check", "ok"], timeout: 3 });
});

Deno.test("execProbe() counts a timeout as failure and another runtime error as unknown", async () => {
  const { runtime } = execRuntime((cmd) =>
    Promise.reject(
      cmd[0] === "slow"
        ? new CriError({
          call: "ExecSync",
          code: GrpcCode.DEADLINE_EXCEEDED,
          details: "timeout 1s exceeded",
        })
        : new CriError({
          call: "ExecSync",
          code: GrpcCode.NOT_FOUND,
          details: "no such container",
        }),
    )
  );
  assert.deepEqual(await execProbe({ command: ["slow", "x"] }, target(runtime), 1, never), {
    result: "failure",
    output: `command "slow x" timed out`,
  });
  const errored = await execProbe({ command: ["gone"] }, target(runtime), 1, never);
  assert.equal(errored.result, "unknown");
  assert.match(errored.output, /no such container/);
});

Deno.test("execProbe() expands $(VAR) from literal env values only", async () => {
  const { runtime, calls } = execRuntime(() => Promise.resolve({ exitCode: 0 }));
  const c: Partial<Container> = {
    env: [
      { name: "FILE", value: "/tmp/ready" },
      { name: "NODE", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
    ],
  };
  await execProbe(
    { command: ["test", "-f", "$(FILE)", "$(NODE)", "$$(FILE)"] },
    target(runtime, c),
    1,
    never,
  );
  assert.deepEqual(calls[0]!.cmd, ["test", "-f", "/tmp/ready", "$(NODE)", "$(FILE)"]);
});

Deno.test("runProbe() uses the probe's timeout (default 1s) and reports a probe without handler as unknown", async () => {
  const { runtime, calls } = execRuntime(() => Promise.resolve({ exitCode: 0 }));
  await runProbe({ exec: { command: ["true"] } }, target(runtime), never);
  await runProbe({ exec: { command: ["true"] }, timeoutSeconds: 5 }, target(runtime), never);
  assert.deepEqual(calls.map((c) => c.timeout), [1, 5]);
  const none = await runProbe({}, target(runtime), never);
  assert.deepEqual(none, { result: "unknown", output: "missing probe handler for default/p:app" });
});
