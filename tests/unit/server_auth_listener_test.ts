// The secure listener over loopback with real TLS: curl and openssl s_client
// as clients, certificates from lib/certs.
import assert from "node:assert/strict";
import type { TLSSocket } from "node:tls";
import {
  generateSelfSignedCertKey,
  pemBlocks,
  ServingCertificate,
  toPem,
} from "../../lib/certs/mod.ts";
import {
  buildAuthenticator,
  buildAuthorizer,
  createRequestFilter,
  peerCertificates,
  resolveTlsOptions,
  type SecureListener,
  type SecureRoutes,
  startSecureListener,
  type UserInfo,
} from "../../lib/server_auth/mod.ts";
import { fakeApiserver, testCA } from "./_server_auth_fakes.ts";

const dec = new TextDecoder();

async function run(
  cmd: string,
  args: string[],
  stdin = "",
): Promise<{ code: number; out: string; err: string }> {
  const child = new Deno.Command(cmd, { args, stdin: "piped", stdout: "piped", stderr: "piped" })
    .spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(stdin));
  await w.close();
  const r = await child.output();
  return { code: r.code, out: dec.decode(r.stdout), err: dec.decode(r.stderr) };
}

interface Fixture {
  dir: string;
  listener: SecureListener;
  serving: ServingCertificate;
  servingCA: string;
  url: string;
  files: Record<string, string>;
  close(): Promise<void>;
}

const routes: SecureRoutes = {
  onRequest(req, res, identity: UserInfo) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ path: req.url, method: req.method, identity }));
  },
  onUpgrade(_req, socket, _head, identity) {
    socket.write(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n" +
        `hello ${identity.name}\n`,
    );
    socket.end();
  },
};

