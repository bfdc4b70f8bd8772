import assert from "node:assert/strict";
import {
  type AgentOptions,
  ConfigFileError,
  ConfigValidationError,
  decodeKubeletConfiguration,
  loadConfigFile,
  parseFlags,
} from "../../lib/options/mod.ts";

const HEAD = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

/** Runs parseFlags with `--config=/etc/kubelet/config.yaml` holding `text`. */
function withFile(
  text: string,
  argv: string[] = ["--config=/etc/kubelet/config.yaml"],
): AgentOptions {
  const r = parseFlags(argv, { readFile: () => text });
  assert.equal(r.kind, "run");
  if (r.kind !== "run") throw new Error("unreachable");
  return r.options;
}

function fileError(text: string): ConfigFileError {
  try {
    decodeKubeletConfiguration(text, { path: "/etc/kubelet/config.yaml" });
  } catch (err) {
    assert.ok(err instanceof ConfigFileError, String(err));
    assert.match(
      err.message,
      /^failed to load Kubelet config file \/etc\/kubelet\/config\.yaml, error: /,
    );
    return err;
  }
  throw new Error("decoding succeeded");
}

Deno.test("decodeKubeletConfiguration() applies upstream's v1beta1 defaults to an empty file", () => {
  const { config, warnings } = decodeKubeletConfiguration(HEAD, { path: "c.yaml" });
  assert.deepEqual(warnings, []);
  const expected = {
    port: 10250,
    healthzPort: 10248,
    healthzBindAddress: "127.0.0.1",
    address: "0.0.0.0",
    syncFrequency: "1m0s",
    fileCheckFrequency: "20s",
    httpCheckFrequency: "20s",
    runtimeRequestTimeout: "2m0s",
    nodeStatusUpdateFrequency: "10s",
    nodeStatusReportFrequency: "5m0s",
    nodeLeaseDurationSeconds: 40,
    maxPods: 110,
    podPidsLimit: -1,
    kubeAPIQPS: 50,
    kubeAPIBurst: 100,
    serializeImagePulls: true,
    imageGCHighThresholdPercent: 85,
    imageGCLowThresholdPercent: 80,
    cgroupDriver: "cgroupfs",
    cgroupsPerQOS: true,
    registerNode: true,
    resolvConf: "/etc/resolv.conf",
    containerRuntimeEndpoint: "unix:///run/containerd/containerd.sock",
    containerLogMaxSize: "10Mi",
    containerLogMaxFiles: 5,
  };
  for (const [key, value] of Object.entries(expected)) {
    assert.deepEqual(config[key as keyof typeof config], value, key);
  }
  assert.equal(config.readOnlyPort, undefined, "the file's read-only port is off");
  assert.deepEqual(config.authentication?.anonymous, { enabled: false });
  assert.deepEqual(config.authentication?.webhook, { enabled: true, cacheTTL: "2m0s" });
  assert.equal(config.authorization?.mode, "Webhook");
  assert.deepEqual(config.logging?.format, "text");
  assert.deepEqual(config.evictionHard, {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
  });
});

