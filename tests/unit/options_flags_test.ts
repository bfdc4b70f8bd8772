import assert from "node:assert/strict";
import {
  type AgentOptions,
  ConfigValidationError,
  FlagError,
  helpText,
  parseFlags,
} from "../../lib/options/mod.ts";
import { FLAGS } from "../../lib/options/flag_table.ts";

function run(argv: string[]): AgentOptions {
  const r = parseFlags(argv);
  assert.equal(r.kind, "run");
  if (r.kind !== "run") throw new Error("unreachable");
  return r.options;
}

Deno.test("parseFlags() without --config applies v1beta1 defaults plus upstream's legacy flag defaults", () => {
  const o = run([]);
  const expected: Partial<AgentOptions> = {
    port: 10250,
    readOnlyPort: 10255, // applyLegacyDefaults: only the file's default is 0
    healthzPort: 10248,
    healthzBindAddress: "127.0.0.1",
    address: "0.0.0.0",
    maxPods: 110,
    podPidsLimit: -1,
    kubeAPIQPS: 50,
    kubeAPIBurst: 100,
    serializeImagePulls: true,
    registerNode: true,
    nodeStatusUpdateFrequencyMs: 10_000,
    nodeStatusReportFrequencyMs: 300_000,
    nodeLeaseDurationSeconds: 40,
    imageGCHighThresholdPercent: 85,
    imageGCLowThresholdPercent: 80,
    cgroupDriver: "cgroupfs",
    cgroupsPerQOS: true,
    cgroupRoot: "/",
    resolvConf: "/etc/resolv.conf",
    rootDir: "/var/lib/kubelet",
    certDir: "/var/lib/kubelet/pki",
    runtimeRequestTimeoutMs: 120_000,
    housekeepingIntervalMs: 10_000,
    kubeconfig: "",
    configFile: "",
    containerGC: { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 },
  };
  for (const [key, value] of Object.entries(expected)) {
    assert.deepEqual(o[key as keyof AgentOptions], value, key);
  }
  assert.deepEqual(o.authentication.anonymous, { enabled: true });
  assert.equal(o.authorization.mode, "AlwaysAllow");
  assert.deepEqual(o.evictionHard, {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
  });
  assert.deepEqual(o.warnings, []);
});

Deno.test("parseFlags() reads the kubelet flags a cluster node is started with into AgentOptions", () => {
  const o = run([
    "--kubeconfig=/etc/kubernetes/kubelet.conf",
    "--bootstrap-kubeconfig",
    "/etc/kubernetes/bootstrap.conf",
    "--hostname-override=Node-1",
    "--node-ip=10.0.0.5",
    "--root-dir=/srv/kubelet",
    "--cert-dir=/srv/pki",
    "--max-pods=42",
    "--kube-reserved=cpu=100m,memory=256Mi",
    "--system-reserved=memory=512Mi",
    "--node-status-update-frequency=4s",
    "--kube-api-qps=20",
    "--kube-api-burst=40",
    "--register-node=false",
    "--port=10260",
    "--cluster-dns=10.96.0.10,10.96.0.11",
    "--cluster-domain=cluster.local",
    "--cgroup-driver=systemd",
    "--cgroup-root=/kubepods",
    "--serialize-image-pulls=false",
    "--pod-max-pids=1024",
  ]);
  assert.equal(o.kubeconfig, "/etc/kubernetes/kubelet.conf");
  assert.equal(o.bootstrapKubeconfig, "/etc/kubernetes/bootstrap.conf");
  assert.equal(o.hostnameOverride, "Node-1");
  assert.equal(o.nodeIp, "10.0.0.5");
  assert.equal(o.rootDir, "/srv/kubelet");
  assert.equal(o.certDir, "/srv/pki");
  assert.equal(o.maxPods, 42);
  assert.deepEqual(o.kubeReserved, { cpu: "100m", memory: "256Mi" });
  assert.deepEqual(o.systemReserved, { memory: "512Mi" });
  assert.equal(o.nodeStatusUpdateFrequencyMs, 4000);
  // Only the file's explicit update frequency moves the report frequency; a flag does not.
  assert.equal(o.nodeStatusReportFrequencyMs, 300_000);
  assert.equal(o.kubeAPIQPS, 20);
  assert.equal(o.kubeAPIBurst, 40);
  assert.equal(o.registerNode, false);
  assert.equal(o.port, 10260);
  assert.deepEqual(o.clusterDNS, ["10.96.0.10", "10.96.0.11"]);
  assert.equal(o.clusterDomain, "cluster.local");
  assert.equal(o.cgroupDriver, "systemd");
  assert.equal(o.cgroupRoot, "/kubepods");
  assert.equal(o.serializeImagePulls, false);
  assert.equal(o.podPidsLimit, 1024);
  assert.equal(o.config.maxPods, 42, "the effective config carries flag values too");
});

