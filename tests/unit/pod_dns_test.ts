/**
 * The pod's resolv.conf and hostname against upstream's own tables
 * (pkg/kubelet/network/dns/dns_test.go, kubelet_pods_test.go).
 */

import assert from "node:assert/strict";
import type { Pod, PodDNSConfig } from "../../lib/api/types.ts";
import {
  checkResolvConfLimits,
  type DNSSettings,
  parseResolvConf,
  podDNS,
  podHostnameAndDomain,
  searchesFittingLimits,
} from "../../lib/kuberuntime/pod_dns.ts";
import type { RuntimeService } from "../../lib/cri/types.ts";
import {
  recordingEvents,
  runtimePodStatus,
  testPod,
  unitRuntimeManager,
  withTempDir,
} from "../kit/mod.ts";

function pod(spec: Partial<Pod["spec"]> = {}): Pod {
  return testPod({ name: "test_pod", namespace: "testNS", uid: "u1", spec });
}

const sorted = (xs: readonly string[] = []) => [...xs].sort();

Deno.test("parseResolvConf() reads resolv.conf as upstream's TestParseResolvConf table", () => {
  // [data, nameservers, searches, options (any order)]
  const ok: [string, string[], string[], string[]][] = [
    ["", [], [], []],
    [" ", [], [], []],
    ["\n", [], [], []],
    ["\t\n\t", [], [], []],
    ["#comment\n", [], [], []],
    [" #comment\n", [], [], []],
    ["#comment\n#comment", [], [], []],
    ["#comment\nnameserver 1.2.3.4\nsearch", ["1.2.3.4"], [], []],
    ["nameserver 1.2.3.4", ["1.2.3.4"], [], []],
    [" nameserver 1.2.3.4", ["1.2.3.4"], [], []],
    ["\tnameserver 1.2.3.4", ["1.2.3.4"], [], []],
    ["nameserver\t1.2.3.4", ["1.2.3.4"], [], []],
    ["nameserver \t 1.2.3.4", ["1.2.3.4"], [], []],
    ["nameserver 1.2.3.4\nnameserver 5.6.7.8", ["1.2.3.4", "5.6.7.8"], [], []],
    ["nameserver 1.2.3.4 #comment", ["1.2.3.4"], [], []],
    ["search ", [], [], []],
    ["search .", [], [], []],
    ["search . foo", [], ["foo"], []],
    ["search foo .", [], ["foo"], []],
    ["search foo .  bar", [], ["foo", "bar"], []],
    ["search foo", [], ["foo"], []],
    ["search foo bar", [], ["foo", "bar"], []],
    ["search foo. bar", [], ["foo", "bar"], []],
    ["search foo bar bat\n", [], ["foo", "bar", "bat"], []],
    ["search foo\nsearch bar", [], ["bar"], []],
    ["nameserver 1.2.3.4\nsearch foo bar", ["1.2.3.4"], ["foo", "bar"], []],
    [
      "nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar",
      [
        "1.2.3.4",
        "5.6.7.8",
      ],
      ["bar"],
      [],
    ],
    ["#comment\nnameserver 1.2.3.4\n#comment\nsearch foo\ncomment", ["1.2.3.4"], ["foo"], []],
    ["options ", [], [], []],
    ["options ndots:5 attempts:2", [], [], ["ndots:5", "attempts:2"]],
    ["options ndots:1 ndots:5 attempts:2", [], [], ["ndots:5", "attempts:2"]],
    ["options ndots:1 edns0 attempts:2 single-request-reopen", [], [], [
      "edns0",
      "attempts:2",
      "single-request-reopen",
      "ndots:1",
    ]],
    ["options ndots:1\noptions ndots:5 attempts:3", [], [], ["ndots:5", "attempts:3"]],
    ["options ndots:1 timeout:3 timeout:1 attempts:3\noptions ndots:5", [], [], [
      "ndots:5",
      "timeout:1",
      "attempts:3",
    ]],
    ["options ndots:1 attempts:3\noptions ndots:1 attempts:3 ndots:5", [], [], [
      "ndots:5",
      "attempts:3",
    ]],
    [
      "nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar\noptions ndots:5 attempts:4",
      [
        "1.2.3.4",
        "5.6.7.8",
      ],
      ["bar"],
      ["ndots:5", "attempts:4"],
    ],
  ];
  for (const [data, servers, searches, options] of ok) {
    const got = parseResolvConf(data);
    assert.deepEqual(got.servers, servers, JSON.stringify(data));
    assert.deepEqual(got.searches, searches, JSON.stringify(data));
    assert.deepEqual(sorted(got.options), sorted(options), JSON.stringify(data));
  }
  for (const bad of ["#comment\nnameserver", "#comment\nnameserver\nsearch"]) {
    assert.throws(() => parseResolvConf(bad), /nameserver list is empty/, JSON.stringify(bad));
  }
});

