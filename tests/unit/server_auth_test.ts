import assert from "node:assert/strict";
import {
  EXT_KEY_USAGE,
  generateRsaKeyPair,
  issueCertificate,
  KEY_USAGE,
} from "../../lib/certs/mod.ts";
import {
  apiVerb,
  bearerToken,
  requestAttributes,
  resolveTlsOptions,
  subresourcesFor,
  websocketToken,
  X509Authenticator,
} from "../../lib/server_auth/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { testCA } from "./_server_auth_fakes.ts";

const NODE = "node-1";

Deno.test("verbs come from the method as upstream; HEAD and others get no verb", () => {
  assert.deepEqual(
    ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"].map(apiVerb),
    ["get", "create", "update", "patch", "delete", "", ""],
  );
});

Deno.test("paths map to upstream's nodes subresources (fine-grained first, then the coarse one)", () => {
  const cases: [string, string[]][] = [
    ["/stats/summary", ["stats"]],
    ["/stats", ["stats"]],
    ["/statsx", ["proxy"]],
    ["/metrics", ["metrics"]],
    ["/metrics/cadvisor", ["metrics"]],
    ["/metrics/resource", ["metrics"]],
    ["/logs/syslog", ["log"]],
    ["/checkpoint/ns/pod/c", ["checkpoint"]],
    ["/pods", ["pods", "proxy"]],
    ["/pods/", ["pods", "proxy"]],
    ["/runningpods/", ["pods", "proxy"]],
    ["/healthz", ["healthz", "proxy"]],
    ["/healthz/syncloop", ["healthz", "proxy"]],
    ["/configz", ["configz", "proxy"]],
    ["/statusz", ["statusz", "proxy"]],
    ["/containerLogs/ns/pod/c", ["proxy"]],
    ["/exec/ns/pod/c", ["proxy"]],
    ["/portForward/ns/pod", ["proxy"]],
    ["/ui", ["proxy"]],
    ["/ui/data", ["proxy"]],
    ["/", ["proxy"]],
  ];
  for (const [path, want] of cases) assert.deepEqual(subresourcesFor(path), want, path);
  assert.deepEqual(subresourcesFor("/pods", false), ["proxy"]);
  const attrs = requestAttributes({
    user: { name: "u", groups: [] },
    method: "POST",
    path: "/exec/ns/p/c",
    nodeName: NODE,
  });
  assert.deepEqual(attrs, [{
    user: { name: "u", groups: [] },
    verb: "create",
    resource: "nodes",
    name: NODE,
    subresource: "proxy",
    apiVersion: "v1",
    path: "/exec/ns/p/c",
  }]);
});

Deno.test("bearer tokens come from Authorization, WebSocket tokens only from an upgrade's subprotocol", () => {
  assert.equal(bearerToken(new Headers({ authorization: "Bearer abc" })), "abc");
  assert.equal(bearerToken({ authorization: "bearer abc" }), "abc");
  assert.equal(bearerToken({ authorization: "Basic abc" }), undefined);
  assert.equal(bearerToken({ authorization: "Bearer" }), undefined);
  assert.equal(bearerToken({}), undefined);
  const proto = "base64url.bearer.authorization.k8s.io." + btoa("tok?en").replaceAll("=", "")
    .replaceAll("/", "_").replaceAll("+", "-");
  const ws = {
    connection: "Upgrade",
    upgrade: "websocket",
    "sec-websocket-protocol": `v5.channel.k8s.io, ${proto}`,
  };
  assert.equal(websocketToken(ws), "tok?en");
  assert.equal(websocketToken({ ...ws, upgrade: "SPDY/3.1" }), undefined);
});

