/**
 * metrics-server (sigs.k8s.io/metrics-server, built by tools/e2e/build.sh) as a host
 * process of an e2e cluster started with `aggregation: true`, registered as the
 * `v1beta1.metrics.k8s.io` APIService, so `kubectl top` works through the apiserver.
 *
 * ```ts
 * const cluster = await startCluster({ aggregation: true });
 * const host = await startTestHost();
 * const ms = await startMetricsServer(cluster, { address: host.address });
 * try {
 *   // run denolet with --node-ip=host.address, then poll cluster.kubectl(["top", "node"])
 * } finally {
 *   await ms.stop();
 * }
 * ```
 *
 * What upstream's manifests do in the cluster is done here by hand: a selector-less
 * Service `kube-system/metrics-server` whose EndpointSlice names the process's
 * address (what the apiserver's aggregator dials with `--enable-aggregator-routing`;
 * a Service's endpoints may not be loopback, hence a test host address), the RBAC of
 * upstream's rbac.yaml bound to the user `system:metrics-server` (a client
 * certificate of the cluster CA instead of a ServiceAccount), and the APIService
 * trusting the cluster CA, which signs metrics-server's serving certificate.
 *
 * metrics-server authenticates to the kubelet with the same client certificate, so
 * the kubelet checks it against its client CA and asks SubjectAccessReview for
 * `nodes/metrics`.
 *
 * @module
 */

import { tail } from "../harness/_exec.ts";
import { freePort, LOG_TAIL_LINES } from "../kit/mod.ts";
import type { Cluster } from "./_cluster.ts";
import { makeCert, writeKubeconfig } from "./_pki.ts";
import { httpOk, type Proc, spawn, stopProc, waitReady } from "./_procs.ts";

/** The user metrics-server acts as, towards the apiserver and the kubelets. */
export const METRICS_SERVER_USER = "system:metrics-server";

/** Options for {@link startMetricsServer}. */
export interface StartMetricsServerOptions {
  /**
   * The address metrics-server serves on and its EndpointSlice names: not loopback
   * (the apiserver refuses those), e.g. a `startTestHost()` address.
   */
  address: string;
  /**
   * CA file to verify the kubelets' serving certificates with; without it,
   * `--kubelet-insecure-tls`.
   */
  kubeletCaFile?: string;
  /** `--metric-resolution` (default 15s, as upstream's manifest; the minimum is 10s). */
  metricResolution?: string;
  /** How long start-up may take, in ms (default 60 s). */
  timeoutMs?: number;
}

/** A running metrics-server. */
export interface MetricsServer {
  /** Its secure port on the address it was given. */
  readonly port: number;
  /** The tail of its log. */
  log(): string;
  /** Stops the process (the API objects go with the cluster); idempotent. */
  stop(): Promise<void>;
}

const NAMESPACE = "kube-system";
const SERVICE = "metrics-server";

/**
 * Creates metrics-server's certificates, kubeconfig, RBAC, Service and EndpointSlice,
 * starts it, waits until it answers /livez, and registers its APIService.
 *
 * @throws Error when the binary is missing, kubectl refuses an object, or metrics-server
 *   exits or does not come up in time (with the tail of its log)
 */