Deno.test("searchesFittingLimits() cuts the search line as upstream's TestFormDNSSearchFitsLimits table", () => {
  // 2048 = 128 + 127 * 15 + 15 spaces
  const list2048 = ["A".repeat(128), ...Array<string>(15).fill("A".repeat(127))];
  const base = ["testNS.svc.TEST", "svc.TEST", "TEST"];
  const n = (k: number) => Array.from({ length: k }, (_, i) => String(i + 4));
  const cases: [string, string[], string[], boolean][] = [
    ["valid: 3 search paths", base, base, false],
    ["valid: 5 search paths", [...base, "AAA", "BBB"], [...base, "AAA", "BBB"], false],
    [
      "invalid: a 256-character search path",
      [...base, "AAA", "B".repeat(256), "BBB"],
      [...base, "AAA", "BBB"],
      true,
    ],
    ["valid: 2048 characters in search path list", list2048, list2048, false],
    ["invalid: 2050 characters in search path list", [...list2048, "B"], list2048, true],
    ["valid: 7 search paths", [...base, "AAA", "BBB", "CCC", "DDD"], [
      ...base,
      "AAA",
      "BBB",
      "CCC",
      "DDD",
    ], false],
    ["valid: 32 search paths", [...base, ...n(29)], [...base, ...n(29)], false],
    ["invalid: 33 search paths", [...base, ...n(30)], [...base, ...n(29)], true],
  ];
  for (const [desc, input, want, cut] of cases) {
    assert.deepEqual(searchesFittingLimits(input), { searches: want, cut }, desc);
  }
});

const clusterSettings: DNSSettings = {
  clusterDNS: ["10.0.0.10"],
  clusterDomain: "kubernetes.io",
  resolvConf: "/etc/resolv.conf",
  nodeIPs: [],
};
const testHostNameserver = "8.8.8.8";
const testHostDomain = "host.domain";
const hostResolvConf = `nameserver ${testHostNameserver}\nsearch ${testHostDomain}\n`;
const ndots3: PodDNSConfig = {
  nameservers: ["10.0.0.11"],
  searches: ["my.domain"],
  options: [{ name: "ndots", value: "3" }, { name: "debug" }],
};