Deno.test("tlsMinVersion maps to node:tls, unknown names are refused, TLS 1.0/1.1 warn", () => {
  assert.deepEqual(resolveTlsOptions({}), { minVersion: "TLSv1.2", warnings: [] });
  assert.deepEqual(resolveTlsOptions({ tlsMinVersion: "VersionTLS13" }).minVersion, "TLSv1.3");
  assert.deepEqual(resolveTlsOptions({ tlsMinVersion: "VersionTLS12" }).minVersion, "TLSv1.2");
  const old = resolveTlsOptions({ tlsMinVersion: "VersionTLS10" });
  assert.equal(old.minVersion, "TLSv1.2");
  assert.match(old.warnings[0] ?? "", /^tlsMinVersion: VersionTLS10 is served as VersionTLS12/);
  assert.throws(
    () => resolveTlsOptions({ tlsMinVersion: "TLS1.3" }),
    /^Error: tlsMinVersion: unknown tls version "TLS1.3"/,
  );
});

Deno.test("tlsCipherSuites that Deno cannot enforce are refused, naming the setting", () => {
  assert.throws(
    () => resolveTlsOptions({ tlsCipherSuites: ["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"] }),
    /^Error: tlsCipherSuites: cannot be honoured: .*would still negotiate TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256/,
  );
  assert.throws(
    () => resolveTlsOptions({ tlsCipherSuites: ["TLS_NOPE"] }),
    /^Error: tlsCipherSuites: cipher suite TLS_NOPE not supported or doesn't exist/,
  );
  // A list that allows everything Deno negotiates for the key is honoured; what Deno lacks warns.
  const ok = resolveTlsOptions({
    tlsCipherSuites: [
      "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
      "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
      "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
      "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
      "TLS_AES_128_GCM_SHA256",
    ],
  });
  assert.equal(ok.minVersion, "TLSv1.2");
  assert.deepEqual(ok.warnings.length, 1);
  assert.match(ok.warnings[0]!, /^tlsCipherSuites: TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA not offered/);
  // An ECDSA key needs the ECDSA suites listed instead.
  assert.throws(
    () =>
      resolveTlsOptions({
        keyType: "ec",
        tlsCipherSuites: [
          "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
          "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
          "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        ],
      }),
    /tlsCipherSuites: cannot be honoured/,
  );
  // With a TLS 1.3 minimum the list is moot, as in Go.
  const moot = resolveTlsOptions({
    tlsMinVersion: "VersionTLS13",
    tlsCipherSuites: ["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"],
  });
  assert.equal(moot.minVersion, "TLSv1.3");
  assert.match(moot.warnings[0]!, /ignored with tlsMinVersion VersionTLS13/);
});

async function writeTemp(text: string): Promise<string> {
  const path = await Deno.makeTempFile({ suffix: ".pem" });
  await Deno.writeTextFile(path, text);
  return path;
}

const creds = (chain: Uint8Array[], headers: Record<string, string> = {}) => ({
  headers,
  peerCertificates: chain,
});

Deno.test("x509: CN is the user and O the groups; other CAs, expiry, server-only usage fail", async () => {
  const clock = new FakeClock(Date.now());
  const ca = await testCA("client-ca", clock.now());
  const other = await testCA("other-ca", clock.now());
  const caFile = await writeTemp(ca.pem);
  try {
    const x509 = await X509Authenticator.create({ clientCAFile: caFile, clock });
    const alice = await ca.issue({ commonName: "alice", organizations: ["devs", "ops"] });
    assert.deepEqual(await x509.authenticate(creds([alice.der])), {
      user: { name: "alice", groups: ["devs", "ops"] },
    });
    assert.deepEqual(await x509.authenticate(creds([])), {});

    const stranger = await other.issue({ commonName: "mallory" });
    const r1 = await x509.authenticate(creds([stranger.der]));
    assert.match(r1.error?.message ?? "", /signed by unknown authority/);
    // Sending the CA along does not make it trusted.
    const r2 = await x509.authenticate(creds([stranger.der, other.der]));
    assert.match(r2.error?.message ?? "", /signed by unknown authority/);

    const server = await ca.issue({ commonName: "srv", extKeyUsage: [EXT_KEY_USAGE.serverAuth] });
    assert.match(
      (await x509.authenticate(creds([server.der]))).error?.message ?? "",
      /incompatible key usage/,
    );
    const noUsage = await ca.issue({ commonName: "bob", extKeyUsage: [] });
    assert.deepEqual((await x509.authenticate(creds([noUsage.der]))).user?.name, "bob");
    const noCN = await ca.issue({ commonName: "" });
    assert.deepEqual(await x509.authenticate(creds([noCN.der])), {});

    const expired = await ca.issue({
      commonName: "old",
      notBefore: clock.now() - 10_000_000,
      notAfter: clock.now() - 5_000_000,
    });
    assert.match(
      (await x509.authenticate(creds([expired.der]))).error?.message ?? "",
      /expired or is not yet valid/,
    );
    // A certificate signed by a non-CA certificate of the bundle's CA is not accepted.
    const leafAsIssuer = await issueCertificate(
      {
        serial: 99,
        subject: { commonName: "sneaky" },
        notBefore: clock.now() - 1000,
        notAfter: clock.now() + 1_000_000,
        keyUsage: [KEY_USAGE.digitalSignature],
        isCA: false,
      },
      await generateRsaKeyPair(),
      { name: { commonName: "alice" }, keys: alice.keys },
    );
    assert.match(
      (await x509.authenticate(creds([leafAsIssuer, alice.der]))).error?.message ?? "",
      /unknown authority/,
    );
  } finally {
    await Deno.remove(caFile);
  }
});

Deno.test("x509: a chain through an intermediate CA the client sends is accepted", async () => {
  const now = Date.now();
  const root = await testCA("root", now);
  const mid = await root.issue({ commonName: "intermediate", isCA: true });
  const leafKeys = await generateRsaKeyPair();
  const leaf = await issueCertificate(
    {
      serial: 7,
      subject: { commonName: "carol", organizations: ["system:masters"] },
      notBefore: now - 1000,
      notAfter: now + 1_000_000,
      keyUsage: [KEY_USAGE.digitalSignature],
      extKeyUsage: [EXT_KEY_USAGE.clientAuth],
      isCA: false,
    },
    leafKeys,
    { name: { commonName: "intermediate" }, keys: mid.keys },
  );
  const caFile = await writeTemp(root.pem);
  try {
    const x509 = await X509Authenticator.create({ clientCAFile: caFile });
    assert.deepEqual(await x509.authenticate(creds([leaf, mid.der])), {
      user: { name: "carol", groups: ["system:masters"] },
    });
    assert.match(
      (await x509.authenticate(creds([leaf]))).error?.message ?? "",
      /unknown authority/,
    );
  } finally {
    await Deno.remove(caFile);
  }
});

Deno.test("x509: the client CA file is re-read when it changes, at most once a recheck period", async () => {
  const clock = new FakeClock(Date.now());
  const a = await testCA("ca-a", clock.now());
  const b = await testCA("ca-b", clock.now());
  const caFile = await writeTemp(a.pem);
  try {
    const x509 = await X509Authenticator.create({ clientCAFile: caFile, clock, recheckMs: 60_000 });
    const fromB = await b.issue({ commonName: "dave" });
    assert.ok((await x509.authenticate(creds([fromB.der]))).error);
    await Deno.writeTextFile(caFile, a.pem + b.pem);
    // Stat times may not move within the test's granularity; force one.
    await Deno.utime(caFile, new Date(), new Date(Date.now() + 5_000));
    assert.ok((await x509.authenticate(creds([fromB.der]))).error, "re-read before the period");
    clock.tick(60_000);
    assert.equal((await x509.authenticate(creds([fromB.der]))).user?.name, "dave");
    await assert.rejects(
      X509Authenticator.create({ clientCAFile: "/nonexistent/ca.pem" }),
      /unable to load client CA file \/nonexistent\/ca.pem/,
    );
  } finally {
    await Deno.remove(caFile);
  }
});