Deno.test("parseFlags() parses --node-labels as k=v pairs that accumulate over repeats", () => {
  const o = run([
    "--node-labels=example.com/role=,tier=web",
    "--node-labels",
    "zone=a, node.kubernetes.io/exclude-from-external-load-balancers",
  ]);
  assert.deepEqual(o.nodeLabels, {
    "example.com/role": "",
    tier: "web",
    zone: "a",
    "node.kubernetes.io/exclude-from-external-load-balancers": "",
  });
});

Deno.test("parseFlags() rejects node labels NodeRestriction would refuse or that are malformed", () => {
  const cases: [string, RegExp][] = [
    [
      "--node-labels=kubernetes.io/role=master",
      /unknown 'kubernetes.io' or 'k8s.io' labels.*kubernetes\.io\/role/,
    ],
    ["--node-labels=bad key=x", /invalid node label key 'bad key'/],
    ["--node-labels=tier=-web", /invalid node label value '-web'/],
  ];
  for (const [arg, re] of cases) {
    assert.throws(
      () => parseFlags([arg]),
      (e) => e instanceof FlagError && re.test(e.message),
      arg,
    );
  }
});

Deno.test("parseFlags() parses --register-with-taints key=value:Effect and key:Effect lists", () => {
  const o = run(["--register-with-taints=dedicated=infra:NoSchedule,gpu:NoExecute"]);
  assert.deepEqual(o.registerWithTaints, [
    { key: "dedicated", value: "infra", effect: "NoSchedule" },
    { key: "gpu", effect: "NoExecute" },
  ]);
  const cases: [string, RegExp][] = [
    ["--register-with-taints=a=b:Sometimes", /invalid taint effect: Sometimes/],
    ["--register-with-taints=a=b", /invalid taint spec: a=b/],
    ["--register-with-taints=a=b=c:NoSchedule", /invalid taint spec: a=b=c:NoSchedule/],
    ["--register-with-taints=-a:NoSchedule", /invalid taint spec: -a:NoSchedule/],
  ];
  for (const [arg, re] of cases) {
    assert.throws(
      () => parseFlags([arg]),
      (e) =>
        e instanceof FlagError && /--register-with-taints/.test(e.message) && re.test(e.message),
      arg,
    );
  }
});

Deno.test("parseFlags() follows pflag syntax: bare booleans, shorthands, word separators", () => {
  const o = run([
    "--register-node",
    "--cgroups-per-qos=false",
    // Upstream refuses cgroups-per-qos=false with the default enforcement [pods].
    "--enforce-node-allocatable=",
    "-v",
    "5",
    "--pod_manifest_path=/m",
  ]);
  assert.equal(o.registerNode, true);
  assert.equal(o.cgroupsPerQOS, false);
  assert.deepEqual(o.enforceNodeAllocatable, []);
  assert.equal(o.cgroupRoot, "", "no QoS cgroups and no root: the runtime's default");
  assert.equal(o.verbosity, 5);
  assert.equal(o.podManifestPath, "/m");
  assert.equal(run(["-v4"]).verbosity, 4);
  assert.equal(run(["-v=3"]).verbosity, 3);
  assert.equal(run(["--v=2", "--logging-format=json"]).loggingFormat, "json");
});

Deno.test("parseFlags() lets a map flag replace its default and accumulate over repeats", () => {
  const o = run(["--eviction-hard=memory.available<1Gi", "--eviction-hard=nodefs.available<5%"]);
  assert.deepEqual(o.evictionHard, { "memory.available": "1Gi", "nodefs.available": "5%" });
  const soft = run([
    "--eviction-soft=memory.available<2Gi",
    "--eviction-soft-grace-period=memory.available=1m30s",
  ]);
  assert.deepEqual(soft.evictionSoft, { "memory.available": "2Gi" });
  assert.deepEqual(soft.evictionSoftGracePeriod, { "memory.available": "1m30s" });
});

