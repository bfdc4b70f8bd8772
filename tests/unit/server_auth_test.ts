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
  buildAuthenticator,
  buildAuthorizer,
  createRequestFilter,
  type FilterInput,
  requestAttributes,
  resolveTlsOptions,
  subresourcesFor,
  websocketToken,
  X509Authenticator,
} from "../../lib/server_auth/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { fakeApiserver, type SarSpec, testCA } from "./_server_auth_fakes.ts";

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

function input(path: string, headers: Record<string, string> = {}, method = "GET"): FilterInput {
  return { method, path, headers, peerCertificates: [] };
}

Deno.test("authn: TokenReview answers are cached for cacheTTL, successes and rejections, not errors", async () => {
  const clock = new FakeClock(Date.now());
  const api = fakeApiserver({
    good: { user: { username: "sa:good", groups: ["g1"], uid: "u1" } },
    bad: { rejected: true },
    broken: { rejected: true, error: "token expired" },
    down: { httpStatus: 403 },
  }, () => ({ allowed: true }));
  try {
    const authn = await buildAuthenticator({
      authentication: {
        webhook: { enabled: true, cacheTTL: "2m0s" },
        anonymous: { enabled: true },
      },
      client: api.client,
      clock,
    });
    const bearer = (t: string) => creds([], { authorization: `Bearer ${t}` });
    const good = await authn.authenticate(bearer("good"));
    assert.deepEqual(good, {
      user: { name: "sa:good", uid: "u1", groups: ["g1", "system:authenticated"] },
    });
    // Concurrent and later requests with one token share one review.
    await Promise.all([1, 2, 3].map(() => authn.authenticate(bearer("good"))));
    assert.equal(api.tokenReviews.length, 1);

    // A rejection without an error is cached too; it is never anonymous.
    const bad = await authn.authenticate(bearer("bad"));
    assert.equal(bad.user, undefined);
    assert.equal(bad.error?.message, "invalid bearer token");
    await authn.authenticate(bearer("bad"));
    assert.deepEqual(api.tokenReviews, ["good", "bad"]);

    // status.error and HTTP failures are errors: not cached.
    assert.equal((await authn.authenticate(bearer("broken"))).error?.message, "token expired");
    await authn.authenticate(bearer("broken"));
    assert.ok((await authn.authenticate(bearer("down"))).error);
    await authn.authenticate(bearer("down"));
    assert.deepEqual(api.tokenReviews.slice(2), ["broken", "broken", "down", "down"]);

    clock.tick(119_000);
    await authn.authenticate(bearer("good"));
    assert.equal(api.tokenReviews.filter((t) => t === "good").length, 1);
    clock.tick(1_000);
    await authn.authenticate(bearer("good"));
    await authn.authenticate(bearer("bad"));
    assert.deepEqual(api.tokenReviews.slice(6), ["good", "bad"]);
    assert.equal(authn.tokenReviews, 8);

    // No credentials: anonymous when enabled.
    assert.deepEqual(await authn.authenticate(creds([])), {
      user: { name: "system:anonymous", groups: ["system:unauthenticated"] },
    });
  } finally {
    await api.close();
  }
});

Deno.test("authn: configuration errors use upstream's words", async () => {
  await assert.rejects(
    buildAuthenticator({ authentication: { webhook: { enabled: true } } }),
    /no client provided, cannot use webhook authentication/,
  );
  await assert.rejects(
    buildAuthenticator({ authentication: { webhook: { enabled: false } } }),
    /no authentication method configured/,
  );
  assert.throws(
    () => buildAuthorizer({ authorization: { mode: "Webhook" } }),
    /no client provided, cannot use webhook authorization/,
  );
  assert.throws(() => buildAuthorizer({ authorization: {} }), /no authorization mode specified/);
  assert.throws(
    () => buildAuthorizer({ authorization: { mode: "RBAC" } }),
    /unknown authorization mode RBAC/,
  );
});