Deno.test("parseFlags() runs from a YAML file alone, zero values of plain fields defaulted", () => {
  const o = withFile(`${HEAD}
staticPodPath: /etc/kubernetes/manifests
staticPodURL: http://127.0.0.1:8080/pods
staticPodURLHeader:
  Authorization: ["Bearer t"]
fileCheckFrequency: 5s
syncFrequency: 1m30s
port: 0            # Go defaults a zero port to 10250
healthzPort: 0     # a pointer: 0 stays 0 and disables /healthz
readOnlyPort: 10255
containerRuntimeEndpoint: unix:///run/c.sock
runtimeRequestTimeout: 10m
nodeStatusUpdateFrequency: 20s
nodeLeaseDurationSeconds: 60
maxPods: 30
podPidsLimit: 4096
kubeAPIQPS: 10
kubeAPIBurst: 20
serializeImagePulls: false
maxParallelImagePulls: 3
clusterDNS: [10.96.0.10]
clusterDomain: cluster.local
resolvConf: ""
cgroupDriver: systemd
cgroupRoot: /kubepods.slice
systemReserved: {cpu: 500m, memory: 1Gi}
kubeReserved: {memory: 256Mi, pid: "1000"}
registerNode: false
registerWithTaints:
- {key: dedicated, value: infra, effect: NoSchedule}
tlsCertFile: /var/lib/kubelet/pki/kubelet.crt
tlsPrivateKeyFile: /var/lib/kubelet/pki/kubelet.key
logging: {format: json, verbosity: 3}
`);
  assert.equal(o.podManifestPath, "/etc/kubernetes/manifests");
  assert.equal(o.manifestUrl, "http://127.0.0.1:8080/pods");
  assert.deepEqual(o.manifestUrlHeader, { Authorization: ["Bearer t"] });
  assert.equal(o.fileCheckFrequencyMs, 5000);
  assert.equal(o.syncFrequencyMs, 90_000);
  assert.equal(o.port, 10250);
  assert.equal(o.healthzPort, 0);
  assert.equal(o.readOnlyPort, 10255);
  assert.equal(o.containerRuntimeEndpoint, "unix:///run/c.sock");
  assert.equal(o.imageServiceEndpoint, "unix:///run/c.sock");
  assert.equal(o.runtimeRequestTimeoutMs, 600_000);
  assert.equal(o.nodeStatusUpdateFrequencyMs, 20_000);
  assert.equal(o.nodeStatusReportFrequencyMs, 20_000, "follows an explicit update frequency");
  assert.equal(o.nodeLeaseDurationSeconds, 60);
  assert.equal(o.maxPods, 30);
  assert.equal(o.podPidsLimit, 4096);
  assert.equal(o.kubeAPIQPS, 10);
  assert.equal(o.kubeAPIBurst, 20);
  assert.equal(o.serializeImagePulls, false);
  assert.equal(o.maxParallelImagePulls, 3);
  assert.deepEqual(o.clusterDNS, ["10.96.0.10"]);
  assert.equal(o.clusterDomain, "cluster.local");
  assert.equal(o.resolvConf, "", "an empty resolvConf (a pointer) disables the host's resolv.conf");
  assert.equal(o.cgroupDriver, "systemd");
  assert.equal(o.cgroupRoot, "/kubepods.slice");
  assert.deepEqual(o.systemReserved, { cpu: "500m", memory: "1Gi" });
  assert.deepEqual(o.kubeReserved, { memory: "256Mi", pid: "1000" });
  assert.equal(o.registerNode, false);
  assert.deepEqual(o.registerWithTaints, [{
    key: "dedicated",
    value: "infra",
    effect: "NoSchedule",
  }]);
  assert.equal(o.tlsCertFile, "/var/lib/kubelet/pki/kubelet.crt");
  assert.equal(o.loggingFormat, "json");
  assert.equal(o.verbosity, 3);
  assert.equal(o.configFile, "/etc/kubelet/config.yaml");
  // Every field of the file is one denolet acts on: no warnings.
  assert.deepEqual(o.warnings, []);
});

Deno.test("parseFlags() reads a JSON file the same way", () => {
  const o = withFile(
    JSON.stringify({
      apiVersion: "kubelet.config.k8s.io/v1beta1",
      kind: "KubeletConfiguration",
      maxPods: 50,
      evictionHard: { "memory.available": "500Mi" },
    }),
  );
  assert.equal(o.maxPods, 50);
  assert.deepEqual(o.evictionHard, { "memory.available": "500Mi" });
});

Deno.test("parseFlags() takes localStorageCapacityIsolation (default true) from the file or its flag, without a warning", () => {
  assert.equal(withFile(HEAD).localStorageCapacityIsolation, true);
  const o = withFile(`${HEAD}localStorageCapacityIsolation: false\n`);
  assert.equal(o.localStorageCapacityIsolation, false);
  assert.deepEqual(o.warnings.filter((w) => w.includes("ocalStorageCapacityIsolation")), []);
  const flag = parseFlags(["--local-storage-capacity-isolation=false"]);
  assert.equal(flag.kind, "run");
  if (flag.kind !== "run") throw new Error("unreachable");
  assert.equal(flag.options.localStorageCapacityIsolation, false);
  assert.deepEqual(flag.options.warnings.filter((w) => w.includes("not implemented")), []);
});

Deno.test("parseFlags() lets flags override the file whatever their order", () => {
  const file =
    `${HEAD}maxPods: 30\nport: 10300\nsyncFrequency: 30s\nevictionHard: {memory.available: 1Gi}\nlogging: {verbosity: 1}\n`;
  const orders: string[][] = [
    ["--config=/c.yaml", "--max-pods=60", "--sync-frequency=2m", "-v=4"],
    ["--max-pods=60", "--config=/c.yaml", "--sync-frequency=2m", "-v=4"],
    ["--max-pods=60", "--sync-frequency=2m", "-v=4", "--config", "/c.yaml"],
  ];
  for (const argv of orders) {
    const o = withFile(file, argv);
    assert.equal(o.maxPods, 60, argv.join(" "));
    assert.equal(o.syncFrequencyMs, 120_000, argv.join(" "));
    assert.equal(o.verbosity, 4, argv.join(" "));
    assert.equal(o.port, 10300, "fields no flag sets keep the file's value");
    assert.deepEqual(o.evictionHard, { "memory.available": "1Gi" });
    assert.equal(o.config.maxPods, 60, "/configz shows the flag's value");
  }
  const replaced = withFile(file, ["--config=/c.yaml", "--eviction-hard=nodefs.available<5%"]);
  assert.deepEqual(
    replaced.evictionHard,
    { "nodefs.available": "5%" },
    "a map flag replaces the file's map",
  );
});