Deno.test("podDNS() merges dnsConfig for every policy as upstream's TestGetPodDNSCustom table", () => {
  const clusterSearch = ["testNS.svc.kubernetes.io", "svc.kubernetes.io", "kubernetes.io"];
  const cases: [
    string,
    Partial<Pod["spec"]>,
    { servers: string[]; searches: string[]; options: string[] },
  ][] = [
    ["None without dnsConfig has empty settings", { dnsPolicy: "None" }, {
      servers: [],
      searches: [],
      options: [],
    }],
    ["None with dnsConfig has the dnsConfig", {
      dnsPolicy: "None",
      dnsConfig: {
        nameservers: ["203.0.113.1"],
        searches: ["my.domain", "second.domain"],
        options: [{ name: "ndots", value: "3" }, { name: "debug" }],
      },
    }, {
      servers: ["203.0.113.1"],
      searches: ["my.domain", "second.domain"],
      options: ["ndots:3", "debug"],
    }],
    ["ClusterFirst with dnsConfig", { dnsPolicy: "ClusterFirst", dnsConfig: ndots3 }, {
      servers: ["10.0.0.10", "10.0.0.11"],
      searches: [...clusterSearch, testHostDomain, "my.domain"],
      options: ["ndots:3", "debug"],
    }],
    ["ClusterFirstWithHostNet with dnsConfig", {
      hostNetwork: true,
      dnsPolicy: "ClusterFirstWithHostNet",
      dnsConfig: ndots3,
    }, {
      servers: ["10.0.0.10", "10.0.0.11"],
      searches: [...clusterSearch, testHostDomain, "my.domain"],
      options: ["ndots:3", "debug"],
    }],
    ["Default with dnsConfig", { dnsPolicy: "Default", dnsConfig: ndots3 }, {
      servers: [testHostNameserver, "10.0.0.11"],
      searches: [testHostDomain, "my.domain"],
      options: ["ndots:3", "debug"],
    }],
    // Not in upstream's table, from the same code: without dnsConfig.
    ["ClusterFirst on the pod network", { dnsPolicy: "ClusterFirst" }, {
      servers: ["10.0.0.10"],
      searches: [...clusterSearch, testHostDomain],
      options: ["ndots:5"],
    }],
    ["ClusterFirst on the host network falls back to Default", {
      dnsPolicy: "ClusterFirst",
      hostNetwork: true,
    }, { servers: [testHostNameserver], searches: [testHostDomain], options: [] }],
  ];
  for (const [desc, spec, want] of cases) {
    const { config, warnings } = podDNS(pod(spec), clusterSettings, hostResolvConf);
    assert.deepEqual(config.servers, want.servers, desc);
    assert.deepEqual(config.searches, want.searches, desc);
    assert.deepEqual(sorted(config.options), sorted(want.options), desc);
    assert.deepEqual(warnings, [], desc);
  }
});

Deno.test('podDNS() with resolvConf "" gives 127.0.0.1 (or ::1) and search "." as upstream\'s TestGetPodDNS', () => {
  const settings = { ...clusterSettings, resolvConf: "" };
  const hostNet = podDNS(pod({ dnsPolicy: "ClusterFirst", hostNetwork: true }), settings).config;
  assert.deepEqual(hostNet, { servers: ["127.0.0.1"], searches: ["."], options: [] });
  const dflt = podDNS(pod({ dnsPolicy: "Default" }), settings).config;
  assert.deepEqual(dflt, { servers: ["127.0.0.1"], searches: ["."], options: [] });
  // ClusterFirst still prepends the cluster's paths (to no host paths).
  const cluster = podDNS(pod({ dnsPolicy: "ClusterFirstWithHostNet", hostNetwork: true }), settings)
    .config;
  assert.deepEqual(cluster.servers, ["10.0.0.10"]);
  assert.equal(cluster.searches?.[0], "testNS.svc.kubernetes.io");
  // One loopback nameserver per --node-ip, of its family.
  const dual = podDNS(pod({ dnsPolicy: "Default" }), {
    ...settings,
    nodeIPs: ["192.0.2.1", "2001:db8::1"],
  }).config;
  assert.deepEqual(dual.servers, ["127.0.0.1", "::1"]);
});

Deno.test("podDNS() passes a local stub resolver (127.0.0.53) through unchanged, as upstream", () => {
  const stub = "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch .\n";
  const dflt = podDNS(pod({ dnsPolicy: "Default" }), clusterSettings, stub).config;
  assert.deepEqual(dflt.servers, ["127.0.0.53"]);
  assert.deepEqual(sorted(dflt.options), ["edns0", "trust-ad"]);
  assert.deepEqual(dflt.searches, []);
  // ClusterFirst replaces the host's nameservers with clusterDNS.
  const cluster = podDNS(pod({ dnsPolicy: "ClusterFirst" }), clusterSettings, stub).config;
  assert.deepEqual(cluster.servers, ["10.0.0.10"]);
});

