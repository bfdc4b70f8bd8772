import assert from "node:assert/strict";
import type { Service, TokenRequest } from "../../lib/api/cluster_types.ts";
import { ApiError, type KubeClient, type ObjectList } from "../../lib/kubeapi/types.ts";
import {
  ApiPodObjects,
  type CachedToken,
  isObjectNotFound,
  serviceEnvMap,
  serviceEnvVars,
  TokenManager,
  tokenRequiresRefresh,
} from "../../lib/kubeobjects/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";

const notFound = (path: string) => new ApiError(`${path} not found`, 404, "NotFound");

/** Serves objects by path and counts calls; tokens expire `ttl` seconds after issue. */
class FakeClient implements KubeClient {
  objects = new Map<string, unknown>();
  gets: string[] = [];
  creates: { path: string; body: TokenRequest }[] = [];
  failCreate = false;
  constructor(readonly clock: FakeClock) {}
  get<T>(path: string): Promise<T> {
    this.gets.push(path);
    const o = this.objects.get(path);
    return o === undefined ? Promise.reject(notFound(path)) : Promise.resolve(o as T);
  }
  list<T>(path: string): Promise<ObjectList<T>> {
    this.gets.push(path);
    return Promise.resolve({ items: (this.objects.get(path) ?? []) as T[], metadata: {} });
  }
  create<T>(path: string, body: unknown): Promise<T> {
    const req = body as TokenRequest;
    this.creates.push({ path, body: req });
    if (this.failCreate) return Promise.reject(new Error("connection refused"));
    const exp = this.clock.now() + (req.spec.expirationSeconds ?? 3600) * 1000;
    return Promise.resolve({
      ...req,
      status: {
        token: `tok-${this.creates.length}`,
        expirationTimestamp: new Date(exp).toISOString(),
      },
    } as T);
  }
  update<T>(): Promise<T> {
    return Promise.reject(new Error("unused"));
  }
  patch<T>(): Promise<T> {
    return Promise.reject(new Error("unused"));
  }
  delete(): Promise<void> {
    return Promise.reject(new Error("unused"));
  }
  watch(): Promise<void> {
    return Promise.reject(new Error("unused"));
  }
  close(): void {}
}

const CM_PATH = "/api/v1/namespaces/ns/configmaps/settings";

Deno.test("ApiPodObjects.getConfigMap() serves from cache within the TTL and re-reads after it", async () => {
  const clock = new FakeClock();
  const client = new FakeClient(clock);
  client.objects.set(CM_PATH, { metadata: { name: "settings" }, data: { a: "1" } });
  const objects = new ApiPodObjects({ client, clock, ttlMs: 60_000 });
  assert.deepEqual((await objects.getConfigMap("ns", "settings", { podUID: "p1" })).data, {
    a: "1",
  });
  clock.tick(59_000);
  await objects.getConfigMap("ns", "settings", { podUID: "p1" });
  assert.equal(client.gets.length, 1);
  client.objects.set(CM_PATH, { metadata: { name: "settings" }, data: { a: "2" } });
  clock.tick(2000);
  assert.deepEqual((await objects.getConfigMap("ns", "settings", { podUID: "p1" })).data, {
    a: "2",
  });
  assert.equal(client.gets.length, 2);
});

Deno.test("ApiPodObjects reads fresh for a pod's first reference and shares concurrent reads", async () => {
  const clock = new FakeClock();
  const client = new FakeClient(clock);
  client.objects.set(CM_PATH, { metadata: { name: "settings" } });
  const objects = new ApiPodObjects({ client, clock });
  await Promise.all([
    objects.getConfigMap("ns", "settings", { podUID: "p1" }),
    objects.getConfigMap("ns", "settings", { podUID: "p1" }),
  ]);
  assert.equal(client.gets.length, 1);
  await objects.getConfigMap("ns", "settings", { podUID: "p2" });
  assert.equal(client.gets.length, 2);
  await objects.getConfigMap("ns", "settings", { podUID: "p1" });
  assert.equal(client.gets.length, 2);
});