Deno.test("parseFlags() keeps the file's read-only port and auth defaults unless a flag sets them", () => {
  const o = withFile(HEAD);
  assert.equal(o.readOnlyPort, 0);
  assert.equal(o.authorization.mode, "Webhook");
  assert.deepEqual(o.authentication.anonymous, { enabled: false });
  const flagged = withFile(HEAD, [
    "--config=/c.yaml",
    "--read-only-port=10255",
    "--anonymous-auth",
  ]);
  assert.equal(flagged.readOnlyPort, 10255);
  assert.deepEqual(flagged.authentication.anonymous, { enabled: true });
});

Deno.test("decodeKubeletConfiguration() replaces the evictionHard defaults with a partial map unless asked to merge", () => {
  const partial = decodeKubeletConfiguration(`${HEAD}evictionHard:\n  memory.available: 200Mi\n`, {
    path: "c",
  });
  assert.deepEqual(partial.config.evictionHard, { "memory.available": "200Mi" });
  const merged = decodeKubeletConfiguration(
    `${HEAD}mergeDefaultEvictionSettings: true\nevictionHard:\n  memory.available: 200Mi\n`,
    { path: "c" },
  );
  assert.deepEqual(merged.config.evictionHard, {
    "memory.available": "200Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
  });
  const empty = decodeKubeletConfiguration(`${HEAD}evictionHard: {}\n`, { path: "c" });
  assert.deepEqual(empty.config.evictionHard, {}, "an explicit empty map turns hard eviction off");
});

Deno.test("decodeKubeletConfiguration() rejects unknown fields with their path, as strict decoding does", () => {
  const err = fileError(`${HEAD}
foo: 1
authentication:
  webhook: {enabled: true, cachettl: 2m}
registerWithTaints:
- {key: a, effect: NoSchedule, efect: x}
logging: {options: {json: {split: true}}}
`);
  assert.deepEqual(err.problems, [
    'unknown field "foo"',
    'unknown field "authentication.webhook.cachettl"',
    'unknown field "registerWithTaints[0].efect"',
    'unknown field "logging.options.json.split"',
  ]);
});

Deno.test("decodeKubeletConfiguration() rejects a wrong apiVersion, kind or document", () => {
  assert.match(
    fileError("apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n").message,
    /apiVersion "kubelet.config.k8s.io\/v1" is not supported: want "kubelet.config.k8s.io\/v1beta1"/,
  );
  assert.match(
    fileError("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n").message,
    /kind "KubeProxyConfiguration" is not supported/,
  );
  assert.match(
    fileError("apiVersion: kubelet.config.k8s.io/v1beta1\n").message,
    /Object 'Kind' is missing/,
  );
  assert.match(fileError("- a\n- b\n").message, /must hold a KubeletConfiguration object/);
  assert.match(fileError(`${HEAD}port: [1\n`).message, /not valid YAML or JSON/);
  assert.match(fileError(`${HEAD}port: 1\nport: 2\n`).message, /not valid YAML or JSON/);
});