Deno.test("parseFlags() reports pflag's errors for unknown flags and bad values", () => {
  const cases: [string[], RegExp][] = [
    [["--foo"], /^unknown flag: --foo$/],
    [["--foo=1"], /^unknown flag: --foo$/],
    [["-x"], /^unknown shorthand flag: 'x' in -x$/],
    [["--port"], /^flag needs an argument: --port$/],
    [["-v"], /^flag needs an argument: 'v' in -v$/],
    [["--port=abc"], /invalid argument "abc" for "--port" flag: strconv.ParseInt/],
    [["--max-pods=99999999999"], /value out of range/],
    [["--register-node=maybe"], /invalid argument "maybe" for "--register-node" flag/],
    [
      ["--sync-frequency=soon"],
      /invalid argument "soon" for "--sync-frequency" flag: time: invalid duration/,
    ],
    [["--address=localhost"], /"localhost" is not a valid IP address/],
    [["--kube-reserved=cpu"], /malformed pair, expect string=string/],
    [["--eviction-hard=memory.available=1Gi"], /malformed pair, expect string<string/],
    [["stray"], /unknown command "stray"/],
    [["--node-ip=node1"], /bad --node-ip "node1"/],
  ];
  for (const [argv, re] of cases) {
    assert.throws(
      () => parseFlags(argv),
      (e) => e instanceof FlagError && re.test(e.message),
      argv.join(" "),
    );
  }
  assert.equal(run(["--node-ip=10.0.0.1,fd00::1"]).nodeIp, "10.0.0.1,fd00::1", "dual-stack");
});

Deno.test("parseFlags() validates the merged values with upstream's field and flag names", () => {
  const cases: [string[], RegExp][] = [
    [["--port=70000"], /port \(--port\) 70000 must be between 1 and 65535, inclusive/],
    [["--read-only-port=-1"], /readOnlyPort \(--read-only-port\) -1 must be between 0 and 65535/],
    [["--healthz-port=65536"], /healthzPort \(--healthz-port\) 65536 must be between 1 and 65535/],
    [
      ["--image-gc-low-threshold=90"],
      /imageGCLowThresholdPercent \(--image-gc-low-threshold\) 90 must be less than/,
    ],
    [["--max-pods=-1"], /maxPods \(--max-pods\) -1 must not be a negative number/],
    [["--eviction-hard=memory.avail<1Gi"], /unsupported eviction signal memory\.avail/],
    [["--eviction-hard=nodefs.available<120%"], /must be >= 0% and <= 100%/],
    [
      ["--eviction-soft=memory.available<1Gi"],
      /grace period must be specified for the soft eviction threshold memory\.available/,
    ],
    [["--kube-reserved=gpu=1"], /kubeReserved\["gpu"\]: cannot reserve "gpu" resource/],
    [["--cgroup-driver=cgroupv2"], /cgroupDriver \(--cgroup-driver\) "cgroupv2" must be one of/],
    [
      ["--cluster-dns=10.0.0.300"],
      /clusterDNS \(--cluster-dns\) "10.0.0.300" is not a valid IP address/,
    ],
    [["--logging-format=xml"], /logging.format: Unsupported value: "xml"/],
    [
      ["--node-status-update-frequency=0s"],
      /nodeStatusUpdateFrequency \(--node-status-update-frequency\) 0s must be greater than 0/,
    ],
  ];
  for (const [argv, re] of cases) {
    assert.throws(
      () => parseFlags(argv),
      (e) => e instanceof ConfigValidationError && re.test(e.message),
      argv.join(" "),
    );
  }
});

Deno.test("parseFlags() warns for deprecated flags and for flags denolet ignores", () => {
  const o = run([
    "--max-pods=10",
    "--max-pods=20",
    "--fail-swap-on=false",
    "--cloud-provider=external",
  ]);
  assert.equal(o.maxPods, 20, "the last value wins");
  assert.deepEqual(o.warnings.filter((w) => w.startsWith("Flag --max-pods")).length, 1);
  assert.match(
    o.warnings.join("\n"),
    /Flag --max-pods has been deprecated, This parameter should be set via the config file/,
  );
  assert.ok(
    o.warnings.includes("flag --fail-swap-on is not implemented by denolet and is ignored"),
  );
  assert.ok(
    o.warnings.includes("flag --cloud-provider is not implemented by denolet and is ignored"),
  );
  assert.ok(!o.warnings.some((w) => w.includes("--cloud-provider has been deprecated")));
});

