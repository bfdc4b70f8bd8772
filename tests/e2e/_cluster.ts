/**
 * The end-to-end harness: a real control plane on 127.0.0.1 (etcd, kube-apiserver,
 * kube-controller-manager) in a temporary directory of its own, with its own CA,
 * certificates, ports and data, torn down completely by `stop()`.
 *
 * ```ts
 * import { startCluster } from "./_cluster.ts";
 *
 * Deno.test("a node registers", async () => {
 *   const cluster = await startCluster();
 *   try {
 *     const kubeconfig = await cluster.nodeKubeconfig("node-a");
 *     // run denolet with kubeconfig, then assert with cluster.kubectlJson([...])
 *   } finally {
 *     await cluster.stop();
 *   }
 * });
 * ```
 *
 * The binaries come from `tools/e2e/build.sh` (the e2e tier of `deno task test` runs
 * it first); certificates are made with the `openssl` CLI. The processes are started
 * through `sh -c '… & echo $!'`, so they are not child handles of the test (a cluster
 * may span several `Deno.test`s), and are only ever signalled by their recorded PID
 * after checking that the PID still runs with our directory in its arguments.
 *
 * kube-controller-manager runs only the controllers a pod needs (service accounts,
 * their tokens, `kube-root-ca.crt`, namespaces, garbage collection). The node
 * lifecycle controller is left out on purpose: a test stops the apiserver for a
 * minute and must not find its pods evicted afterwards.
 *
 * @module
 */

import { which } from "../harness/_exec.ts";
import {
  firstServiceIp,
  makeCert,
  makeServiceAccountKey,
  writeCa,
  writeKubeconfig,
} from "./_pki.ts";
import { freePort } from "../kit/mod.ts";
import { httpOk, isOurs, type Proc, spawn, stopProc, waitReady } from "./_procs.ts";

/** Options for {@link startCluster}. */
export interface StartClusterOptions {
  /** Directory holding the four binaries (default: {@link e2eBinDir}). */
  binDir?: string;
  /** How long start-up may take before it fails, in ms (default 180 s). */
  timeoutMs?: number;
  /** The service CIDR (default 10.96.0.0/16). */
  serviceClusterIpRange?: string;
  /** Extra kube-apiserver flags, appended last (a later flag wins). */
  apiserverArgs?: readonly string[];
  /**
   * Turn on the aggregation layer for extension apiservers (e.g. metrics-server): a
   * front-proxy CA of its own under `pki/front-proxy`, the apiserver's front-proxy
   * client certificate, the request-header flags as kubeadm sets them, and
   * `--enable-aggregator-routing`, so the apiserver dials an APIService's endpoints
   * itself (there is no kube-proxy here to route a Service's ClusterIP).
   */
  aggregation?: boolean;
  /**
   * kube-controller-manager's `--controllers` (default: the few a pod needs, without the
   * node lifecycle controller; see the module doc). `["*"]` runs upstream's default set.
   */
  controllers?: readonly string[];
  /**
   * Also run kube-scheduler (from the same bin dir), so pods without `spec.nodeName` are
   * bound; the tests that bind pods themselves leave it out.
   */
  scheduler?: boolean;
  /**
   * TLS bootstrap as kubeadm sets it up: the apiserver authenticates bootstrap tokens
   * (`--enable-bootstrap-token-auth`) and kube-controller-manager also runs csrapproving
   * and csrsigning, signing with the cluster CA for `signingDuration` (its
   * `--cluster-signing-duration`, e.g. "5m"; upstream's default one year when absent).
   * Tokens and RBAC: tests/e2e/_bootstrap.ts.
   */
  tlsBootstrap?: { signingDuration?: string };
}

/** What a kubectl run printed and how it exited. */
export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options for {@link Cluster.kubectl}. */
export interface KubectlOptions {
  /** Kubeconfig to use instead of the admin one (e.g. from `nodeKubeconfig`). */
  kubeconfig?: string;
  /** Text written to kubectl's stdin (for `apply -f -`). */
  stdin?: string;
  /**
   * Variables added to kubectl's environment, e.g. `KUBECTL_REMOTE_COMMAND_WEBSOCKETS:
   * "false"` to make exec, attach and cp speak SPDY.
   */
  env?: Record<string, string>;
}

/** Options for {@link Cluster.nodeKubeconfig}. */
export interface NodeKubeconfigOptions {
  /** Embed the client certificate and key as data instead of pointing at a file. */
  embed?: boolean;
  /** The server the kubeconfig names instead of the apiserver (e.g. a proxy in front of it). */
  server?: string;
}