Deno.test("podDNS() falls back to Default without clusterDNS and warns the pod and the node (MissingClusterDNS)", () => {
  const { config, warnings } = podDNS(
    pod({ dnsPolicy: "ClusterFirst" }),
    { ...clusterSettings, clusterDNS: [] },
    hostResolvConf,
  );
  assert.deepEqual(config, {
    servers: [testHostNameserver],
    searches: [testHostDomain],
    options: [],
  });
  const msg =
    `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`;
  assert.deepEqual(warnings, [
    { about: "node", reason: "MissingClusterDNS", message: msg },
    { about: "pod", reason: "MissingClusterDNS", message: `pod: "test_pod_testNS(u1)". ${msg}` },
  ]);
});

Deno.test("podDNS() cuts to 3 nameservers and the search limits with DNSConfigForming warnings", () => {
  const { config, warnings } = podDNS(
    pod({
      dnsPolicy: "Default",
      dnsConfig: { nameservers: ["10.0.0.10", "1.2.3.4", "5.6.7.8"], searches: ["B".repeat(254)] },
    }),
    clusterSettings,
    hostResolvConf,
  );
  assert.deepEqual(config.servers, [testHostNameserver, "10.0.0.10", "1.2.3.4"]);
  assert.deepEqual(config.searches, [testHostDomain]);
  assert.deepEqual(warnings, [
    {
      about: "pod",
      reason: "DNSConfigForming",
      message:
        "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 8.8.8.8 10.0.0.10 1.2.3.4",
    },
    {
      about: "pod",
      reason: "DNSConfigForming",
      message:
        "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: host.domain",
    },
  ]);
});

Deno.test("podDNS() treats an unknown dnsPolicy as ClusterFirst, as upstream", () => {
  const { config } = podDNS(pod({ dnsPolicy: "invalidPolicy" }), clusterSettings, hostResolvConf);
  assert.deepEqual(config.servers, ["10.0.0.10"]);
});

Deno.test("checkResolvConfLimits() warns about the node's resolv.conf as upstream's CheckLimitsForResolvConf", () => {
  const settings = clusterSettings;
  const search = (k: number) =>
    `search ${Array.from({ length: k }, (_, i) => `d${i}`).join(" ")}\n`;
  assert.equal(checkResolvConfLimits(settings, search(29)), undefined);
  assert.deepEqual(checkResolvConfLimits(settings, search(30)), {
    about: "node",
    reason: "CheckLimitsForResolvConf",
    message:
      "Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 29 domains!",
  });
  assert.equal(checkResolvConfLimits({ ...settings, clusterDomain: "" }, search(30)), undefined);
  assert.match(
    checkResolvConfLimits(settings, `search ${"a".repeat(254)}\n`)!.message,
    /^Resolv\.conf file "\/etc\/resolv\.conf" contains a search path which length is more than allowed 253 chars!$/,
  );
  const long = `search ${Array<string>(10).fill("a".repeat(250)).join(" ")}\n`;
  assert.match(
    checkResolvConfLimits(settings, long)!.message,
    /contains search line which length is more than allowed 2048 chars!$/,
  );
  const missing = new Error("open /nope: no such file or directory");
  assert.equal(checkResolvConfLimits(settings, missing)!.message, missing.message);
});

