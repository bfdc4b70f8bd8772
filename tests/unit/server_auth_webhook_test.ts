import assert from "node:assert/strict";
import {
  buildAuthenticator,
  buildAuthorizer,
  createRequestFilter,
  type FilterInput,
} from "../../lib/server_auth/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { fakeApiserver, type SarSpec, testCA } from "./_server_auth_fakes.ts";

const NODE = "node-1";

const creds = (chain: Uint8Array[], headers: Record<string, string> = {}) => ({
  headers,
  peerCertificates: chain,
});

async function writeTemp(text: string): Promise<string> {
  const path = await Deno.makeTempFile({ suffix: ".pem" });
  await Deno.writeTextFile(path, text);
  return path;
}

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

/** Settles `p`, moving the fake clock whenever something waits on it (retry backoff). */
async function drive<T>(clock: FakeClock, p: Promise<T>): Promise<T> {
  let settled = false;
  p.then(() => (settled = true), () => (settled = true));
  while (!settled) {
    // Polls for the next timer while the loopback round trip runs.
    await new Promise((r) => setTimeout(r, 1));
    if (clock.pendingTimers > 0) clock.tick(10_000);
  }
  return await p;
}

Deno.test("filter: a SubjectAccessReview failing 5 times (upstream's retries) is a 500 with upstream's message", async () => {
  const clock = new FakeClock(Date.now());
  const api = fakeApiserver({ t: { user: { username: "u" } } }, () => "error");
  try {
    const authenticator = await buildAuthenticator({
      authentication: { webhook: { enabled: true } },
      client: api.client,
      clock,
    });
    const filter = createRequestFilter({
      authenticator,
      authorizer: buildAuthorizer({
        authorization: { mode: "Webhook" },
        client: api.client,
        clock,
      }),
      nodeName: NODE,
    });
    const r = await drive(clock, filter(input("/logs/", { authorization: "Bearer t" })));
    assert.equal(r.response?.status, 500);
    assert.equal(
      await r.response?.text(),
      "Authorization error (user=u, verb=get, resource=nodes, subresource=log)",
    );
    assert.equal(api.sars.length, 5);
    // Failures are not cached: the next request asks again.
    await drive(clock, filter(input("/logs/", { authorization: "Bearer t" })));
    assert.equal(api.sars.length, 10);

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

Deno.test("filter: transient apiserver failures are retried after 500 ms, then 750 ms", async () => {
  const clock = new FakeClock(Date.now());
  let calls = 0;
  const api = fakeApiserver(
    { t: { user: { username: "u" } } },
    () => (++calls <= 2 ? "error" : { allowed: true }),
  );
  try {
    const filter = createRequestFilter({
      authenticator: await buildAuthenticator({
        authentication: { webhook: { enabled: true } },
        client: api.client,
        clock,
      }),
      authorizer: buildAuthorizer({
        authorization: { mode: "Webhook" },
        client: api.client,
        clock,
      }),
      nodeName: NODE,
    });
    const pending = filter(input("/stats/summary", { authorization: "Bearer t" }));
    const until = async (cond: () => boolean) => {
      while (!cond()) await new Promise((r) => setTimeout(r, 1));
    };
    await until(() => clock.pendingTimers > 0);
    assert.equal(api.sars.length, 1);
    clock.tick(499);
    assert.equal(clock.pendingTimers, 1, "still waiting after 499 ms");
    clock.tick(1);
    await until(() => api.sars.length === 2 && clock.pendingTimers > 0);
    clock.tick(749);
    assert.equal(clock.pendingTimers, 1, "still waiting after 749 ms");
    clock.tick(1);
    assert.equal((await pending).identity?.name, "u");
    assert.equal(api.sars.length, 3);
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