Deno.test("parseFlags() answers --help and -h, after reporting bad flags as pflag does", () => {
  for (const argv of [["--help"], ["-h"], ["--port=1", "--help"]]) {
    assert.equal(parseFlags(argv).kind, "help", argv.join(" "));
  }
  assert.throws(() => parseFlags(["--help", "--nope"]), /unknown flag: --nope/);
});

Deno.test("parseFlags() answers --version with a Kubernetes-style line naming denolet", () => {
  const v = parseFlags(["--version"]);
  if (v.kind !== "version") assert.fail(`--version answered ${v.kind}`);
  assert.match(v.text, /^Kubernetes v\S*denolet/);
  const raw = parseFlags(["--version=raw"]);
  if (raw.kind !== "version") assert.fail(`--version=raw answered ${raw.kind}`);
  assert.match(JSON.parse(raw.text).gitVersion, /denolet/);
  assert.equal(parseFlags(["--version=false"]).kind, "run");
});

Deno.test("helpText() lists every flag in pflag's layout with type, default and deprecation", () => {
  const text = helpText();
  const lines = text.split("\n");
  for (const f of FLAGS) {
    assert.ok(lines.some((l) => l.includes(`--${f.name} `)), `--${f.name} is listed`);
  }
  const line = (name: string) => lines.find((l) => l.startsWith(`      --${name} `))!;
  assert.match(line("kubeconfig"), /^ {6}--kubeconfig string +Path to a kubeconfig file/);
  assert.match(
    line("max-pods"),
    /--max-pods int32 .*\(default 110\) \(DEPRECATED: This parameter should be set via the config file/,
  );
  assert.match(line("read-only-port"), /\(default 10255\)/);
  assert.match(line("root-dir"), /\(default "\/var\/lib\/kubelet"\)$/);
  assert.match(
    line("node-status-update-frequency"),
    /--node-status-update-frequency duration .*\(default 10s\)/,
  );
  assert.match(line("register-node"), /--register-node +Register the node/, "bools show no type");
  assert.match(
    line("eviction-hard"),
    /\(default imagefs.available<15%,memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%\)/,
  );
  assert.match(text, /\n {2}-v, --v Level +number for the log level verbosity\n/);
  assert.match(text, /\n {2}-h, --help +help for denolet/);
  // Usage text starts in one column for every flag.
  const flagLines = lines.filter((l) => /^ {2}(-\w, | {4})--/.test(l));
  const columns = new Set(flagLines.map((l) => {
    const prefix = l.match(/^( {2}-\w, | {6})--[\w-]+( \S+)?/)![0];
    return prefix.length + l.slice(prefix.length).search(/\S/);
  }));
  assert.equal(flagLines.length, FLAGS.length);
  assert.equal(columns.size, 1, "usage starts in one column");
  const names = flagLines.map((l) => l.match(/--([\w-]+)/)![1]!);
  assert.deepEqual(names, [...names].sort(), "sorted by name");
});

Deno.test("parseFlags(): --seccomp-default and --allowed-unsafe-sysctls reach AgentOptions", () => {
  assert.equal(run([]).seccompDefault, false);
  assert.deepEqual(run([]).allowedUnsafeSysctls, []);
  const o = run(["--seccomp-default", "--allowed-unsafe-sysctls=kernel.msg*,net.core.somaxconn"]);
  assert.equal(o.seccompDefault, true);
  assert.deepEqual(o.allowedUnsafeSysctls, ["kernel.msg*", "net.core.somaxconn"]);
  assert.ok(!o.warnings.some((w) => /not implemented/.test(w)), o.warnings.join("\n"));
});

Deno.test("parseFlags(): the deprecated container GC flags set the GC policy, with upstream's warning", () => {
  const o = run([
    "--minimum-container-ttl-duration=1m30s",
    "--maximum-dead-containers-per-container=3",
    "--maximum-dead-containers=-5",
  ]);
  assert.deepEqual(o.containerGC, { minAgeMs: 90_000, maxPerPodContainer: 3, maxContainers: -5 });
  for (const flag of ["minimum-container-ttl-duration", "maximum-dead-containers"]) {
    assert.ok(
      o.warnings.includes(
        `Flag --${flag} has been deprecated, Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.`,
      ),
      o.warnings.join("\n"),
    );
  }
  assert.ok(!o.warnings.some((w) => /not implemented/.test(w)), o.warnings.join("\n"));
  assert.throws(() => run(["--maximum-dead-containers=x"]), FlagError);
});
