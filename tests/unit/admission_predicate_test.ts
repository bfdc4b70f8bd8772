/**
 * The predicate admit handler's rules (lib/admission/predicate.ts, lib/api/scheduling.ts)
 * against upstream's predicate admit handler: a base pod and node, one change
 * per case, the verdict (reason and message as upstream words them).
 */

import assert from "node:assert/strict";
import { admitPod, type PodAdmitResult, PredicateAdmitHandler } from "../../lib/admission/mod.ts";
import type { Node } from "../../lib/api/cluster_types.ts";
import { ConfigAnnotations } from "../../lib/api/pod.ts";
import { podRequests, toleratesTaint } from "../../lib/api/scheduling.ts";
import type { Container, Pod } from "../../lib/api/types.ts";
import { testMachineInfo, testPod } from "../kit/mod.ts";
import { computeNodeResources } from "../../lib/nodestatus/mod.ts";

function node(change: (n: Node) => void = () => {}): Node {
  const n: Node = {
    metadata: {
      name: "node-a",
      labels: { "kubernetes.io/hostname": "node-a", "kubernetes.io/os": "linux", zone: "z1" },
    },
    spec: {},
    status: { allocatable: { cpu: "2", memory: "4Gi", "ephemeral-storage": "10Gi", pods: "3" } },
  };
  change(n);
  return n;
}

function withRequests(requests: Record<string, string>, name = "main"): Container {
  return { name, image: "busybox", resources: { requests } };
}

function pod(uid: string, spec: Partial<Pod["spec"]> = {}, meta: Partial<Pod["metadata"]> = {}) {
  return testPod({ uid, name: uid, spec: { nodeName: "node-a", ...spec }, metadata: meta });
}

const cpu = (q: string) => ({ containers: [withRequests({ cpu: q })] });

interface Case {
  name: string;
  pod: Pod;
  others?: Pod[];
  node?: Node;
  want: PodAdmitResult;
}

const ADMIT: PodAdmitResult = { admit: true };