Deno.test("ApiPodObjects caches NotFound with upstream's message and forgets a gone pod's entries", async () => {
  const clock = new FakeClock();
  const client = new FakeClient(clock);
  const objects = new ApiPodObjects({ client, clock });
  await assert.rejects(objects.getSecret("ns", "creds", { podUID: "p1" }), (err: unknown) => {
    assert.ok(isObjectNotFound(err));
    assert.equal((err as Error).message, 'secret "creds" not found');
    return true;
  });
  client.objects.set("/api/v1/namespaces/ns/secrets/creds", { metadata: { name: "creds" } });
  await assert.rejects(objects.getSecret("ns", "creds", { podUID: "p1" }), /not found/);
  assert.equal(client.gets.length, 1);
  objects.forgetPod("p1");
  await objects.getSecret("ns", "creds", { podUID: "p1" });
  assert.equal(client.gets.length, 2);
});

Deno.test("ApiPodObjects never reads an immutable object again", async () => {
  const clock = new FakeClock();
  const client = new FakeClient(clock);
  client.objects.set(CM_PATH, { metadata: { name: "settings" }, immutable: true });
  const objects = new ApiPodObjects({ client, clock });
  await objects.getConfigMap("ns", "settings", { podUID: "p1" });
  clock.tick(10 * 60_000);
  await objects.getConfigMap("ns", "settings", { podUID: "p2" });
  assert.equal(client.gets.length, 1);
});

Deno.test("ApiPodObjects names the object when the apiserver fails", async () => {
  const clock = new FakeClock();
  const client = new FakeClient(clock);
  client.get = () => Promise.reject(new ApiError("forbidden", 403, "Forbidden"));
  const objects = new ApiPodObjects({ client, clock });
  await assert.rejects(
    objects.getConfigMap("ns", "settings"),
    /failed to get configmap "ns\/settings"/,
  );
});

function cached(expSeconds: number, issuedAt: number): CachedToken {
  return {
    token: "t",
    expirationSeconds: expSeconds,
    expirationTimestamp: new Date(issuedAt + expSeconds * 1000).toISOString(),
    podUID: "p",
  };
}

Deno.test("tokenRequiresRefresh() refreshes after 80% of the TTL or 24 h, minus the jitter", () => {
  const t0 = Date.UTC(2026, 0, 1);
  const hour = cached(3600, t0);
  assert.equal(tokenRequiresRefresh(hour, t0 + 2880_000), false); // exactly 80%
  assert.equal(tokenRequiresRefresh(hour, t0 + 2880_001), true);
  assert.equal(tokenRequiresRefresh(hour, t0 + 2875_000, 10_000), true);
  const week = cached(7 * 24 * 3600, t0);
  assert.equal(tokenRequiresRefresh(week, t0 + 24 * 3600_000), false);
  assert.equal(tokenRequiresRefresh(week, t0 + 24 * 3600_000 + 1), true);
});

Deno.test("TokenManager.get() caches a bound token and requests a new one at 80% of its TTL", async () => {
  const clock = new FakeClock();
  const client = new FakeClient(clock);
  const tokens = new TokenManager({ client, clock, random: () => 0 });
  const req = { audiences: [], expirationSeconds: 3600, boundPod: { name: "web", uid: "u1" } };
  assert.equal((await tokens.get("ns", "default", req)).token, "tok-1");
  assert.equal(client.creates[0]!.path, "/api/v1/namespaces/ns/serviceaccounts/default/token");
  assert.deepEqual(client.creates[0]!.body.spec, {
    audiences: [],
    expirationSeconds: 3600,
    boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "web", uid: "u1" },
  });
  clock.tick(2880_000);
  assert.equal((await tokens.get("ns", "default", req)).token, "tok-1");
  clock.tick(1000);
  assert.equal((await tokens.get("ns", "default", req)).token, "tok-2");
  // Other audiences are another token.
  await tokens.get("ns", "default", { ...req, audiences: ["vault"] });
  assert.equal(client.creates.length, 3);
  tokens.forgetPod("u1");
  assert.equal(tokens.size, 0);
});

