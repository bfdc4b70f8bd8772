import assert from "node:assert/strict";
import type { ConfigMap, Secret, Service } from "../../lib/api/cluster_types.ts";
import type { Container, Pod } from "../../lib/api/types.ts";
import {
  ContainerConfigError,
  type EnvObjects,
  expandSubPathExpr,
  fetchEnvObjects,
  makeEnvironment,
} from "../../lib/kuberuntime/env.ts";
import { FakePodObjects, testPod } from "../kit/mod.ts";

const settings: ConfigMap = {
  metadata: { name: "settings" },
  data: { LOG_LEVEL: "debug", "bad key": "x", "1st": "y", "dotted.name": "z" },
};
const creds: Secret = {
  metadata: { name: "creds" },
  data: { PASSWORD: btoa("s3cret"), USER: btoa("admin") },
};

function objects(extra: Partial<EnvObjects> = {}): EnvObjects {
  return {
    configMaps: new Map([["settings", settings], ["absent", undefined]]),
    secrets: new Map([["creds", creds], ["gone", undefined]]),
    serviceEnv: new Map([["KUBERNETES_SERVICE_HOST", "10.96.0.1"], ["LOG_LEVEL", "svc"]]),
    ...extra,
  };
}

function pod(container: Partial<Container>): Pod {
  return testPod({ namespace: "ns", containers: [{ name: "app", ...container }] });
}

function env(
  p: Pod,
  envObjects: EnvObjects | null = objects(),
  onInvalid?: (m: string) => void,
) {
  return makeEnvironment(p, p.spec.containers[0]!, {
    podIPs: ["10.1.0.7", "fd00::7"],
    ...(envObjects ? { envObjects } : {}),
    ...(onInvalid ? { onInvalidEnvKeys: onInvalid } : {}),
  });
}

const asMap = (e: { key: string; value: string }[]) => new Map(e.map((x) => [x.key, x.value]));

Deno.test("makeEnvironment() takes envFrom with prefixes, skipping invalid names with upstream's message", () => {
  const messages: string[] = [];
  const p = pod({
    envFrom: [
      { configMapRef: { name: "settings" } },
      { prefix: "DB_", secretRef: { name: "creds" } },
    ],
  });
  const out = env(p, objects(), (m) => messages.push(m));
  assert.deepEqual(out.slice(0, 4), [
    { key: "LOG_LEVEL", value: "debug" },
    { key: "dotted.name", value: "z" },
    { key: "DB_PASSWORD", value: "s3cret" },
    { key: "DB_USER", value: "admin" },
  ]);
  assert.deepEqual(messages, [
    "Keys [1st, bad key] from the EnvFrom configmap ns/settings were skipped since they are considered invalid environment variable names.",
  ]);
});