const cases: Case[] = [
  {
    name: "a pod that fits",
    pod: pod("p", cpu("500m")),
    others: [pod("o", cpu("1"))],
    want: ADMIT,
  },
  {
    name: "cpu beyond what is left",
    pod: pod("p", cpu("1500m")),
    others: [pod("o", cpu("1"))],
    want: {
      admit: false,
      reason: "OutOfcpu",
      message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000",
    },
  },
  {
    name: "memory beyond allocatable",
    pod: pod("p", { containers: [withRequests({ memory: "5Gi" })] }),
    want: {
      admit: false,
      reason: "OutOfmemory",
      message:
        "Node didn't have enough resource: memory, requested: 5368709120, used: 0, capacity: 4294967296",
    },
  },
  {
    name: "maxPods reached (pods are checked before cpu)",
    pod: pod("p", cpu("3")),
    others: [pod("o1"), pod("o2"), pod("o3")],
    want: {
      admit: false,
      reason: "OutOfpods",
      message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
    },
  },
  {
    name: "a node-advertised extended resource beyond its capacity",
    pod: pod("p", { containers: [withRequests({ "example.com/gpu": "2" })] }),
    node: node((n) => (n.status!.allocatable!["example.com/gpu"] = "1")),
    want: {
      admit: false,
      reason: "OutOfexample.com/gpu",
      message:
        "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1",
    },
  },
  {
    name: "an extended resource the node does not advertise is not checked",
    pod: pod("p", { containers: [withRequests({ "example.com/gpu": "2" })] }),
    want: ADMIT,
  },
  {
    name: "hugepages the node does not have",
    pod: pod("p", { containers: [withRequests({ "hugepages-2Mi": "2Mi" })] }),
    want: {
      admit: false,
      reason: "OutOfhugepages-2Mi",
      message:
        "Node didn't have enough resource: hugepages-2Mi, requested: 2097152, used: 0, capacity: 0",
    },
  },
  {
    name: "nodeSelector mismatch",
    pod: pod("p", { nodeSelector: { zone: "z2" } }),
    want: {
      admit: false,
      reason: "NodeAffinity",
      message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    },
  },
  { name: "nodeSelector match", pod: pod("p", { nodeSelector: { zone: "z1" } }), want: ADMIT },
  {
    name: "required node affinity: one term of two matches",
    pod: pod("p", {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: "zone", operator: "In", values: ["z9"] }] },
              { matchFields: [{ key: "metadata.name", operator: "In", values: ["node-a"] }] },
            ],
          },
        },
      },
    }),
    want: ADMIT,
  },
  {
    name: "required node affinity: NotIn and Gt fail",
    pod: pod("p", {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{
              matchExpressions: [
                { key: "zone", operator: "NotIn", values: ["z1"] },
              ],
            }, { matchExpressions: [{ key: "zone", operator: "Gt", values: ["1"] }] }],
          },
        },
      },
    }),
    want: {
      admit: false,
      reason: "NodeAffinity",
      message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    },
  },
  {
    name: "spec.nodeName of another node",
    pod: pod("p", { nodeName: "node-b" }),
    want: {
      admit: false,
      reason: "NodeName",
      message: "Predicate NodeName failed: node(s) didn't match the requested node name",
    },
  },
  {
    name: "a host port another pod holds (0.0.0.0 clashes with any IP)",
    pod: pod("p", {
      containers: [{
        name: "main",
        image: "busybox",
        ports: [{ containerPort: 80, hostPort: 8080, hostIP: "127.0.0.1" }],
      }],
    }),
    others: [pod("o", {
      containers: [{
        name: "main",
        image: "busybox",
        ports: [{ containerPort: 80, hostPort: 8080 }],
      }],
    })],
    want: {
      admit: false,
      reason: "NodePorts",
      message:
        "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
    },
  },
  {
    name: "the same host port on another protocol",
    pod: pod("p", {
      containers: [{
        name: "main",
        image: "busybox",
        ports: [{ containerPort: 53, hostPort: 53, protocol: "UDP" }],
      }],
    }),
    others: [pod("o", {
      containers: [{
        name: "main",
        image: "busybox",
        ports: [{ containerPort: 53, hostPort: 53 }],
      }],
    })],
    want: ADMIT,
  },
  {
    name: "an untolerated NoExecute taint",
    pod: pod("p"),
    node: node((n) => (n.spec!.taints = [{ key: "dedicated", value: "db", effect: "NoExecute" }])),
    want: {
      admit: false,
      reason: "TaintToleration",
      message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
    },
  },
  {
    name: "a NoSchedule taint is the scheduler's business",
    pod: pod("p"),
    node: node((n) => (n.spec!.taints = [{ key: "dedicated", effect: "NoSchedule" }])),
    want: ADMIT,
  },
  {
    name: "a tolerated NoExecute taint",
    pod: pod("p", { tolerations: [{ key: "dedicated", operator: "Equal", value: "db" }] }),
    node: node((n) => (n.spec!.taints = [{ key: "dedicated", value: "db", effect: "NoExecute" }])),
    want: ADMIT,
  },
  {
    name: "a static pod ignores taints",
    pod: pod("p", {}, { annotations: { [ConfigAnnotations.source]: "file" } }),
    node: node((n) => (n.spec!.taints = [{ key: "dedicated", effect: "NoExecute" }])),
    want: ADMIT,
  },
  {
    name: "a kubernetes.io/os label for another OS",
    pod: pod("p", {}, { labels: { "kubernetes.io/os": "windows" } }),
    want: {
      admit: false,
      reason: "PodOSSelectorNodeLabelDoesNotMatch",
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    },
  },
  {
    name: "spec.os for another OS",
    pod: pod("p", { os: { name: "windows" } }),
    want: {
      admit: false,
      reason: "PodOSNotSupported",
      message: "Failed to admit pod as the OS field doesn't match node OS",
    },
  },
  {
    name: "supplementalGroupsPolicy Strict on a node that does not report support",
    pod: pod("p", { securityContext: { supplementalGroupsPolicy: "Strict" } }),
    want: {
      admit: false,
      reason: "SupplementalGroupsPolicyNotSupported",
      message: "SupplementalGroupsPolicy=Strict is not supported in this node",
    },
  },
  {
    name: "supplementalGroupsPolicy Strict on a node that reports support",
    pod: pod("p", { securityContext: { supplementalGroupsPolicy: "Strict" } }),
    node: node((n) => (n.status!.features = { supplementalGroupsPolicy: true })),
    want: ADMIT,
  },
];