/** A running control plane. */
export interface Cluster {
  /** `https://127.0.0.1:<port>`. */
  readonly apiserverUrl: string;
  /** The cluster CA certificate (PEM file); it signs every certificate here. */
  readonly caFile: string;
  /** A kubeconfig for a cluster admin (group system:masters). */
  readonly adminKubeconfig: string;
  /** The temporary directory holding certificates, data and logs (removed by stop). */
  readonly dir: string;
  /** Directory of the binaries; `${binDir}/kubectl` is the matching kubectl. */
  readonly binDir: string;
  /** Runs kubectl (admin kubeconfig unless told otherwise); never throws on exit codes. */
  kubectl(args: readonly string[], opts?: KubectlOptions): Promise<KubectlResult>;
  /**
   * Runs kubectl with `-o json` appended and parses its output.
   *
   * @throws Error naming the command and carrying kubectl's stderr when it exits non-zero
   */
  kubectlJson<T = unknown>(args: readonly string[], opts?: KubectlOptions): Promise<T>;
  /**
   * Writes a kubeconfig whose client certificate is CN=system:node:<nodeName>,
   * O=system:nodes, signed by the cluster CA (what a kubelet's bootstrap ends with).
   *
   * @returns the kubeconfig's path
   */
  nodeKubeconfig(nodeName: string, opts?: NodeKubeconfigOptions): Promise<string>;
  /** Stops kube-apiserver (SIGTERM, SIGKILL after 3 s; etcd and its data stay); idempotent. */
  stopApiserver(): Promise<void>;
  /** Starts kube-apiserver again on the same port and data, waiting for /readyz. */
  startApiserver(): Promise<void>;
  /**
   * Compacts etcd to its current revision, as the apiserver's compactor does
   * every 5 minutes: a watch resumed from an older resourceVersion then
   * answers 410 Gone.
   *
   * @returns the revision compacted to
   */
  compactEtcd(): Promise<number>;
  /** PIDs of the control-plane processes that are running now. */
  pids(): number[];
  /**
   * Stops every process and removes the directory (kept when DENOLET_E2E_KEEP=1).
   *
   * @throws Error naming processes that survived SIGKILL
   */
  stop(): Promise<void>;
}

/** The apiserver's service account issuer, as kubeadm sets it for cluster.local. */
export const SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local";

// Canonical names (v1.37's cmd/kube-controller-manager/names); no node-lifecycle-controller.
export const CONTROLLERS = [
  "serviceaccount-controller",
  "serviceaccount-token-controller",
  "root-ca-certificate-publisher-controller",
  "namespace-controller",
  "garbage-collector-controller",
];

/** What TLS bootstrap adds: the CSR approver (node client CSRs, by RBAC) and signer. */
const CSR_CONTROLLERS = [
  "certificatesigningrequest-approving-controller",
  "certificatesigningrequest-signing-controller",
];

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");

/**
 * Where `tools/e2e/build.sh` puts the binaries for the Kubernetes version that
 * tools/e2e/go.mod requires; `DENOLET_E2E_BIN` overrides it.
 *
 * @throws Error when go.mod names no k8s.io/kubernetes version
 */
export function e2eBinDir(): string {
  const override = Deno.env.get("DENOLET_E2E_BIN");
  if (override) return override;
  const goMod = Deno.readTextFileSync(`${ROOT}/tools/e2e/go.mod`);
  const version = goMod.match(/^\s*k8s\.io\/kubernetes\s+(v\S+)/m)?.[1];
  if (version === undefined) {
    throw new Error(`e2e: no k8s.io/kubernetes version in ${ROOT}/tools/e2e/go.mod`);
  }
  const cache = Deno.env.get("DENOLET_CACHE") ??
    `${Deno.env.get("HOME") ?? "/root"}/.cache/denolet`;
  return `${cache}/e2e/${version}`;
}

/**
 * Starts the control plane and waits until the apiserver is ready and the `default`
 * namespace has its `default` ServiceAccount and `kube-root-ca.crt` ConfigMap.
 *
 * @throws Error with the tail of the failing process's log when a binary is missing,
 *   a process exits early or start-up times out (whatever started is stopped again)
 */