Deno.test("filter: 401 body, 403 with upstream's message, SAR cached per TTL, ≤1 review per (user, verb, resource)", async () => {
  const clock = new FakeClock(Date.now());
  const policy = (s: SarSpec) =>
    s.user === "sa:reader" && s.resourceAttributes.verb === "get" &&
      ["stats", "metrics", "proxy"].includes(s.resourceAttributes.subresource)
      ? { allowed: true }
      : { allowed: false, reason: "no RBAC" };
  const api = fakeApiserver({
    reader: { user: { username: "sa:reader" } },
    nobody: { user: { username: "sa:nobody", groups: ["g"] } },
  }, policy);
  try {
    const authenticator = await buildAuthenticator({
      authentication: { webhook: { enabled: true }, anonymous: { enabled: false } },
      client: api.client,
      clock,
    });
    const authorizer = buildAuthorizer({
      authorization: {
        mode: "Webhook",
        webhook: { cacheAuthorizedTTL: "5m0s", cacheUnauthorizedTTL: "30s" },
      },
      client: api.client,
      clock,
    });
    const filter = createRequestFilter({ authenticator, authorizer, nodeName: NODE });

    const anon = await filter(input("/stats/summary"));
    assert.equal(anon.response?.status, 401);
    assert.equal(await anon.response?.text(), "Unauthorized");
    assert.equal(anon.response?.headers.get("content-type"), "text/plain; charset=utf-8");

    const rejected = await filter(input("/pods", { authorization: "Bearer who" }));
    assert.equal(rejected.response?.status, 401);

    const reader = { authorization: "Bearer reader" };
    for (let i = 0; i < 5; i++) {
      const ok = await filter(input("/stats/summary", reader));
      assert.equal(ok.identity?.name, "sa:reader");
    }
    const ok2 = await filter(input("/metrics/cadvisor", reader));
    assert.deepEqual(ok2.identity?.groups, ["system:authenticated"]);
    assert.equal(api.sars.length, 2);
    assert.deepEqual(api.sars[0], {
      resourceAttributes: {
        verb: "get",
        version: "v1",
        resource: "nodes",
        subresource: "stats",
        name: NODE,
      },
      user: "sa:reader",
      groups: ["system:authenticated"],
    });

    // /pods asks pods first, then proxy: the second allows.
    assert.equal((await filter(input("/pods", reader))).identity?.name, "sa:reader");
    assert.deepEqual(api.sars.slice(2).map((s) => s.resourceAttributes.subresource), [
      "pods",
      "proxy",
    ]);

    const nobody = { authorization: "Bearer nobody" };
    const denied = await filter(input("/pods", nobody));
    assert.equal(denied.response?.status, 403);
    assert.equal(
      await denied.response?.text(),
      "Forbidden (user=sa:nobody, verb=get, resource=nodes, subresource(s)=[pods proxy])\n",
    );
    const deniedExec = await filter(input("/exec/ns/p/c", reader, "POST"));
    assert.equal(
      await deniedExec.response?.text(),
      "Forbidden (user=sa:reader, verb=create, resource=nodes, subresource(s)=[proxy])\n",
    );
    const before = api.sars.length;
    for (let i = 0; i < 3; i++) {
      await filter(input("/pods", nobody));
      await filter(input("/exec/ns/p/c", reader, "POST"));
      await filter(input("/stats/summary", reader));
    }
    assert.equal(api.sars.length, before, "every answer came from the cache");

    // Denials expire after 30 s, allowances after 5 min.
    clock.tick(30_000);
    await filter(input("/pods", nobody));
    await filter(input("/stats/summary", reader));
    assert.deepEqual(
      api.sars.slice(before).map((s) => `${s.user} ${s.resourceAttributes.subresource}`),
      ["sa:nobody pods", "sa:nobody proxy"],
    );
    clock.tick(270_000);
    await filter(input("/stats/summary", reader));
    assert.equal(api.sars.at(-1)?.resourceAttributes.subresource, "stats");
    assert.equal(
      api.tokenReviews.filter((t) => t === "reader").length,
      2,
      "token TTL 2m passed too",
    );
    assert.equal((authorizer as { reviews: number }).reviews, api.sars.length);
  } finally {
    await api.close();
  }
});

Deno.test("filter: a failing SubjectAccessReview is a 500 with upstream's message; AlwaysAllow allows", async () => {
  const api = fakeApiserver({ t: { user: { username: "u" } } }, () => "error");
  try {
    const authenticator = await buildAuthenticator({
      authentication: { webhook: { enabled: true } },
      client: api.client,
    });
    const filter = createRequestFilter({
      authenticator,
      authorizer: buildAuthorizer({ authorization: { mode: "Webhook" }, client: api.client }),
      nodeName: NODE,
    });
    const r = await filter(input("/logs/", { authorization: "Bearer t" }));
    assert.equal(r.response?.status, 500);
    assert.equal(
      await r.response?.text(),
      "Authorization error (user=u, verb=get, resource=nodes, subresource=log)",
    );
    const open = createRequestFilter({
      authenticator,
      authorizer: buildAuthorizer({ authorization: { mode: "AlwaysAllow" } }),
      nodeName: NODE,
    });
    assert.equal(
      (await open(input("/exec/a/b/c", { authorization: "Bearer t" }))).identity?.name,
      "u",
    );
  } finally {
    await api.close();
  }
});

Deno.test("filter: a client certificate of another CA is 401 even with anonymous enabled", async () => {
  const ca = await testCA("client-ca");
  const other = await testCA("other");
  const caFile = await writeTemp(ca.pem);
  try {
    const authenticator = await buildAuthenticator({
      authentication: { x509: { clientCAFile: caFile }, anonymous: { enabled: true } },
    });
    const filter = createRequestFilter({
      authenticator,
      authorizer: buildAuthorizer({ authorization: { mode: "AlwaysAllow" } }),
      nodeName: NODE,
    });
    const stranger = await other.issue({ commonName: "mallory" });
    const r = await filter({ ...input("/pods"), peerCertificates: [stranger.der] });
    assert.equal(r.response?.status, 401);
    const friend = await ca.issue({
      commonName: "apiserver-kubelet-client",
      organizations: ["system:masters"],
    });
    const ok = await filter({ ...input("/pods"), peerCertificates: [friend.der] });
    assert.deepEqual(ok.identity, {
      name: "apiserver-kubelet-client",
      groups: ["system:masters", "system:authenticated"],
    });
    assert.equal((await filter(input("/pods"))).identity?.name, "system:anonymous");
  } finally {
    await Deno.remove(caFile);
  }
});

Deno.test("filter: 50 concurrent requests of one user make one TokenReview and one SubjectAccessReview", async () => {
  const api = fakeApiserver({ t: { user: { username: "u" } } }, () => ({ allowed: true }));
  try {
    const filter = createRequestFilter({
      authenticator: await buildAuthenticator({
        authentication: { webhook: { enabled: true } },
        client: api.client,
      }),
      authorizer: buildAuthorizer({ authorization: { mode: "Webhook" }, client: api.client }),
      nodeName: NODE,
    });
    const results = await Promise.all(
      Array.from(
        { length: 50 },
        () => filter(input("/stats/summary", { authorization: "Bearer t" })),
      ),
    );
    assert.ok(results.every((r) => r.identity?.name === "u"));
    assert.equal(api.tokenReviews.length, 1);
    assert.equal(api.sars.length, 1);
  } finally {
    await api.close();
  }
});