for (const c of cases) {
  Deno.test(`admitPod(): ${c.name}`, () => {
    assert.deepEqual(admitPod(c.pod, c.others ?? [], c.node ?? node()), c.want);
  });
}

Deno.test("admitPod(): with localStorageCapacityIsolation false the Node has no ephemeral-storage, so a pod requesting it does not fit", () => {
  const machine = testMachineInfo();
  const off = computeNodeResources(machine, { maxPods: 110, localStorageCapacityIsolation: false });
  const n = node((n) => (n.status!.allocatable = off.allocatable));
  assert.deepEqual(admitPod(pod("p", cpu("100m")), [], n), ADMIT);
  assert.deepEqual(
    admitPod(pod("p", { containers: [withRequests({ "ephemeral-storage": "1Gi" })] }), [], n),
    {
      admit: false,
      reason: "OutOfephemeral-storage",
      message:
        "Node didn't have enough resource: ephemeral-storage, requested: 1073741824, used: 0, capacity: 0",
    },
  );
  const on = computeNodeResources(machine, { maxPods: 110 });
  const fits = node((n) => (n.status!.allocatable = on.allocatable));
  assert.deepEqual(
    admitPod(pod("p", { containers: [withRequests({ "ephemeral-storage": "1Gi" })] }), [], fits),
    ADMIT,
  );
});

Deno.test("podRequests() adds sidecars, takes the largest init container's peak, and overhead", () => {
  const p = testPod({
    spec: {
      containers: [withRequests({ cpu: "100m", memory: "64Mi" })],
      initContainers: [
        { ...withRequests({ cpu: "200m" }, "sidecar"), restartPolicy: "Always" },
        withRequests({ cpu: "500m", memory: "32Mi" }, "init"),
      ],
      overhead: { cpu: "10m" },
    },
  });
  // containers 100m + sidecar 200m = 300m; the init container runs beside the sidecar: 700m.
  assert.equal(podRequests(p).get("cpu"), 710);
  assert.equal(podRequests(p).get("memory"), 64 * 1024 * 1024);
});

Deno.test("toleratesTaint() follows upstream: empty key with Exists tolerates every taint", () => {
  const taint = { key: "k", value: "v", effect: "NoExecute" as const };
  const table: [Parameters<typeof toleratesTaint>[0], boolean][] = [
    [{ operator: "Exists" }, true],
    [{ key: "k", operator: "Exists", effect: "NoSchedule" }, false],
    [{ key: "k", value: "v" }, true],
    [{ key: "k", value: "w" }, false],
    [{ key: "other", operator: "Exists" }, false],
  ];
  for (const [t, want] of table) assert.equal(toleratesTaint(t, taint), want, JSON.stringify(t));
});

Deno.test("PredicateAdmitHandler admits every pod before there is a Node, then checks against the Node it is given", () => {
  let known: Node | undefined = undefined;
  const handler = new PredicateAdmitHandler(() => known);
  const big = pod("big", cpu("64"));
  assert.deepEqual(handler.admit(big, []), { admit: true });
  known = node();
  const verdict = handler.admit(big, []);
  assert.equal(verdict.admit, false);
  assert.deepEqual(verdict, admitPod(big, [], known));
});