export async function startMetricsServer(
  cluster: Cluster,
  opts: StartMetricsServerOptions,
): Promise<MetricsServer> {
  const bin = `${cluster.binDir}/metrics-server`;
  try {
    await Deno.stat(bin);
  } catch (cause) {
    throw new Error(`e2e: ${bin} is missing: run bash tools/e2e/build.sh`, { cause });
  }
  const pki = `${cluster.dir}/pki`;
  const dir = `${cluster.dir}/metrics-server`;
  await Deno.mkdir(dir, { recursive: true });
  await makeCert(pki, "metrics-server", { subject: `/CN=${METRICS_SERVER_USER}` });
  // The aggregator checks the serving certificate against the Service's DNS name.
  await makeCert(pki, "metrics-server-serving", {
    subject: "/CN=metrics-server",
    usage: "serverAuth",
    sans: [`IP:${opts.address}`, `DNS:${SERVICE}.${NAMESPACE}.svc`],
  });
  const kubeconfig = `${dir}/kubeconfig`;
  await writeKubeconfig(kubeconfig, cluster.apiserverUrl, pki, "metrics-server");

  const port = freePort();
  const caBundle = btoa(await Deno.readTextFile(cluster.caFile));
  const apply = async (items: unknown[]) => {
    const applied = await cluster.kubectl(["apply", "-f", "-"], {
      stdin: JSON.stringify({ apiVersion: "v1", kind: "List", items }),
    });
    if (applied.code !== 0) {
      throw new Error(`e2e: metrics-server objects: kubectl apply: ${applied.stderr.trim()}`);
    }
  };
  // Its RBAC first: it reads the front-proxy CA at start-up.
  await apply(accessObjects(port, opts));

  const proc: Proc = {
    name: "metrics-server",
    bin,
    log: `${dir}/metrics-server.log`,
    args: [
      `--kubeconfig=${kubeconfig}`,
      // Delegated authentication and authorization would look for in-cluster config.
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      `--bind-address=${opts.address}`,
      `--secure-port=${port}`,
      `--cert-dir=${dir}`,
      `--tls-cert-file=${pki}/metrics-server-serving.crt`,
      `--tls-private-key-file=${pki}/metrics-server-serving.key`,
      "--kubelet-preferred-address-types=InternalIP",
      "--kubelet-use-node-status-port",
      opts.kubeletCaFile === undefined
        ? "--kubelet-insecure-tls"
        : `--kubelet-certificate-authority=${opts.kubeletCaFile}`,
      `--metric-resolution=${opts.metricResolution ?? "15s"}`,
      "--v=2",
    ],
  };
  await spawn(proc);
  try {
    // /livez is on the always-allowed paths of its delegated authorization.
    await waitReady(
      proc,
      Date.now() + (opts.timeoutMs ?? 60_000),
      () => httpOk(`https://${opts.address}:${port}/livez`, /^ok$/, pki),
    );
    // Registered once it answers, so the aggregator's availability checks do not start
    // with a run of refused connections.
    await apply([apiService(caBundle)]);
  } catch (err) {
    await stopProc(proc, cluster.dir).catch(() => {});
    throw err;
  }
  return {
    port,
    log: () => tail(proc.log, LOG_TAIL_LINES),
    stop: () => stopProc(proc, cluster.dir),
  };
}

/**
 * Upstream's manifests/base but the APIService, minus the Deployment and
 * ServiceAccount, plus an EndpointSlice.
 */
function accessObjects(port: number, opts: StartMetricsServerOptions): unknown[] {
  const user = { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: METRICS_SERVER_USER };
  const clusterRoleBinding = (name: string, role: string) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [user],
  });
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "system:metrics-server" },
      rules: [
        { apiGroups: [""], resources: ["nodes/metrics"], verbs: ["get"] },
        { apiGroups: [""], resources: ["pods", "nodes"], verbs: ["get", "list", "watch"] },
      ],
    },
    clusterRoleBinding("system:metrics-server", "system:metrics-server"),
    // TokenReview and SubjectAccessReview for the requests the aggregator forwards.
    clusterRoleBinding("metrics-server:system:auth-delegator", "system:auth-delegator"),
    {
      // The front-proxy CA and header names, from the apiserver's published ConfigMap.
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "metrics-server-auth-reader", namespace: NAMESPACE },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "Role",
        name: "extension-apiserver-authentication-reader",
      },
      subjects: [user],
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: SERVICE, namespace: NAMESPACE },
      spec: { ports: [{ name: "https", port: 443, protocol: "TCP", targetPort: port }] },
    },
    {
      // Selector-less, so no controller would make this; the aggregator reads slices.
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: SERVICE,
        namespace: NAMESPACE,
        labels: {
          "kubernetes.io/service-name": SERVICE,
          "endpointslice.kubernetes.io/managed-by": "denolet-e2e",
        },
      },
      addressType: "IPv4",
      endpoints: [{ addresses: [opts.address], conditions: { ready: true } }],
      ports: [{ name: "https", port, protocol: "TCP" }],
    },
  ];
}

/** `v1beta1.metrics.k8s.io`, trusting the CA that signed metrics-server's serving certificate. */
function apiService(caBundle: string): unknown {
  return {
    apiVersion: "apiregistration.k8s.io/v1",
    kind: "APIService",
    metadata: { name: "v1beta1.metrics.k8s.io" },
    spec: {
      service: { name: SERVICE, namespace: NAMESPACE, port: 443 },
      group: "metrics.k8s.io",
      version: "v1beta1",
      caBundle,
      groupPriorityMinimum: 100,
      versionPriority: 100,
    },
  };
}
