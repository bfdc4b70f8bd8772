import assert from "node:assert/strict";
import type { Service, TokenRequest } from "../../lib/api/cluster_types.ts";
import type { Pod } from "../../lib/api/types.ts";
import {
  ApiError,
  type CallOptions,
  type KubeClient,
  type ObjectList,
  type WatchEvent,
} from "../../lib/kubeapi/types.ts";
import {
  ApiPodObjects,
  type CachedToken,
  isObjectNotFound,
  serviceEnvMap,
  serviceEnvVars,
  SERVICES_NOT_SYNCED,
  servicesForPod,
  TokenManager,
  tokenRequiresRefresh,
} from "../../lib/kubeobjects/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { FakePodObjects, flushUntil, testPod } from "../kit/mod.ts";

const notFound = (path: string) => new ApiError(`${path} not found`, 404, "NotFound");

/** Serves objects by path and counts calls; tokens expire `ttl` seconds after issue. */
class FakeClient implements KubeClient {
  objects = new Map<string, unknown>();
  gets: string[] = [];
  /** The query of every list, by path. */
  listQueries: { path: string; query: Record<string, string> }[] = [];
  /** Open watches: the test sends events; each ends when its signal aborts. */
  watches: { path: string; query: Record<string, string>; send(e: WatchEvent<unknown>): void }[] =
    [];
  creates: { path: string; body: TokenRequest }[] = [];
  failCreate = false;
  constructor(readonly clock: FakeClock) {}
  get<T>(path: string): Promise<T> {
    this.gets.push(path);
    const o = this.objects.get(path);
    return o === undefined ? Promise.reject(notFound(path)) : Promise.resolve(o as T);
  }
  list<T>(path: string, opts?: CallOptions): Promise<ObjectList<T>> {
    this.listQueries.push({ path, query: { ...opts?.query } });
    return Promise.resolve({
      items: (this.objects.get(path) ?? []) as T[],
      metadata: { resourceVersion: "5" },
    });
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
  watch<T>(path: string, onEvent: (e: WatchEvent<T>) => void, opts?: CallOptions): Promise<void> {
    const signal = opts!.signal!;
    return new Promise((resolve) => {
      signal.addEventListener("abort", () => resolve(), { once: true });
      this.watches.push({
        path,
        query: { ...opts?.query },
        send: (e) => onEvent(e as WatchEvent<T>),
      });
    });
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

// Upstream's TestFromServices (pkg/kubelet/envvars/envvars_test.go): its services and expected output.
Deno.test("serviceEnvVars() gives upstream's TestFromServices output", () => {
  const port = (p: number, protocol: string, name?: string) => ({
    port: p,
    protocol,
    ...(name ? { name } : {}),
  });
  const env = serviceEnvVars([
    svc("", "foo-bar", "1.2.3.4", [port(8080, "TCP")]),
    svc("", "abc-123", "5.6.7.8", [port(8081, "UDP", "u-d-p"), port(8081, "TCP", "t-c-p")]),
    svc("", "q-u-u-x", "9.8.7.6", [port(8082, "TCP"), port(8083, "TCP", "8083")]),
    svc("", "svrc-clusterip-none", "None", [port(8082, "TCP")]),
    svc("", "svrc-clusterip-empty", "", [port(8082, "TCP")]),
    svc("", "super-ipv6", "2001:DB8::", [port(8084, "UDP", "u-d-p"), port(8084, "TCP", "t-c-p")]),
    svc("", "sctp-1", "1.2.3.4", [port(777, "SCTP")]),
  ]);
  const link = (prefix: string, ip: string, hostPort: string, p: number, proto: string) => [
    [`${prefix}_PORT_${p}_${proto}`, `${proto.toLowerCase()}://${hostPort}`],
    [`${prefix}_PORT_${p}_${proto}_PROTO`, proto.toLowerCase()],
    [`${prefix}_PORT_${p}_${proto}_PORT`, String(p)],
    [`${prefix}_PORT_${p}_${proto}_ADDR`, ip],
  ];
  const expected = [
    ["FOO_BAR_SERVICE_HOST", "1.2.3.4"],
    ["FOO_BAR_SERVICE_PORT", "8080"],
    ["FOO_BAR_PORT", "tcp://1.2.3.4:8080"],
    ...link("FOO_BAR", "1.2.3.4", "1.2.3.4:8080", 8080, "TCP"),
    ["ABC_123_SERVICE_HOST", "5.6.7.8"],
    ["ABC_123_SERVICE_PORT", "8081"],
    ["ABC_123_SERVICE_PORT_U_D_P", "8081"],
    ["ABC_123_SERVICE_PORT_T_C_P", "8081"],
    ["ABC_123_PORT", "udp://5.6.7.8:8081"],
    ...link("ABC_123", "5.6.7.8", "5.6.7.8:8081", 8081, "UDP"),
    ...link("ABC_123", "5.6.7.8", "5.6.7.8:8081", 8081, "TCP"),
    ["Q_U_U_X_SERVICE_HOST", "9.8.7.6"],
    ["Q_U_U_X_SERVICE_PORT", "8082"],
    ["Q_U_U_X_SERVICE_PORT_8083", "8083"],
    ["Q_U_U_X_PORT", "tcp://9.8.7.6:8082"],
    ...link("Q_U_U_X", "9.8.7.6", "9.8.7.6:8082", 8082, "TCP"),
    ...link("Q_U_U_X", "9.8.7.6", "9.8.7.6:8083", 8083, "TCP"),
    ["SUPER_IPV6_SERVICE_HOST", "2001:DB8::"],
    ["SUPER_IPV6_SERVICE_PORT", "8084"],
    ["SUPER_IPV6_SERVICE_PORT_U_D_P", "8084"],
    ["SUPER_IPV6_SERVICE_PORT_T_C_P", "8084"],
    ["SUPER_IPV6_PORT", "udp://[2001:DB8::]:8084"],
    ...link("SUPER_IPV6", "2001:DB8::", "[2001:DB8::]:8084", 8084, "UDP"),
    ...link("SUPER_IPV6", "2001:DB8::", "[2001:DB8::]:8084", 8084, "TCP"),
    ["SCTP_1_SERVICE_HOST", "1.2.3.4"],
    ["SCTP_1_SERVICE_PORT", "777"],
    ["SCTP_1_PORT", "sctp://1.2.3.4:777"],
    ...link("SCTP_1", "1.2.3.4", "1.2.3.4:777", 777, "SCTP"),
  ];
  assert.deepEqual(env.map((e) => [e.name, e.value]), expected);
});

// The services of upstream's TestMakeEnvironmentVariables (pkg/kubelet/kubelet_pods_test.go).
const upstreamServices = [
  svc("default", "kubernetes", "1.2.3.1", [{ protocol: "TCP", port: 8081 }]),
  svc("test1", "test", "1.2.3.3", [{ protocol: "TCP", port: 8083 }]),
  svc("test2", "kubernetes", "1.2.3.4", [{ protocol: "TCP", port: 8084 }]),
  svc("test2", "test", "1.2.3.5", [{ protocol: "TCP", port: 8085 }]),
  svc("test2", "test", "None", [{ protocol: "TCP", port: 8085 }]),
  svc("test2", "test", "", [{ protocol: "TCP", port: 8085 }]),
  svc("default", "not-special", "1.2.3.8", [{ protocol: "TCP", port: 8088 }]),
  svc("default", "not-special", "None", [{ protocol: "TCP", port: 8088 }]),
  svc("default", "not-special", "", [{ protocol: "TCP", port: 8088 }]),
];

Deno.test("servicesForPod() picks upstream's services for each case of TestMakeEnvironmentVariables", () => {
  const picked = (ns: string, links: boolean) =>
    servicesForPod(ns, links, upstreamServices).map((s) =>
      `${s.metadata.namespace}/${s.metadata.name}=${s.spec.clusterIP}`
    );
  // The master service always, whatever enableServiceLinks says.
  assert.deepEqual(picked("test1", false), ["default/kubernetes=1.2.3.1"]);
  assert.deepEqual(picked("test1", true), ["default/kubernetes=1.2.3.1", "test1/test=1.2.3.3"]);
  // "master service in pod ns": the pod's namespace's own kubernetes only with links.
  assert.deepEqual(picked("test2", false), ["default/kubernetes=1.2.3.1"]);
  assert.deepEqual(picked("test2", true), ["test2/kubernetes=1.2.3.4", "test2/test=1.2.3.5"]);
  // The order the informer lists them in does not change who wins.
  assert.deepEqual(
    servicesForPod("test2", true, [...upstreamServices].reverse()).map((s) => s.spec.clusterIP),
    ["1.2.3.4", "1.2.3.5"],
  );
  assert.deepEqual(picked("default", false), ["default/kubernetes=1.2.3.1"]);
  assert.deepEqual(picked("default", true), [
    "default/kubernetes=1.2.3.1",
    "default/not-special=1.2.3.8",
  ]);
});

Deno.test("serviceEnvMap() refuses an API pod before the services were listed, not a static pod", () => {
  const objects = new FakePodObjects();
  objects.services = upstreamServices;
  objects.synced = false;
  const apiPod: Pod = testPod({ namespace: "test1", containers: ["c"] });
  const staticPod: Pod = testPod({
    namespace: "test1",
    containers: ["c"],
    metadata: { annotations: { "kubernetes.io/config.source": "file" } },
  });
  assert.throws(() => serviceEnvMap(objects, apiPod), { message: SERVICES_NOT_SYNCED });
  assert.equal(
    SERVICES_NOT_SYNCED,
    "services have not yet been read at least once, cannot construct envvars",
  );
  assert.equal(serviceEnvMap(objects, staticPod).get("KUBERNETES_SERVICE_HOST"), "1.2.3.1");
  objects.synced = true;
  const env = serviceEnvMap(objects, apiPod);
  assert.equal(env.get("TEST_SERVICE_HOST"), "1.2.3.3");
  assert.equal(env.get("KUBERNETES_PORT_8081_TCP"), "tcp://1.2.3.1:8081");
});

Deno.test("ApiPodObjects watches every namespace's non-headless services: a new one shows at once", async () => {
  const clock = new FakeClock();
  const client = new FakeClient(clock);
  client.objects.set("/api/v1/services", [
    svc("default", "kubernetes", "10.96.0.1", [{ name: "https", port: 443 }]),
  ]);
  const objects = new ApiPodObjects({ client, clock });
  await flushUntil("the services watch", () => client.watches.length === 1);
  assert.equal(objects.servicesSynced(), true);
  assert.deepEqual(client.listQueries, [{
    path: "/api/v1/services",
    query: { fieldSelector: "spec.clusterIP!=None", resourceVersion: "0" },
  }]);
  assert.equal(client.watches[0]!.query.fieldSelector, "spec.clusterIP!=None");
  const pod = testPod({ namespace: "ns", containers: ["c"] });
  assert.equal(serviceEnvMap(objects, pod).has("WEB_SERVICE_HOST"), false);
  const web = svc("ns", "web", "10.96.1.1", [{ port: 8080 }]);
  client.watches[0]!.send({
    type: "ADDED",
    object: { ...web, metadata: { ...web.metadata, resourceVersion: "6" } },
  });
  await flushUntil("the new service", () => objects.listServices().length === 2);
  const env = serviceEnvMap(objects, pod);
  assert.equal(env.get("WEB_SERVICE_HOST"), "10.96.1.1");
  assert.equal(env.get("KUBERNETES_SERVICE_PORT_HTTPS"), "443");
  assert.equal(
    serviceEnvMap(objects, { ...pod, spec: { ...pod.spec, enableServiceLinks: false } }).has(
      "WEB_SERVICE_HOST",
    ),
    false,
  );
  client.watches[0]!.send({ type: "DELETED", object: web });
  await flushUntil("the service gone", () => objects.listServices().length === 1);
  await objects.stop();
});