Deno.test("makeEnvironment() resolves configMapKeyRef and secretKeyRef, env overriding envFrom in place", () => {
  const p = pod({
    envFrom: [{ configMapRef: { name: "settings" } }],
    env: [
      { name: "PASS", valueFrom: { secretKeyRef: { name: "creds", key: "PASSWORD" } } },
      {
        name: "LOG_LEVEL",
        valueFrom: { configMapKeyRef: { name: "settings", key: "dotted.name" } },
      },
      { name: "MSG", value: "level=$(LOG_LEVEL) api=$(KUBERNETES_SERVICE_HOST)" },
      { name: "IPS", valueFrom: { fieldRef: { fieldPath: "status.podIPs" } } },
      { name: "IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
    ],
  });
  const out = env(p);
  assert.equal(out[0]!.key, "LOG_LEVEL");
  const m = asMap(out);
  assert.equal(m.get("LOG_LEVEL"), "z");
  assert.equal(m.get("PASS"), "s3cret");
  assert.equal(m.get("MSG"), "level=z api=10.96.0.1");
  assert.equal(m.get("IPS"), "10.1.0.7,fd00::7");
  assert.equal(m.get("IP"), "10.1.0.7");
  // Service links come last and never replace a defined variable.
  assert.deepEqual(out.at(-1), { key: "KUBERNETES_SERVICE_HOST", value: "10.96.0.1" });
});

Deno.test("makeEnvironment() leaves out optional missing sources and fails required ones, naming them", () => {
  const optional = pod({
    envFrom: [{ configMapRef: { name: "absent", optional: true } }],
    env: [
      { name: "A", valueFrom: { configMapKeyRef: { name: "absent", key: "k", optional: true } } },
      { name: "B", valueFrom: { secretKeyRef: { name: "creds", key: "NOPE", optional: true } } },
    ],
  });
  const m = asMap(env(optional));
  assert.equal(m.has("A"), false);
  assert.equal(m.has("B"), false);
  const cases: [Partial<Container>, RegExp][] = [
    [
      { env: [{ name: "X", valueFrom: { configMapKeyRef: { name: "absent", key: "k" } } }] },
      /^env "X" of container "app": configmap "absent" not found$/,
    ],
    [
      { envFrom: [{ secretRef: { name: "gone" } }] },
      /^envFrom secret "gone" of container "app": secret "gone" not found$/,
    ],
    [
      { env: [{ name: "X", valueFrom: { secretKeyRef: { name: "creds", key: "NOPE" } } }] },
      /couldn't find key NOPE in Secret ns\/creds/,
    ],
    [
      { env: [{ name: "X", valueFrom: { configMapKeyRef: { name: "settings", key: "NOPE" } } }] },
      /couldn't find key NOPE in ConfigMap ns\/settings/,
    ],
  ];
  for (const [spec, re] of cases) {
    assert.throws(() => env(pod(spec)), (err: unknown) => {
      assert.ok(err instanceof ContainerConfigError);
      assert.equal(err.reason, "CreateContainerConfigError");
      assert.match(err.message, re);
      return true;
    });
  }
});

Deno.test("makeEnvironment() without an apiserver fails references but not plain env", () => {
  assert.deepEqual(env(pod({ env: [{ name: "A", value: "1" }] }), null), [
    { key: "A", value: "1" },
  ]);
  assert.throws(
    () => env(pod({ envFrom: [{ configMapRef: { name: "settings", optional: true } }] }), null),
    /envFrom configmap "settings" of container "app": configmap "settings" cannot be read: no apiserver \(standalone mode\)/,
  );
});

/** Objects in namespace "ns", services in "ns" and "default", and a configmap that fails. */
function fakeObjects(): FakePodObjects {
  const source = new FakePodObjects();
  source.configMaps.set("ns/settings", settings);
  source.secrets.set("ns/creds", creds);
  source.failures.set("cm ns/boom", new Error("connection refused"));
  const service = (name: string, ns: string, ip: string): Service => ({
    metadata: { name, namespace: ns },
    spec: { clusterIP: ip, ports: [{ port: 443 }] },
  });
  source.services = [
    service("kubernetes", "default", "10.96.0.1"),
    service("api", "ns", "10.96.3.3"),
  ];
  return source;
}

Deno.test("fetchEnvObjects() reads each referenced object once and the service links", async () => {
  const source = fakeObjects();
  const p = pod({
    envFrom: [{ configMapRef: { name: "settings" } }, { secretRef: { name: "creds" } }],
    env: [
      { name: "A", valueFrom: { configMapKeyRef: { name: "settings", key: "LOG_LEVEL" } } },
      { name: "B", valueFrom: { configMapKeyRef: { name: "missing", key: "k", optional: true } } },
    ],
  });
  const got = await fetchEnvObjects(p, p.spec.containers[0]!, source);
  assert.ok(got);
  assert.deepEqual(source.reads, [
    "cm ns/settings",
    "cm ns/missing",
    "secret ns/creds",
  ]);
  assert.equal(got.configMaps.get("missing"), undefined);
  assert.equal(got.configMaps.has("missing"), true);
  assert.equal(got.serviceEnv.get("API_SERVICE_HOST"), "10.96.3.3");
  assert.equal(got.serviceEnv.get("KUBERNETES_SERVICE_PORT"), "443");
  assert.deepEqual(
    asMap(makeEnvironment(p, p.spec.containers[0]!, { envObjects: got })).get("A"),
    "debug",
  );
  assert.equal(await fetchEnvObjects(p, p.spec.containers[0]!, undefined), undefined);
  const failing = pod({ envFrom: [{ configMapRef: { name: "boom" } }] });
  await assert.rejects(
    fetchEnvObjects(failing, failing.spec.containers[0]!, source),
    /failed to get configmap "ns\/boom" for the env of container "app": connection refused/,
  );
});

Deno.test("expandSubPathExpr() expands from the env and fails on undefined or empty variables, as upstream", () => {
  const envs = [
    { key: "POD_NAME", value: "web-0" },
    { key: "ANNOTATION", value: "" },
    { key: "DIR", value: "logs" },
  ];
  assert.equal(expandSubPathExpr("$(DIR)/$(POD_NAME)", envs), "logs/web-0");
  assert.equal(expandSubPathExpr("a$$b/$(POD_NAME)", envs), "a$b/web-0");
  assert.equal(expandSubPathExpr("$DIR", envs), "$DIR"); // not a reference
  assert.throws(
    () => expandSubPathExpr("$(ANNOTATION)/$(ZED)/$(POD_NAME)/$(ABSENT)", envs),
    (err: unknown) => {
      assert.ok(err instanceof ContainerConfigError);
      assert.equal(err.reason, "CreateContainerConfigError");
      assert.equal(err.message, "missing value for ABSENT, ANNOTATION, ZED");
      return true;
    },
  );
});

Deno.test("fetchEnvObjects() fails an API pod's container with upstream's message until the services were listed", async () => {
  const source = fakeObjects();
  source.synced = false;
  const p = pod({ env: [{ name: "API", value: "$(API_SERVICE_HOST):$(API_SERVICE_PORT)" }] });
  await assert.rejects(
    fetchEnvObjects(p, p.spec.containers[0]!, source),
    (err: unknown) =>
      err instanceof ContainerConfigError && err.reason === "CreateContainerConfigError" &&
      err.message === "services have not yet been read at least once, cannot construct envvars",
  );
  source.synced = true;
  const got = await fetchEnvObjects(p, p.spec.containers[0]!, source);
  const m = asMap(makeEnvironment(p, p.spec.containers[0]!, { envObjects: got! }));
  // The container's own env may refer to the service links, which come after it.
  assert.equal(m.get("API"), "10.96.3.3:443");
  assert.equal(m.get("KUBERNETES_SERVICE_HOST"), "10.96.0.1");
});
