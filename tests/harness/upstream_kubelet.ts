/**
 * The upstream kubelet (k8s.io/kubernetes at the version of tools/e2e/go.mod, built by
 * tools/e2e/build.sh) as a process of the tests, for the adoption tests that hand pods
 * between it and denolet, and for the side-by-side bench (bench/upstream.ts).
 *
 * @module
 */

import type { Pod } from "../../lib/api/types.ts";
import { freePort, waitFor } from "../kit/mod.ts";
import { unmountUnder } from "./mounts.ts";
import type { TestRuntime } from "./runtime.ts";

/**
 * The upstream kubelet binary in `binDir` (tests/e2e/_cluster.ts e2eBinDir: where
 * tools/e2e/build.sh puts it).
 *
 * @throws Error naming build.sh when it is missing
 */
export function upstreamKubeletBin(binDir: string): string {
  const bin = `${binDir}/kubelet`;
  try {
    Deno.statSync(bin);
  } catch (cause) {
    throw new Error(`${bin} is missing: run bash tools/e2e/build.sh`, { cause });
  }
  return bin;
}

/**
 * Makes `rootDir` a shared mount, so what the upstream kubelet mounts under it in its
 * own mount namespace (pod volumes) reaches containerd's. Undo with `umount -l`.
 */
export async function shareRootDir(rootDir: string): Promise<void> {
  await new Deno.Command("mount", { args: ["--bind", rootDir, rootDir] }).output();
  await new Deno.Command("mount", { args: ["--make-rshared", rootDir] }).output();
}

/** Where an upstream kubelet keeps its files ({@link upstreamKubeletDirs}). */
export interface UpstreamKubeletDirs {
  /** For its config, log and fake sysctl files; holds the two below. */
  scratch: string;
  /** Its static pod path. */
  manifestDir: string;
  /** Its `--root-dir`, already a shared mount ({@link shareRootDir}). */
  rootDir: string;
  /**
   * Once the kubelet has exited (and the runtime stopped): unmounts what it left under
   * its root dir and the root dir's own bind, removes its `/var/log/containers` links
   * into `<rootDir>/logs` and the scratch dir.
   */
  remove(): Promise<void>;
}

/**
 * Makes a scratch dir with a manifest dir and a shared root dir for an upstream kubelet.
 * @param prefix the scratch dir's name prefix
 */
export async function upstreamKubeletDirs(prefix: string): Promise<UpstreamKubeletDirs> {
  const scratch = await Deno.makeTempDir({ prefix });
  const manifestDir = `${scratch}/manifests`;
  const rootDir = `${scratch}/root`;
  await Deno.mkdir(manifestDir);
  await Deno.mkdir(rootDir);
  const remove = async () => {
    await unmountUnder(rootDir);
    await new Deno.Command("umount", { args: ["-l", rootDir] }).output();
    await removeLogSymlinks(`${rootDir}/logs`);
    await Deno.remove(scratch, { recursive: true }).catch(() => {});
  };
  try {
    await shareRootDir(rootDir);
  } catch (err) {
    await remove();
    throw err;
  }
  return { scratch, manifestDir, rootDir, remove };
}

/** The values upstream's setupKernelTunables wants (pkg/kubelet/cm/container_manager_linux.go). */
const KERNEL_TUNABLES: Record<string, string> = {
  "vm/overcommit_memory": "1",
  "vm/panic_on_oom": "0",
  "kernel/panic": "10",
  "kernel/panic_on_oops": "1",
  "kernel/keys/root_maxkeys": "1000000",
  "kernel/keys/root_maxbytes": "25000000",
};

// In the kubelet's own mount namespace: bind each fake sysctl file ($1 holds
// "<file> <target>" lines) read-only over /proc/sys, then become the kubelet. The host's
// sysctls are shared by other tests and engineers; the kubelet must not write them.
const NS_SCRIPT = `set -e
while read -r file target; do mount --bind -o ro "$file" "$target"; done <"$1"
shift
exec "$@"`;

/**
 * The command line that runs the upstream kubelet in a mount namespace of its own in
 * which the six /proc/sys files its setupKernelTunables would write are read-only
 * files holding the values it wants: this machine's sysctls are shared by other tests
 * and engineers. Pair it with `protectKernelDefaults: true`, so a value it disliked
 * stops it instead of being written.
 * @param dir where the fake sysctl files go (created)
 * @param bin the kubelet binary
 * @param args the kubelet's arguments
 * @returns argv, `unshare` first
 */