Deno.test("TokenManager.get() serves the cached token while a refresh fails, until it expires", async () => {
  const clock = new FakeClock();
  const client = new FakeClient(clock);
  const tokens = new TokenManager({ client, clock, random: () => 0 });
  const req = { audiences: [], expirationSeconds: 600, boundPod: { name: "web", uid: "u1" } };
  await tokens.get("ns", "sa", req);
  client.failCreate = true;
  clock.tick(590_000);
  assert.equal((await tokens.get("ns", "sa", req)).token, "tok-1");
  clock.tick(11_000);
  await assert.rejects(
    tokens.get("ns", "sa", req),
    /failed to fetch a token for service account "ns\/sa": connection refused/,
  );
});

const svc = (
  ns: string,
  name: string,
  clusterIP: string,
  ports: NonNullable<Service["spec"]["ports"]>,
): Service => ({
  metadata: { namespace: ns, name },
  spec: { clusterIP, ports },
});

Deno.test("serviceEnvVars() writes upstream's service and docker-link variables", () => {
  const env = serviceEnvVars([
    svc("ns", "my-db", "10.0.0.5", [{ name: "sql", port: 5432 }, {
      name: "metrics",
      port: 9187,
      protocol: "UDP",
    }]),
    svc("ns", "headless", "None", [{ port: 80 }]),
  ]);
  assert.deepEqual(env, [
    { name: "MY_DB_SERVICE_HOST", value: "10.0.0.5" },
    { name: "MY_DB_SERVICE_PORT", value: "5432" },
    { name: "MY_DB_SERVICE_PORT_SQL", value: "5432" },
    { name: "MY_DB_SERVICE_PORT_METRICS", value: "9187" },
    { name: "MY_DB_PORT", value: "tcp://10.0.0.5:5432" },
    { name: "MY_DB_PORT_5432_TCP", value: "tcp://10.0.0.5:5432" },
    { name: "MY_DB_PORT_5432_TCP_PROTO", value: "tcp" },
    { name: "MY_DB_PORT_5432_TCP_PORT", value: "5432" },
    { name: "MY_DB_PORT_5432_TCP_ADDR", value: "10.0.0.5" },
    { name: "MY_DB_PORT_9187_UDP", value: "udp://10.0.0.5:9187" },
    { name: "MY_DB_PORT_9187_UDP_PROTO", value: "udp" },
    { name: "MY_DB_PORT_9187_UDP_PORT", value: "9187" },
    { name: "MY_DB_PORT_9187_UDP_ADDR", value: "10.0.0.5" },
  ]);
  assert.equal(
    serviceEnvVars([svc("ns", "v6", "fd00::1", [{ port: 80 }])])[2]!.value,
    "tcp://[fd00::1]:80",
  );
});

Deno.test("serviceEnvMap() always adds the kubernetes service and the namespace's only with service links", async () => {
  const clock = new FakeClock();
  const client = new FakeClient(clock);
  client.objects.set("/api/v1/namespaces/default/services", [
    svc("default", "kubernetes", "10.96.0.1", [{ name: "https", port: 443 }]),
    svc("default", "other", "10.96.0.9", [{ port: 80 }]),
  ]);
  client.objects.set("/api/v1/namespaces/ns/services", [
    svc("ns", "web", "10.96.1.1", [{ port: 8080 }]),
  ]);
  const objects = new ApiPodObjects({ client, clock });
  const withLinks = await serviceEnvMap(objects, "ns", undefined);
  assert.equal(withLinks.get("KUBERNETES_SERVICE_HOST"), "10.96.0.1");
  assert.equal(withLinks.get("KUBERNETES_SERVICE_PORT_HTTPS"), "443");
  assert.equal(withLinks.get("WEB_SERVICE_PORT"), "8080");
  assert.equal(withLinks.has("OTHER_SERVICE_HOST"), false);
  const without = await serviceEnvMap(objects, "ns", false);
  assert.equal(without.get("KUBERNETES_PORT"), "tcp://10.96.0.1:443");
  assert.equal(without.has("WEB_SERVICE_HOST"), false);
});
