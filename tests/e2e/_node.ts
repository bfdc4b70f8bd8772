/**
 * One denolet node joined to a real control plane, as the e2e tests of the
 * secure port need it: a cluster (etcd + kube-apiserver + controller-manager),
 * a private containerd, a test host whose address is the node IP (the
 * apiserver refuses to proxy to a loopback node address), and denolet with a
 * config file whose authentication trusts the cluster CA, serving its secure
 * port on every address (the node IP for the apiserver, loopback for curl).
 */

import {
  createCpuCgroup,
  removeCgroupParent,
  startTestHost,
  startTestRuntime,
  type TestHost,
  type TestRuntime,
} from "../harness/mod.ts";
import { startUpstreamKubeletOnOwnDirs, upstreamKubeletBin } from "../harness/upstream_kubelet.ts";
import type { Node } from "../../lib/api/cluster_types.ts";
import type { Container, Pod, PodSpec } from "../../lib/api/types.ts";
import { type AgentProcess, startAgent } from "../integration/_agent.ts";
import { freePort, waitFor } from "../kit/mod.ts";
import { bootstrapKubeconfig } from "./_bootstrap.ts";
import { type Cluster, e2eBinDir, startCluster, type StartClusterOptions } from "./_cluster.ts";

/** The node's name in every e2e test that joins one. */
export const NODE = "testnode";

/**
 * A pod bound to {@link NODE} whose one container, `main`, runs the runtime's local
 * busybox (`sleep 3600` unless the container overrides say otherwise), with 1 s of
 * grace.
 * @param rt the runtime whose images the node has
 * @param name the pod's name
 * @param namespace its namespace
 * @param more the container's fields, then the spec's, over the defaults
 */
export function busyboxPod(
  rt: TestRuntime,
  name: string,
  namespace: string,
  more: { container?: Partial<Container>; spec?: Partial<PodSpec> } = {},
): Pod {
  return {
    metadata: { name, namespace },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: "main",
        image: rt.images.busybox,
        imagePullPolicy: "Never",
        command: ["sleep", "3600"],
        ...more.container,
      }],
      ...more.spec,
    },
  };
}

/** A core/v1 Event, the fields the tests read. */
export interface ClusterEvent {
  type: string;
  reason: string;
  message: string;
  source?: { component?: string; host?: string };
  involvedObject: { kind: string; name: string };
}

/** Options of {@link startNode}. */
export interface StartNodeOptions {
  /** Names the runtime and the scratch dir. */
  name: string;
  cluster?: StartClusterOptions;
  /** Fields merged into the KubeletConfiguration (its `authentication.x509` is set here). */
  config?: Record<string, unknown>;
  /** Registries the node's containerd reaches over plain http (host → URL). */
  plainHttpRegistries?: Readonly<Record<string, string>>;
  /** Runs the node's containerd in a cpu cgroup of its own (tests/harness's `ownCpuCgroup`). */
  runtimeOwnCpuCgroup?: boolean;
  /**
   * Runs the agent in a cpu cgroup of its own (`<cgroupParent>-agent`, v1 cpu hierarchy),
   * as kubelet.service has on a systemd node; else it shares the test's, and with the
   * kernel's autogroups the CPU share of one session with the apiserver, etcd and the test.
   * Kept across {@link TestNode.restartAgent}.
   */
  agentOwnCpuCgroup?: boolean;
  /**
   * Which kubelet runs the node: denolet (the default) or the upstream kubelet that
   * tools/e2e/build.sh built, for a figure to compare with. The upstream kubelet gets the
   * same config fields (over tests/harness `startUpstreamKubelet`'s, its anonymous
   * loopback ports included, and a sync frequency of 1 m, the default denolet runs with
   * here), kubeconfig, node IP and `--housekeeping-interval`; not with `bootstrap` or
   * `runtimeEndpoint`, and {@link TestNode.restartAgent} refuses it.
   */
  agentKind?: "denolet" | "upstream";
  /** Wait for the Node to be Ready before returning (default true). */
  awaitReady?: boolean;
  /**
   * Join by TLS bootstrap, as `kubeadm join`: the agent gets a bootstrap kubeconfig
   * (tests/e2e/_bootstrap.ts) and a `--kubeconfig` that does not exist yet; the cluster
   * runs with `tlsBootstrap` (its `signingDuration` from `cluster.tlsBootstrap`).
   */
  bootstrap?: boolean;
  /**
   * The agent's `--container-runtime-endpoint`, given the node's runtime once it runs
   * (default: the runtime's own socket), e.g. a fault proxy in front of it
   * (tests/faults/_cri_proxy.ts). Kept across {@link TestNode.restartAgent}.
   */
  runtimeEndpoint?: (runtime: TestRuntime) => string | Promise<string>;
  /**
   * Where the agent's kubeconfig points, asked once the cluster runs (default: its
   * apiserver), e.g. a fault proxy in front of it; not with `bootstrap`.
   */
  agentServer?: (cluster: Cluster) => Promise<string>;
}