export async function sysctlProtectedArgv(
  dir: string,
  bin: string,
  args: readonly string[],
): Promise<string[]> {
  await Deno.mkdir(dir, { recursive: true });
  const binds: string[] = [];
  for (const [key, value] of Object.entries(KERNEL_TUNABLES)) {
    const file = `${dir}/${key.replaceAll("/", "_")}`;
    await Deno.writeTextFile(file, `${value}\n`);
    binds.push(`${file} /proc/sys/${key}`);
  }
  await Deno.writeTextFile(`${dir}/binds`, binds.join("\n") + "\n");
  return [
    ...["unshare", "--mount", "--propagation", "unchanged"],
    ...["sh", "-c", NS_SCRIPT, "sh", `${dir}/binds`, bin, ...args],
  ];
}

/** A running upstream kubelet. */
export interface UpstreamKubelet {
  /** The kubelet's PID (for RSS and CPU readings): `unshare` and `sh` exec it, no fork. */
  pid: number;
  /** Its anonymous read-only port on loopback (`/pods`, `/stats/summary`, `/metrics/resource`). */
  readOnlyPort: number;
  /** Its `/healthz` port on loopback. */
  healthzPort: number;
  /** Its secure port on loopback. */
  port: number;
  /** GET /pods on its read-only port (loopback). */
  pods(): Promise<Pod[]>;
  /** GET /metrics on its read-only port. */
  metrics(): Promise<string>;
  /** Everything it logged so far. */
  log(): string;
  /** How it exited ("exited with code 1"), or undefined while it runs. */
  exited(): string | undefined;
  /**
   * Sends `signal` (SIGTERM by default) unless it exited, and waits for it to exit (its
   * containers keep running, as always).
   */
  stop(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
}

/** Where and how {@link startUpstreamKubelet} runs it. */
export interface StartUpstreamKubeletOptions {
  /** The binary, as tools/e2e/build.sh built it ({@link upstreamKubeletBin}). */
  bin: string;
  runtime: TestRuntime;
  /** Its `--root-dir`, made a shared mount by the caller ({@link shareRootDir}). */
  rootDir: string;
  /** Its static pod path. */
  manifestDir: string;
  /** For its config, log and fake sysctl files. */
  scratch: string;
  /** Fields merged over the KubeletConfiguration written here. */
  config?: Record<string, unknown>;
  /** More flags (`--kubeconfig`, `--node-ip`). */
  args?: string[];
  /** Its `--v` (default 2, for the tests' logs; 0 is what an operator runs). */
  verbosity?: number;
}

/**
 * Starts the upstream kubelet as node `testnode` (standalone unless `args` give a
 * kubeconfig): static pods from `manifestDir`, the harness's containerd and cgroup
 * parent, pod logs under `<rootDir>/logs` as the tests' denolet has them, an anonymous
 * read-only port on loopback for `/pods`. It runs in a mount namespace of its own where
 * the six /proc/sys files it would write at start are read-only files holding the values
 * it wants (with `protectKernelDefaults`): this machine's sysctls are shared.
 *
 * @throws Error with its log when it exits or does not answer within 60 s
 */
export async function startUpstreamKubelet(
  opts: StartUpstreamKubeletOptions,
): Promise<UpstreamKubelet> {
  const { bin, scratch } = opts;
  const run = crypto.randomUUID().slice(0, 8);
  const readOnlyPort = freePort();
  const healthzPort = freePort();
  const port = freePort();
  const config = `${scratch}/kubelet-config-${run}.json`;
  await Deno.writeTextFile(
    config,
    JSON.stringify({
      apiVersion: "kubelet.config.k8s.io/v1beta1",
      kind: "KubeletConfiguration",
      staticPodPath: opts.manifestDir,
      fileCheckFrequency: "2s",
      syncFrequency: "5s",
      authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
      authorization: { mode: "AlwaysAllow" },
      address: "127.0.0.1",
      port,
      readOnlyPort,
      healthzBindAddress: "127.0.0.1",
      healthzPort,
      containerRuntimeEndpoint: opts.runtime.endpoint,
      cgroupDriver: "cgroupfs",
      cgroupRoot: opts.runtime.cgroupParent,
      podLogsDir: `${opts.rootDir}/logs`,
      // This machine's cgroups are v1 controllers beside an empty v2 tree.
      failCgroupV1: false,
      failSwapOn: false,
      protectKernelDefaults: true,
      ...opts.config,
    }),
  );
  const logFile = `${scratch}/kubelet-${run}.log`;
  await Deno.writeTextFile(logFile, "");
  const argv = await sysctlProtectedArgv(`${scratch}/sysctl`, bin, [
    `--config=${config}`,
    `--root-dir=${opts.rootDir}`,
    `--cert-dir=${scratch}/pki`,
    "--hostname-override=testnode",
    `--v=${opts.verbosity ?? 2}`,
    ...(opts.args ?? []),
  ]);
  const child = new Deno.Command(argv[0]!, {
    args: argv.slice(1),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) await Deno.writeFile(logFile, chunk, { append: true });
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  let exited: string | undefined;
  const status = child.status.then((s) => {
    exited = `exited with code ${s.code}`;
    return s;
  });
  const log = () => {
    try {
      return Deno.readTextFileSync(logFile);
    } catch {
      return "";
    }
  };
  const upstream: UpstreamKubelet = {
    pid: child.pid,
    readOnlyPort,
    healthzPort,
    port,
    log,
    exited: () => exited,
    async pods() {
      const resp = await fetch(`http://127.0.0.1:${readOnlyPort}/pods`);
      if (!resp.ok) throw new Error(`/pods answered ${resp.status}`);
      // Go's encoder writes a PodList with no pods as `"items": null`.
      return ((await resp.json()).items ?? []) as Pod[];
    },
    async metrics() {
      const resp = await fetch(`http://127.0.0.1:${readOnlyPort}/metrics`);
      if (!resp.ok) throw new Error(`/metrics answered ${resp.status}`);
      return await resp.text();
    },
    async stop(signal: Deno.Signal = "SIGTERM") {
      if (exited === undefined) child.kill(signal);
      const s = await status;
      await pumps;
      return s;
    },
  };
  try {
    await waitFor("the upstream kubelet answering GET /pods", () => upstream.pods(), {
      timeoutMs: 60_000,
      intervalMs: 200,
      giveUp: () => exited,
      log,
    });
  } catch (err) {
    await upstream.stop();
    throw err;
  }
  return upstream;
}

/**
 * {@link startUpstreamKubelet} on dirs of its own ({@link upstreamKubeletDirs}), which go
 * again when it does not start.
 * @param prefix the scratch dir's name prefix
 * @param opts the rest of what {@link startUpstreamKubelet} takes
 * @returns the kubelet and its dirs (remove them once it has stopped)
 */
export async function startUpstreamKubeletOnOwnDirs(
  prefix: string,
  opts: Omit<StartUpstreamKubeletOptions, "rootDir" | "manifestDir" | "scratch">,
): Promise<{ kubelet: UpstreamKubelet; dirs: UpstreamKubeletDirs }> {
  const dirs = await upstreamKubeletDirs(prefix);
  try {
    const kubelet = await startUpstreamKubelet({
      ...opts,
      rootDir: dirs.rootDir,
      manifestDir: dirs.manifestDir,
      scratch: dirs.scratch,
    });
    return { kubelet, dirs };
  } catch (err) {
    await dirs.remove();
    throw err;
  }
}

/** Removes the upstream kubelet's `/var/log/containers` links into `logs` (its dir is fixed). */
export async function removeLogSymlinks(logs: string): Promise<void> {
  const dir = "/var/log/containers";
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isSymlink) continue;
      const target = await Deno.readLink(`${dir}/${entry.name}`).catch(() => "");
      if (target.startsWith(`${logs}/`)) await Deno.remove(`${dir}/${entry.name}`);
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

/**
 * How many pod worker runs a kubelet has finished, of any kind: the sum of
 * `kubelet_pod_worker_duration_seconds_count` over its `operation_type`s in its /metrics
 * text (upstream's and denolet's alike). Not "create" alone: a pod's first run is
 * counted as "sync" when a PLEG event or the sync tick updated it before its worker
 * started (the updates coalesce, the last type wins). With every pod resynced each
 * syncFrequency, twice the pod count means each pod has had a run in which every kill or
 * start the kubelet decided on adoption was made.
 */
export function podWorkerRuns(metrics: string): number {
  let runs = 0;
  for (
    const m of metrics.matchAll(
      /^kubelet_pod_worker_duration_seconds_count\{operation_type="[a-z]+"\} (\d+)$/gm,
    )
  ) runs += Number(m[1]);
  return runs;
}