Deno.test("podHostnameAndDomain() forms the hostname and domain as upstream's GeneratePodHostNameAndDomain", () => {
  assert.deepEqual(podHostnameAndDomain(pod(), "cluster.local"), {
    hostname: "test_pod",
    domain: "",
  });
  assert.deepEqual(
    podHostnameAndDomain(pod({ hostname: "db-0", subdomain: "db" }), "cluster.local"),
    { hostname: "db-0", domain: "db.testNS.svc.cluster.local" },
  );
  // Upstream formats the domain even without a clusterDomain.
  assert.deepEqual(podHostnameAndDomain(pod({ subdomain: "db" }), ""), {
    hostname: "test_pod",
    domain: "db.testNS.svc.",
  });
  // hostnameOverride wins and has no domain.
  assert.deepEqual(
    podHostnameAndDomain(
      pod({ hostname: "db-0", subdomain: "db", hostnameOverride: "a.b.c" }),
      "x",
    ),
    { hostname: "a.b.c", domain: "" },
  );
  assert.throws(
    () => podHostnameAndDomain(pod({ hostname: "Bad_Name" }), "x"),
    /pod Hostname "Bad_Name" is not a valid DNS label/,
  );
  assert.throws(
    () => podHostnameAndDomain(pod({ subdomain: "a.b" }), "x"),
    /pod Subdomain "a\.b" is not a valid DNS label/,
  );
  assert.throws(
    () => podHostnameAndDomain(pod({ hostnameOverride: "-x" }), "x"),
    /pod HostnameOverride "-x" is not a valid DNS subdomain/,
  );
});

Deno.test("KubeRuntimeManager.checkResolvConfLimits() records CheckLimitsForResolvConf about the node", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/resolv.conf`;
    const search = Array.from({ length: 30 }, (_, i) => `d${i}.example`).join(" ");
    await Deno.writeTextFile(file, `nameserver 10.0.0.2\nsearch ${search}\n`);
    const events = recordingEvents();
    const manager = (resolvConf: string) =>
      unitRuntimeManager({} as RuntimeService, {
        events,
        resolvConf,
        clusterDomain: "cluster.local",
        nodeName: "node-1",
      });
    await manager(file).checkResolvConfLimits();
    assert.deepEqual(events.got, [{
      ref: { kind: "Node", name: "node-1", uid: "node-1" },
      type: "Warning",
      reason: "CheckLimitsForResolvConf",
      message:
        `Resolv.conf file '${file}' contains search line consisting of more than 29 domains!`,
    }]);
    // resolvConf "" is not checked; a missing file is an event of its own.
    await manager("").checkResolvConfLimits();
    assert.equal(events.got.length, 1);
    await manager(`${dir}/missing`).checkResolvConfLimits();
    assert.equal(events.got.length, 2);
    assert.equal(events.got[1]!.reason, "CheckLimitsForResolvConf");
  });
});

Deno.test("syncPod() fails a new sandbox whose DNS or hostname cannot be formed, with FailedCreatePodSandBox", async () => {
  await withTempDir(async (dir) => {
    const events = recordingEvents();
    // No CRI call is reached: the config fails first.
    const manager = unitRuntimeManager({} as RuntimeService, {
      events,
      rootDir: `${dir}/root`,
      podLogsDir: `${dir}/logs`,
      resolvConf: `${dir}/missing-resolv.conf`,
      clusterDomain: "cluster.local",
    });
    const p = pod({ dnsPolicy: "Default" });
    const res = await manager.syncPod(
      p,
      runtimePodStatus({ uid: "u1", sandboxes: [] }),
      new AbortController().signal,
    );
    assert.equal(res.actions.createSandbox, true);
    assert.deepEqual(res.steps.map((s) => [s.action, s.error?.reason]), [
      ["CreatePodSandbox", "CreatePodSandboxError"],
    ]);
    assert.deepEqual(events.got.map((e) => [e.reason, e.ref.name]), [
      ["FailedCreatePodSandBox", "test_pod"],
    ]);
    assert.match(
      events.got[0]!.message,
      /^Failed to create pod sandbox: failed to read resolv\.conf ".*\/missing-resolv\.conf"/,
    );
  });
});