/** A started node; `stop()` tears everything down in order, whatever failed. */
export interface TestNode {
  cluster: Cluster;
  runtime: TestRuntime;
  host: TestHost;
  /** The agent now running (replaced by {@link TestNode.restartAgent}). */
  agent: AgentProcess;
  /** The secure port, the same across restarts. */
  port: number;
  /** The node IP (the test host's address). */
  nodeIP: string;
  /** The agent's arguments (config, port, kubeconfig, node IP, address). */
  agentArgs: string[];
  scratch: string;
  /** The agent's log, for assertion messages. */
  log(): string;
  /**
   * Stops the agent (SIGTERM; it must exit 0) and starts it again on the same dirs and
   * arguments. With `kill`, SIGKILLs it instead (a crash: no clean-up, any exit status).
   *
   * @throws Error with the agent's log when it did not exit 0 on SIGTERM
   */
  restartAgent(opts?: { kill?: boolean }): Promise<AgentProcess>;
  /** Creates a namespace with a random name; resolves once its default service account exists. */
  namespace(): Promise<string>;
  /**
   * The Events about the object `name` in `ns` (of one `reason` when given), as kubectl
   * lists them.
   * @throws Error with kubectl's stderr when it fails
   */
  events(ns: string, name: string, reason?: string): Promise<ClusterEvent[]>;
  /**
   * Applies a pod (apiVersion and kind added; bind it with `spec.nodeName`); resolves
   * when it is Running with every container ready.
   */
  runPod(pod: Pod): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a cluster, a runtime and denolet joined as {@link NODE}; resolves once the
 * Node is Ready.
 */
export async function startNode(opts: StartNodeOptions): Promise<TestNode> {
  const scratch = await Deno.makeTempDir({ prefix: `denolet-e2e-${opts.name}-` });
  let cluster: Cluster | undefined;
  let runtime: TestRuntime | undefined;
  let host: TestHost | undefined;
  let agent: AgentProcess | undefined;
  let agentCgroup: string | undefined;
  /** Moves the agent (all its threads) into its own cpu cgroup, when asked for. */
  const placeAgent = (a: AgentProcess) => {
    if (!opts.agentOwnCpuCgroup || !runtime) return;
    agentCgroup = `${runtime.cgroupParent}-agent`;
    for (const procs of createCpuCgroup(agentCgroup)) {
      Deno.writeTextFileSync(procs, String(a.pid));
    }
  };
  const stop = async () => {
    await agent?.stop().catch(() => {});
    if (agentCgroup) await removeCgroupParent(agentCgroup).catch(() => {});
    await runtime?.stop().catch(() => {});
    await agent?.removeDirs().catch(() => {});
    await cluster?.stop().catch(() => {});
    await host?.stop().catch(() => {});
    await Deno.remove(scratch, { recursive: true }).catch(() => {});
  };
  const upstream = opts.agentKind === "upstream";
  if (upstream && (opts.bootstrap || opts.runtimeEndpoint)) {
    throw new Error("startNode: bootstrap and runtimeEndpoint are denolet's only");
  }
  try {
    cluster = await startCluster(
      opts.bootstrap
        ? { ...opts.cluster, tlsBootstrap: opts.cluster?.tlsBootstrap ?? {} }
        : opts.cluster,
    );
    runtime = await startTestRuntime({
      name: `e2e-${opts.name}`,
      ...(opts.plainHttpRegistries ? { plainHttpRegistries: opts.plainHttpRegistries } : {}),
      ...(opts.runtimeOwnCpuCgroup ? { ownCpuCgroup: true } : {}),
    });
    host = await startTestHost();
    const c = cluster;
    const rt = runtime;
    const config = `${scratch}/kubelet.yaml`;
    const { authentication, ...rest } = opts.config ?? {};
    await Deno.writeTextFile(
      config,
      JSON.stringify({
        apiVersion: "kubelet.config.k8s.io/v1beta1",
        kind: "KubeletConfiguration",
        authentication: {
          ...(authentication as Record<string, unknown> | undefined),
          x509: { clientCAFile: c.caFile },
        },
        ...rest,
      }),
    );
    const port = freePort();
    const server = opts.agentServer && !opts.bootstrap ? await opts.agentServer(c) : undefined;
    const agentArgs = [
      `--config=${config}`,
      `--port=${port}`,
      ...(opts.bootstrap
        ? [
          `--bootstrap-kubeconfig=${(await bootstrapKubeconfig(c)).path}`,
          `--kubeconfig=${scratch}/kubelet.kubeconfig`,
        ]
        : [`--kubeconfig=${await c.nodeKubeconfig(NODE, server ? { server } : {})}`]),
      `--node-ip=${host.address}`,
      "--address=0.0.0.0",
      "--v=2",
      // After startAgent's own: flags apply in order, the last one wins (as pflag).
      ...(opts.runtimeEndpoint
        ? [`--container-runtime-endpoint=${await opts.runtimeEndpoint(rt)}`]
        : []),
    ];
    agent = upstream
      ? await startUpstreamAgent(rt, {
        config: { syncFrequency: "1m", ...rest },
        args: [agentArgs.find((a) => a.startsWith("--kubeconfig="))!, `--node-ip=${host.address}`],
      })
      : await startAgent({ runtime: rt, extraArgs: agentArgs });
    placeAgent(agent);
    const log = () => agent?.log() ?? "";
    if (opts.awaitReady ?? true) {
      await waitFor("node Ready", async () => {
        const n = await c.kubectlJson<Node>(["get", "node", NODE]).catch(() => undefined);
        return n?.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True");
      }, { timeoutMs: 60_000, log });
    }
    const node: TestNode = {
      cluster: c,
      runtime: rt,
      host,
      agent,
      // denolet's --port in agentArgs overrides startAgent's own (kept across restarts);
      // the upstream kubelet chose its own.
      port: upstream ? agent.port : port,
      nodeIP: host.address,
      agentArgs,
      scratch,
      log,
      async restartAgent(opts = {}) {
        if (upstream) throw new Error("restartAgent: not with the upstream kubelet");
        const old = node.agent;
        const status = await old.stop(opts.kill ? "SIGKILL" : "SIGTERM");
        if (!opts.kill && status.code !== 0) {
          throw new Error(`the agent exited ${status.code} on SIGTERM:\n${old.log()}`);
        }
        agent = await startAgent({
          runtime: rt,
          manifestDir: old.manifestDir,
          rootDir: old.rootDir,
          extraArgs: agentArgs,
        });
        placeAgent(agent);
        node.agent = agent;
        return agent;
      },
      async namespace() {
        const ns = `e2e-${crypto.randomUUID().slice(0, 8)}`;
        const res = await c.kubectl(["create", "namespace", ns]);
        if (res.code !== 0) throw new Error(`kubectl create namespace ${ns}: ${res.stderr}`);
        // The ServiceAccount admission plugin refuses pods until the controller made it.
        await waitFor(`the default service account of ${ns}`, async () => {
          const sa = await c.kubectl(["get", "serviceaccount", "default", "-n", ns]);
          return sa.code === 0 ? true : undefined;
        }, { timeoutMs: 60_000 });
        return ns;
      },
      async events(ns, name, reason) {
        const selector = `involvedObject.name=${name}${reason ? `,reason=${reason}` : ""}`;
        const list = await c.kubectlJson<{ items: ClusterEvent[] }>([
          ...["get", "events", "-n", ns, "--field-selector", selector],
        ]);
        return list.items;
      },
      async runPod(pod) {
        const res = await c.kubectl(["apply", "-f", "-"], {
          stdin: JSON.stringify({ apiVersion: "v1", kind: "Pod", ...pod }),
        });
        if (res.code !== 0) {
          throw new Error(`kubectl apply pod ${pod.metadata?.name}: ${res.stderr}`);
        }
        const args = ["get", "pod", "-n", pod.metadata?.namespace ?? "default"];
        await waitFor(`pod ${pod.metadata?.name} Running and ready`, async () => {
          const p = await c.kubectlJson<Pod>([...args, pod.metadata?.name ?? ""])
            .catch(() => undefined);
          return p?.status?.phase === "Running" &&
            (p.status.containerStatuses ?? []).every((s) => s.ready);
        }, { timeoutMs: 60_000, log });
      },
      stop,
    };
    return node;
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The upstream kubelet (tools/e2e/build.sh's) in {@link AgentProcess}'s shape, on dirs of
 * its own and `--housekeeping-interval=1s`, as tests/integration `startAgent` runs denolet.
 * @param rt the node's runtime
 * @param opts config fields over tests/harness `startUpstreamKubelet`'s, and more flags
 */
async function startUpstreamAgent(
  rt: TestRuntime,
  opts: { config: Record<string, unknown>; args: string[] },
): Promise<AgentProcess> {
  const { kubelet, dirs } = await startUpstreamKubeletOnOwnDirs("denolet-e2e-upstream-", {
    bin: upstreamKubeletBin(e2eBinDir()),
    runtime: rt,
    config: opts.config,
    args: [...opts.args, "--housekeeping-interval=1s"],
  });
  return {
    pid: kubelet.pid,
    manifestDir: dirs.manifestDir,
    rootDir: dirs.rootDir,
    readOnlyPort: kubelet.readOnlyPort,
    healthzPort: kubelet.healthzPort,
    port: kubelet.port,
    log: () => kubelet.log(),
    exited: () => kubelet.exited(),
    pods: () => kubelet.pods(),
    async healthz() {
      const resp = await fetch(`http://127.0.0.1:${kubelet.healthzPort}/healthz`);
      return [resp.status, await resp.text()];
    },
    stop: (signal) => kubelet.stop(signal),
    removeDirs: dirs.remove,
  };
}