async function start(opts: { tlsMinVersion?: string; webhook?: boolean } = {}): Promise<Fixture> {
  const dir = await Deno.makeTempDir();
  const serving = await generateSelfSignedCertKey({ host: "localhost", ips: ["127.0.0.1"] });
  await Deno.writeTextFile(`${dir}/kubelet.crt`, serving.cert);
  await Deno.writeTextFile(`${dir}/kubelet.key`, serving.key);
  const servingCA = toPem("CERTIFICATE", pemBlocks(serving.cert)[1]!);
  await Deno.writeTextFile(`${dir}/serving-ca.pem`, servingCA);

  const ca = await testCA("client-ca");
  const other = await testCA("other-ca");
  await Deno.writeTextFile(`${dir}/client-ca.pem`, ca.pem);
  const alice = await ca.issue({ commonName: "alice", organizations: ["devs"] });
  const mallory = await other.issue({ commonName: "mallory" });
  for (const [name, c] of [["alice", alice], ["mallory", mallory]] as const) {
    await Deno.writeTextFile(`${dir}/${name}.crt`, c.pem);
    await Deno.writeTextFile(`${dir}/${name}.key`, c.keyPem);
  }

  const api = opts.webhook
    ? fakeApiserver({ good: { user: { username: "sa:good" } } }, (s) => ({
      allowed: s.user !== "sa:good" || s.resourceAttributes.subresource === "stats",
    }))
    : undefined;
  const servingCert = await ServingCertificate.load({
    certFile: `${dir}/kubelet.crt`,
    keyFile: `${dir}/kubelet.key`,
  });
  const authenticator = await buildAuthenticator({
    authentication: {
      x509: { clientCAFile: `${dir}/client-ca.pem` },
      webhook: { enabled: opts.webhook ?? false },
      anonymous: { enabled: false },
    },
    ...(api ? { client: api.client } : {}),
  });
  const authorizer = buildAuthorizer({
    authorization: { mode: api ? "Webhook" : "AlwaysAllow" },
    ...(api ? { client: api.client } : {}),
  });
  const listener = await startSecureListener({
    address: "127.0.0.1",
    port: 0,
    servingCert,
    tls: resolveTlsOptions(opts.tlsMinVersion ? { tlsMinVersion: opts.tlsMinVersion } : {}),
    filter: createRequestFilter({ authenticator, authorizer, nodeName: "node-1" }),
    routes,
  });
  return {
    dir,
    listener,
    serving: servingCert,
    servingCA,
    url: `https://127.0.0.1:${listener.port}`,
    files: {
      ca: `${dir}/serving-ca.pem`,
      aliceCrt: `${dir}/alice.crt`,
      aliceKey: `${dir}/alice.key`,
      malloryCrt: `${dir}/mallory.crt`,
      malloryKey: `${dir}/mallory.key`,
    },
    async close() {
      await listener.close();
      servingCert.close();
      await api?.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** curl, verifying the server against the self-signed serving CA. */
function curl(f: Fixture, path: string, extra: string[] = []) {
  return run("curl", [
    "-sS",
    "--cacert",
    f.files.ca!,
    "-w",
    "\n%{http_code}",
    ...extra,
    f.url + path,
  ]);
}

Deno.test("secure listener: client certificate of the CA passes; another CA's and none are 401", async () => {
  const f = await start();
  try {
    const ok = await curl(f, "/stats/summary?x=1", [
      "--cert",
      f.files.aliceCrt!,
      "--key",
      f.files.aliceKey!,
    ]);
    assert.equal(ok.code, 0, ok.err);
    const [body, code] = ok.out.split("\n");
    assert.equal(code, "200");
    assert.deepEqual(JSON.parse(body!), {
      path: "/stats/summary?x=1",
      method: "GET",
      identity: { name: "alice", groups: ["devs", "system:authenticated"] },
    });

    const stranger = await curl(f, "/pods", [
      "--cert",
      f.files.malloryCrt!,
      "--key",
      f.files.malloryKey!,
    ]);
    assert.equal(stranger.out, "Unauthorized\n401");
    const anonymous = await curl(f, "/pods");
    assert.equal(anonymous.out, "Unauthorized\n401");
    const head = await curl(f, "/pods", ["-i"]);
    assert.match(head.out, /content-type: text\/plain; charset=utf-8/i);
  } finally {
    await f.close();
  }
});

Deno.test("secure listener: upgrade requests pass the same gate", async () => {
  const f = await start();
  try {
    const upgrade = ["-H", "Connection: Upgrade", "-H", "Upgrade: echo", "--http1.1"];
    const ok = await curl(f, "/exec/ns/pod/c", [
      ...upgrade,
      "--cert",
      f.files.aliceCrt!,
      "--key",
      f.files.aliceKey!,
    ]);
    assert.equal(ok.out, "hello alice\n\n101");
    const no = await curl(f, "/exec/ns/pod/c", [
      ...upgrade,
      "--cert",
      f.files.malloryCrt!,
      "--key",
      f.files.malloryKey!,
    ]);
    assert.equal(no.out, "Unauthorized\n401");
  } finally {
    await f.close();
  }
});

Deno.test("secure listener: bearer tokens through TokenReview, 403 from SubjectAccessReview", async () => {
  const f = await start({ webhook: true });
  try {
    const token = ["-H", "Authorization: Bearer good"];
    assert.match((await curl(f, "/stats/summary", token)).out, /"name":"sa:good"[\s\S]*\n200$/);
    assert.equal(
      (await curl(f, "/logs/", token)).out,
      "Forbidden (user=sa:good, verb=get, resource=nodes, subresource(s)=[log])\n\n403",
    );
    assert.equal(
      (await curl(f, "/stats/summary", ["-H", "Authorization: Bearer nope"])).out,
      "Unauthorized\n401",
    );
  } finally {
    await f.close();
  }
});

async function sClient(f: Fixture, version: "-tls1_2" | "-tls1_3") {
  return await run("openssl", [
    "s_client",
    "-connect",
    `127.0.0.1:${f.listener.port}`,
    "-servername",
    "localhost",
    version,
    "-CAfile",
    f.files.ca!,
  ], "");
}

Deno.test("secure listener: tlsMinVersion VersionTLS13 refuses TLS 1.2, before and after a certificate swap", async () => {
  const f = await start({ tlsMinVersion: "VersionTLS13" });
  try {
    const v13 = await sClient(f, "-tls1_3");
    assert.match(v13.out, /Protocol\s*: TLSv1\.3|New, TLSv1\.3/);
    const v12 = await sClient(f, "-tls1_2");
    assert.match(v12.out + v12.err, /alert protocol version|no protocols available|wrong version/);

    const next = await generateSelfSignedCertKey({ host: "rotated.example", ips: ["127.0.0.1"] });
    await Deno.writeTextFile(`${f.dir}/kubelet.key`, next.key);
    await Deno.writeTextFile(`${f.dir}/kubelet.crt`, next.cert);
    assert.equal(await f.serving.check(), true);
    const after = await run("openssl", [
      "s_client",
      "-connect",
      `127.0.0.1:${f.listener.port}`,
      "-tls1_3",
    ]);
    assert.match(after.out, /subject=CN = rotated\.example@\d+/);
    // The swapped context still asks for client certificates.
    const alice = await run("curl", [
      "-sSk",
      "--cert",
      f.files.aliceCrt!,
      "--key",
      f.files.aliceKey!,
      `${f.url}/pods`,
    ]);
    assert.match(alice.out, /"name":"alice"/);
    const after12 = await sClient(f, "-tls1_2");
    assert.match(
      after12.out + after12.err,
      /alert protocol version|no protocols available|wrong version/,
    );
  } finally {
    await f.close();
  }
});

Deno.test("peerCertificates() hands the filter the client's chain, leaf first", async () => {
  const f = await start();
  const seen: Uint8Array[][] = [];
  const server = f.listener.server;
  const probe = (req: { socket: unknown }) => seen.push(peerCertificates(req.socket as TLSSocket));
  server.prependListener("request", probe);
  try {
    const chain = `${f.dir}/alice-chain.crt`;
    const ca = await Deno.readTextFile(`${f.dir}/client-ca.pem`);
    await Deno.writeTextFile(chain, (await Deno.readTextFile(f.files.aliceCrt!)) + ca);
    await curl(f, "/pods", ["--cert", chain, "--key", f.files.aliceKey!]);
    await curl(f, "/pods");
    const aliceDer = pemBlocks(await Deno.readTextFile(f.files.aliceCrt!))[0]!;
    const caDer = pemBlocks(ca)[0]!;
    assert.deepEqual(seen, [[aliceDer, caDer], []]);
  } finally {
    server.off("request", probe);
    await f.close();
  }
});

/** Sends `request` as it is over TLS and returns what comes back, up to the close. */
async function rawTls(f: Fixture, request: string, client = false): Promise<string> {
  const conn = await Deno.connectTls({
    hostname: "127.0.0.1",
    port: f.listener.port,
    caCerts: [f.servingCA],
    ...(client
      ? {
        cert: await Deno.readTextFile(f.files.aliceCrt!),
        key: await Deno.readTextFile(f.files.aliceKey!),
      }
      : {}),
  });
  await conn.write(new TextEncoder().encode(request));
  let out = "";
  const buf = new Uint8Array(4096);
  try {
    for (let n; (n = await conn.read(buf)) !== null;) out += dec.decode(buf.subarray(0, n));
  } catch { /* a close without close_notify ends it too */ }
  conn.close();
  return out;
}

Deno.test("secure listener: a request that does not parse gets Go's 400, flushed before the close", async () => {
  const f = await start();
  try {
    for (
      const head of [
        "Q`x /pods HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /pods HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "GET /pods HTTP/1.1\r\nHost: a\r\nA{b}: c\r\n\r\n",
      ]
    ) {
      const answer = await rawTls(f, head);
      assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/, head);
      assert.match(answer, /\r\n\r\n400 Bad Request$/, head);
    }
  } finally {
    await f.close();
  }
});

Deno.test("secure listener: CONNECT is gated like any request, then refused with 405", async () => {
  const f = await start();
  try {
    const request = "CONNECT /pods HTTP/1.1\r\nHost: a\r\n\r\n";
    assert.match(await rawTls(f, request), /^HTTP\/1\.1 401 /);
    const allowed = await rawTls(f, request, true);
    assert.match(allowed, /^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    assert.match(allowed, /\r\n\r\nMethod Not Allowed$/);
  } finally {
    await f.close();
  }
});