export async function startCluster(opts: StartClusterOptions = {}): Promise<Cluster> {
  const binDir = opts.binDir ?? e2eBinDir();
  const bins = ["etcd", "kube-apiserver", "kube-controller-manager", "kubectl"];
  if (opts.scheduler) bins.push("kube-scheduler");
  for (const bin of bins) {
    try {
      Deno.statSync(`${binDir}/${bin}`);
    } catch (cause) {
      throw new Error(`e2e: ${binDir}/${bin} is missing: run bash tools/e2e/build.sh`, { cause });
    }
  }
  if (which("openssl") === undefined) {
    throw new Error("e2e: openssl not found (apt-get install openssl, or run tools/dev.sh)");
  }
  const deadline = Date.now() + (opts.timeoutMs ?? 180_000);
  const dir = await Deno.makeTempDir({ prefix: "denolet-e2e-" });
  const pki = `${dir}/pki`;
  const procs: Proc[] = [];
  const [apiPort, etcdPort, peerPort] = [freePort(), freePort(), freePort()];
  const url = `https://127.0.0.1:${apiPort}`;
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const cluster = makeCluster({ dir, binDir, url, etcdUrl, procs });
  try {
    await Deno.mkdir(pki);
    await writeCa(pki);
    const serviceRange = opts.serviceClusterIpRange ?? "10.96.0.0/16";
    await makeServiceAccountKey(pki);
    await makeCert(pki, "apiserver", {
      subject: "/CN=kube-apiserver",
      usage: "serverAuth",
      sans: [
        "IP:127.0.0.1",
        `IP:${firstServiceIp(serviceRange)}`,
        "DNS:localhost",
        "DNS:kubernetes",
        "DNS:kubernetes.default",
        "DNS:kubernetes.default.svc",
        "DNS:kubernetes.default.svc.cluster.local",
      ],
    });
    await makeCert(pki, "admin", { subject: "/O=system:masters/CN=kubernetes-admin" });
    await makeCert(pki, "apiserver-kubelet-client", {
      subject: "/O=system:masters/CN=kube-apiserver-kubelet-client",
    });
    await makeCert(pki, "controller-manager", { subject: "/CN=system:kube-controller-manager" });
    await writeKubeconfig(`${dir}/admin.kubeconfig`, url, pki, "admin", false);
    await writeKubeconfig(`${dir}/controller-manager.kubeconfig`, url, pki, "controller-manager");

    const peerUrl = `http://127.0.0.1:${peerPort}`;
    procs.push({
      name: "etcd",
      bin: `${binDir}/etcd`,
      log: `${dir}/etcd.log`,
      args: [
        "--name=e2e",
        `--data-dir=${dir}/etcd`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=e2e=${peerUrl}`,
        // A throw-away store: durability buys nothing and fsync costs seconds on CI disks.
        "--unsafe-no-fsync",
        "--log-level=warn",
      ],
    });
    procs.push({
      name: "kube-apiserver",
      bin: `${binDir}/kube-apiserver`,
      log: `${dir}/kube-apiserver.log`,
      args: [
        `--etcd-servers=${etcdUrl}`,
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        `--secure-port=${apiPort}`,
        `--cert-dir=${dir}/apiserver-certs`,
        `--tls-cert-file=${pki}/apiserver.crt`,
        `--tls-private-key-file=${pki}/apiserver.key`,
        `--client-ca-file=${pki}/ca.crt`,
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
        `--service-account-key-file=${pki}/sa.pub`,
        `--service-account-signing-key-file=${pki}/sa.key`,
        `--service-cluster-ip-range=${serviceRange}`,
        `--kubelet-client-certificate=${pki}/apiserver-kubelet-client.crt`,
        `--kubelet-client-key=${pki}/apiserver-kubelet-client.key`,
        "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
        "--allow-privileged=true",
        // Endpoints may not hold loopback addresses, so the `kubernetes` Service's
        // endpoints cannot name 127.0.0.1: leave them alone instead of failing every 10s.
        "--endpoint-reconciler-type=none",
        "--profiling=false",
        ...(opts.tlsBootstrap ? ["--enable-bootstrap-token-auth=true"] : []),
        ...(opts.aggregation ? await aggregationArgs(pki) : []),
        ...(opts.apiserverArgs ?? []),
      ],
    });
    procs.push({
      name: "kube-controller-manager",
      bin: `${binDir}/kube-controller-manager`,
      log: `${dir}/kube-controller-manager.log`,
      args: [
        `--kubeconfig=${dir}/controller-manager.kubeconfig`,
        "--bind-address=127.0.0.1",
        `--secure-port=${freePort()}`,
        `--cert-dir=${dir}/controller-manager-certs`,
        // With leader election it would exit once the apiserver has been down for its
        // renew deadline; a test stops the apiserver for a minute.
        "--leader-elect=false",
        "--use-service-account-credentials=true",
        `--service-account-private-key-file=${pki}/sa.key`,
        `--root-ca-file=${pki}/ca.crt`,
        `--controllers=${
          [
            ...(opts.controllers ?? CONTROLLERS),
            ...(opts.tlsBootstrap ? CSR_CONTROLLERS : []),
          ].join(",")
        }`,
        ...(opts.tlsBootstrap
          ? [
            `--cluster-signing-cert-file=${pki}/ca.crt`,
            `--cluster-signing-key-file=${pki}/ca.key`,
            ...(opts.tlsBootstrap.signingDuration
              ? [`--cluster-signing-duration=${opts.tlsBootstrap.signingDuration}`]
              : []),
          ]
          : []),
      ],
    });
    if (opts.scheduler) procs.push(await schedulerProc(dir, binDir, url));
    const [etcd, apiserver, kcm, scheduler] = procs as [Proc, Proc, Proc, Proc | undefined];
    await spawn(etcd);
    await waitReady(etcd, deadline, () => httpOk(`${etcdUrl}/health`, /"health":\s*"true"/));
    await spawn(apiserver);
    await waitReady(apiserver, deadline, () => httpOk(`${url}/readyz`, /^ok$/, pki));
    await spawn(kcm);
    await waitReady(
      kcm,
      deadline,
      async () =>
        await httpOk(
          `${url}/api/v1/namespaces/default/serviceaccounts/default`,
          /"default"/,
          pki,
        ) &&
        await httpOk(
          `${url}/api/v1/namespaces/default/configmaps/kube-root-ca.crt`,
          /ca\.crt/,
          pki,
        ),
    );
    if (scheduler !== undefined) {
      const port = scheduler.args.find((a) => a.startsWith("--secure-port="))?.split("=")[1];
      await spawn(scheduler);
      await waitReady(
        scheduler,
        deadline,
        () => httpOk(`https://127.0.0.1:${port}/healthz`, /^ok$/, pki),
      );
    }
    return cluster;
  } catch (err) {
    await cluster.stop().catch(() => {});
    throw err;
  }
}

/**
 * kube-scheduler as kubeadm runs it, on loopback, without leader election (one
 * scheduler; a test may stop the apiserver for a minute); its serving certificate is
 * signed by the cluster CA so its /healthz can be checked like the apiserver's.
 */
async function schedulerProc(dir: string, binDir: string, url: string): Promise<Proc> {
  const pki = `${dir}/pki`;
  await makeCert(pki, "scheduler", { subject: "/CN=system:kube-scheduler" });
  await makeCert(pki, "scheduler-serving", {
    subject: "/CN=kube-scheduler",
    usage: "serverAuth",
    sans: ["IP:127.0.0.1", "DNS:localhost"],
  });
  const kubeconfig = `${dir}/scheduler.kubeconfig`;
  await writeKubeconfig(kubeconfig, url, pki, "scheduler");
  return {
    name: "kube-scheduler",
    bin: `${binDir}/kube-scheduler`,
    log: `${dir}/kube-scheduler.log`,
    args: [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      "--bind-address=127.0.0.1",
      `--secure-port=${freePort()}`,
      `--tls-cert-file=${pki}/scheduler-serving.crt`,
      `--tls-private-key-file=${pki}/scheduler-serving.key`,
      "--leader-elect=false",
    ],
  };
}

/** The front-proxy PKI and the apiserver flags that turn on the aggregation layer. */
async function aggregationArgs(pki: string): Promise<string[]> {
  // A CA of its own, as kubeadm does: a client certificate of the cluster CA must not
  // be able to pass as the front proxy and assert any user in headers.
  const fp = `${pki}/front-proxy`;
  await Deno.mkdir(fp);
  await writeCa(fp);
  await makeCert(fp, "front-proxy-client", { subject: "/CN=front-proxy-client" });
  return [
    `--requestheader-client-ca-file=${fp}/ca.crt`,
    "--requestheader-allowed-names=front-proxy-client",
    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    "--requestheader-group-headers=X-Remote-Group",
    "--requestheader-username-headers=X-Remote-User",
    `--proxy-client-cert-file=${fp}/front-proxy-client.crt`,
    `--proxy-client-key-file=${fp}/front-proxy-client.key`,
    "--enable-aggregator-routing=true",
  ];
}

function makeCluster(
  { dir, binDir, url, etcdUrl, procs }: {
    dir: string;
    binDir: string;
    url: string;
    etcdUrl: string;
    procs: Proc[];
  },
): Cluster {
  const pki = `${dir}/pki`;
  const adminKubeconfig = `${dir}/admin.kubeconfig`;
  const byName = (name: string) => procs.find((p) => p.name === name);
  const kubectl = (args: readonly string[], opts: KubectlOptions = {}) =>
    runKubectl(`${binDir}/kubectl`, opts.kubeconfig ?? adminKubeconfig, args, opts);
  let stopped = false;
  return {
    apiserverUrl: url,
    caFile: `${pki}/ca.crt`,
    adminKubeconfig,
    dir,
    binDir,
    kubectl,
    async kubectlJson<T>(args: readonly string[], opts: KubectlOptions = {}): Promise<T> {
      const result = await kubectl([...args, "-o", "json"], opts);
      if (result.code !== 0) {
        throw new Error(
          `e2e: kubectl ${args.join(" ")} exited with ${result.code}: ${result.stderr.trim()}`,
        );
      }
      return JSON.parse(result.stdout) as T;
    },
    async nodeKubeconfig(nodeName: string, opts: NodeKubeconfigOptions = {}): Promise<string> {
      const base = `node-${nodeName}`;
      await makeCert(pki, base, { subject: `/O=system:nodes/CN=system:node:${nodeName}` });
      const path = `${dir}/${base}.kubeconfig`;
      await writeKubeconfig(path, opts.server ?? url, pki, base, opts.embed ?? false);
      return path;
    },
    async stopApiserver() {
      const apiserver = byName("kube-apiserver");
      // While kube-controller-manager holds watches open, a SIGTERMed apiserver drains
      // for well over 15 s (measured); a test of "apiserver down" needs it gone, not tidy.
      if (apiserver !== undefined) await stopProc(apiserver, dir, 3_000);
    },
    async startApiserver() {
      const apiserver = byName("kube-apiserver");
      if (apiserver === undefined) throw new Error("e2e: this cluster has no kube-apiserver");
      if (apiserver.pid !== undefined && isOurs(apiserver.pid, dir)) return;
      await spawn(apiserver);
      await waitReady(
        apiserver,
        Date.now() + 120_000,
        () => httpOk(`${url}/readyz`, /^ok$/, pki),
      );
    },
    async compactEtcd() {
      // etcd's JSON gateway to its KV API: int64s are strings, keys base64.
      const post = async (path: string, body: unknown) => {
        const res = await fetch(`${etcdUrl}${path}`, {
          method: "POST",
          body: JSON.stringify(body),
        });
        const text = await res.text();
        if (!res.ok) throw new Error(`e2e: etcd ${path}: HTTP ${res.status}: ${text}`);
        return JSON.parse(text) as { header?: { revision?: string } };
      };
      const range = await post("/v3/kv/range", { key: btoa("/registry/"), limit: 1 });
      const revision = Number(range.header?.revision);
      if (!Number.isSafeInteger(revision) || revision < 1) {
        throw new Error(`e2e: etcd gave no revision: ${JSON.stringify(range)}`);
      }
      await post("/v3/kv/compaction", { revision: String(revision), physical: true });
      return revision;
    },
    pids() {
      return procs.flatMap((p) => p.pid !== undefined && isOurs(p.pid, dir) ? [p.pid] : []);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      const problems: string[] = [];
      for (const proc of [...procs].reverse()) {
        await stopProc(proc, dir).catch((err) => problems.push(String(err)));
      }
      if (Deno.env.get("DENOLET_E2E_KEEP") === "1") console.error(`e2e: kept ${dir}`);
      else await Deno.remove(dir, { recursive: true }).catch(() => {});
      if (problems.length > 0) throw new Error(`e2e: stop: ${problems.join("; ")}`);
    },
  };
}

async function runKubectl(
  bin: string,
  kubeconfig: string,
  args: readonly string[],
  { stdin, env }: KubectlOptions,
): Promise<KubectlResult> {
  const child = new Deno.Command(bin, {
    args: ["--kubeconfig", kubeconfig, "--request-timeout=30s", ...args],
    ...(env ? { env } : {}),
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
  }
  const out = await child.output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}