Deno.test("decodeKubeletConfiguration() rejects values of the wrong type or format with the field path", () => {
  const err = fileError(`${HEAD}
port: "10250"
syncFrequency: 10
fileCheckFrequency: soon
registerNode: "yes"
clusterDNS: 10.0.0.10
evictionHard: {memory.available: 100}
containerLogMaxSize: 10 MB
reservedMemory:
- {numaNode: 0, limits: {memory: lots}}
`);
  assert.deepEqual(err.problems, [
    'port: want an integer, got string "10250"',
    "syncFrequency: want a duration string, got number 10",
    'fileCheckFrequency: invalid duration "soon": want e.g. "20s", "1m30s", "500ms"',
    'registerNode: want a boolean, got string "yes"',
    'clusterDNS: want a list of strings, got string "10.0.0.10"',
    'evictionHard["memory.available"]: want a string, got number 100',
    `containerLogMaxSize: invalid quantity "10 MB": unknown suffix " MB"`,
    `reservedMemory[0].limits["memory"]: invalid quantity "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
  ]);
});

Deno.test("parseFlags() validates file values with the field path and the file's name", () => {
  const cases: [string, RegExp][] = [
    ["port: 65536", /port \(--port\) 65536 must be between 1 and 65535, inclusive/],
    ["readOnlyPort: 70000", /readOnlyPort \(--read-only-port\) 70000 must be between 0 and 65535/],
    [
      "evictionHard: {memory.available: 10Xi}",
      /evictionHard\["memory.available"\]: invalid quantity "10Xi"/,
    ],
    [
      "evictionHard: {nodefs.available: 101%}",
      /evictionHard\["nodefs.available"\]: eviction percentage threshold nodefs.available must be >= 0% and <= 100%/,
    ],
    [
      "evictionHard: {disk.available: 1Gi}",
      /evictionHard\["disk.available"\]: unsupported eviction signal/,
    ],
    ["evictionSoft: {memory.available: 1Gi}", /grace period must be specified/],
    [
      "imageGCHighThresholdPercent: 101",
      /imageGCHighThresholdPercent \(--image-gc-high-threshold\) 101 must be between 0 and 100/,
    ],
    ["imageMinimumGCAge: -1m", /imageMinimumGCAge -1m0s must not be negative/],
    [
      "imageMaximumGCAge: 1m",
      /imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s/,
    ],
    ["nodeLeaseDurationSeconds: -5", /nodeLeaseDurationSeconds must be greater than 0/],
    [
      "authorization: {mode: RBAC}",
      /authorization.mode \(--authorization-mode\) "RBAC" must be one of/,
    ],
    ["logging: {format: yaml}", /logging.format: Unsupported value: "yaml"/],
    [
      "registerWithTaints: [{key: a, effect: Sometimes}]",
      /registerWithTaints\[0\]: invalid taint: unsupported taint effect "Sometimes"/,
    ],
    [
      "containerLogMaxFiles: 1",
      /containerLogMaxFiles \(--container-log-max-files\) 1 must be greater than 1/,
    ],
    [
      "systemReserved: {memory: -1Gi}",
      /systemReserved\["memory"\]: resource quantity for memory cannot be negative/,
    ],
  ];
  for (const [line, re] of cases) {
    assert.throws(
      () => withFile(`${HEAD}${line}\n`),
      (e) =>
        e instanceof ConfigValidationError && re.test(e.message) &&
        e.message.includes("config file /etc/kubelet/config.yaml"),
      line,
    );
  }
});

Deno.test("parseFlags() accepts upstream fields denolet ignores, warning with each field's path", () => {
  const o = withFile(`${HEAD}
failSwapOn: false
featureGates: {SomeGate: true}
shutdownGracePeriod: 30s
cpuManagerPolicy: static
memorySwap: {swapBehavior: LimitedSwap}
logging: {format: text, flushFrequency: 5s, vmodule: [{filePattern: "kubelet*", verbosity: 4}]}
authentication: {x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}}
`);
  assert.deepEqual(o.warnings, [
    'field "failSwapOn" is not implemented by denolet and is ignored',
    'field "featureGates" is not implemented by denolet and is ignored',
    'field "shutdownGracePeriod" is not implemented by denolet and is ignored',
    'field "cpuManagerPolicy" is not implemented by denolet and is ignored',
    'field "memorySwap" is not implemented by denolet and is ignored',
    'field "logging.flushFrequency" is not implemented by denolet and is ignored',
    'field "logging.vmodule" is not implemented by denolet and is ignored',
  ]);
  assert.equal(o.config.shutdownGracePeriod, "30s", "kept for /configz");
  assert.equal(o.authentication.x509?.clientCAFile, "/etc/kubernetes/pki/ca.crt");
});

Deno.test("loadConfigFile() resolves the file's relative paths against its directory", async () => {
  const dir = await Deno.makeTempDir({ prefix: "denolet-config-" });
  try {
    const path = `${dir}/kubelet.yaml`;
    await Deno.writeTextFile(
      path,
      `${HEAD}staticPodPath: manifests\ntlsCertFile: pki/kubelet.crt\nauthentication: {x509: {clientCAFile: ../ca.crt}}\nresolvConf: /etc/resolv.conf\n`,
    );
    const { config } = loadConfigFile(path);
    assert.equal(config.staticPodPath, `${dir}/manifests`);
    assert.equal(config.tlsCertFile, `${dir}/pki/kubelet.crt`);
    assert.equal(
      config.authentication?.x509?.clientCAFile,
      `${dir.replace(/\/[^/]+$/, "")}/ca.crt`,
    );
    assert.equal(config.resolvConf, "/etc/resolv.conf");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseFlags() names the --config file it cannot read", () => {
  assert.throws(
    () => parseFlags(["--config=/nonexistent/denolet/kubelet.yaml"]),
    (e) =>
      e instanceof ConfigFileError &&
      /^failed to load Kubelet config file \/nonexistent\/denolet\/kubelet\.yaml, error: /.test(
        e.message,
      ) &&
      e.cause instanceof Deno.errors.NotFound,
  );
});
