import assert from "node:assert/strict";
import { configzHandler } from "../../lib/server/mod.ts";
import {
  decodeKubeletConfiguration,
  defaultKubeletConfiguration,
  parseEvictionThresholds,
  parseFlags,
  parseTaint,
} from "../../lib/options/mod.ts";

const HEAD = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

Deno.test("configzHandler() serves {kubeletconfig: ...} with kind, apiVersion and flag overrides", async () => {
  const r = parseFlags(["--config=/c.yaml", "--max-pods=7"], {
    readFile: () => `${HEAD}staticPodPath: /etc/kubernetes/manifests\nshutdownGracePeriod: 30s\n`,
  });
  assert.equal(r.kind, "run");
  if (r.kind !== "run") return;
  const res = configzHandler(r.options.config)(new Request("http://node/configz"));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = await res.json();
  assert.deepEqual(Object.keys(body), ["kubeletconfig"]);
  const kc = body.kubeletconfig;
  assert.equal(kc.kind, "KubeletConfiguration");
  assert.equal(kc.apiVersion, "kubelet.config.k8s.io/v1beta1");
  assert.equal(kc.maxPods, 7);
  assert.equal(kc.staticPodPath, "/etc/kubernetes/manifests");
  assert.equal(kc.shutdownGracePeriod, "30s");
  assert.equal(kc.syncFrequency, "1m0s", "durations as Go prints them");
  assert.deepEqual(kc.evictionHard, {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
  });
});

Deno.test("configzHandler() omits zero plain fields but keeps zero pointers, in upstream field order", async () => {
  const { config } = decodeKubeletConfiguration(
    `${HEAD}healthzPort: 0\nreadOnlyPort: 0\nclusterDomain: ""\nseccompDefault: false\n`,
    { path: "c" },
  );
  const kc =
    (await configzHandler(config)(new Request("http://node/configz")).json()).kubeletconfig;
  assert.equal(kc.healthzPort, 0, "a pointer field keeps its explicit zero");
  assert.equal(kc.seccompDefault, false);
  assert.ok(!("readOnlyPort" in kc), "omitempty drops a zero int32");
  assert.ok(!("clusterDomain" in kc));
  assert.ok(!("staticPodPath" in kc));
  assert.equal(kc.containerRuntimeEndpoint, "unix:///run/containerd/containerd.sock");
  const keys = Object.keys(kc);
  assert.deepEqual(keys.slice(0, 4), ["kind", "apiVersion", "enableServer", "podLogsDir"]);
  assert.ok(keys.indexOf("port") < keys.indexOf("authentication"));
  assert.ok(keys.indexOf("authentication") < keys.indexOf("registerNode"));
});

Deno.test("configzHandler() answers GET and HEAD only", async () => {
  const handler = configzHandler(defaultKubeletConfiguration());
  const head = handler(new Request("http://node/configz", { method: "HEAD" }));
  assert.equal(head.status, 200);
  assert.equal(await head.text(), "");
  const post = handler(new Request("http://node/configz", { method: "POST", body: "{}" }));
  assert.equal(post.status, 405);
  assert.equal(post.headers.get("allow"), "GET, HEAD");
});

Deno.test("parseEvictionThresholds() reads quantities and percentages and skips zeros", () => {
  assert.deepEqual(
    parseEvictionThresholds(
      {
        "memory.available": "100Mi",
        "nodefs.available": "10%",
        "imagefs.available": "0%",
        "pid.available": "0",
      },
      "evictionHard",
    ),
    [
      { signal: "memory.available", quantity: 100 * 2 ** 20 },
      { signal: "nodefs.available", percentage: 0.1 },
    ],
  );
  assert.throws(
    () => parseEvictionThresholds({ "memory.available": "-1Mi" }, "evictionSoft"),
    /evictionSoft\["memory.available"\]: eviction threshold memory.available must be positive/,
  );
  assert.throws(
    () => parseEvictionThresholds({ "memory.available": "%" }, "evictionHard"),
    /invalid percentage/,
  );
});

Deno.test("parseTaint() reads key=value:Effect and key:Effect", () => {
  assert.deepEqual(parseTaint("example.com/gpu=true:NoSchedule"), {
    key: "example.com/gpu",
    value: "true",
    effect: "NoSchedule",
  });
  assert.deepEqual(parseTaint("spot:PreferNoSchedule"), {
    key: "spot",
    effect: "PreferNoSchedule",
  });
  assert.throws(() => parseTaint("a=b:c:NoSchedule"), /invalid taint spec: a=b:c:NoSchedule/);
  assert.throws(
    () => parseTaint("a=" + "x".repeat(64) + ":NoSchedule"),
    /no more than 63 characters/,
  );
});
