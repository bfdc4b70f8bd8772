/**
 * Drop-in both ways on real containerd: the upstream kubelet (v1.37.2, built by
 * tools/e2e/build.sh) runs static pods; it stops; denolet starts on the same root
 * dir, manifests and pod logs dir and adopts every sandbox and container (same IDs,
 * restart count 0, nothing killed, nothing started); it stops; the upstream kubelet
 * starts again and adopts them back the same way.
 *
 * One manifest sets `metadata.uid` (both kubelets keep it), the other does not (both
 * derive upstream's UID from the manifest's content, path and node name).
 */
import assert from "node:assert/strict";
import { startTestRuntime } from "../harness/mod.ts";
import { unmountUnder } from "../harness/mounts.ts";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import type { RuntimeService } from "../../lib/cri/types.ts";
import type { Pod } from "../../lib/api/types.ts";
import { e2eBinDir } from "../e2e/_cluster.ts";
import { findPod, startAgent } from "./_agent.ts";
import { freePort, waitFor } from "../kit/mod.ts";

const POD_NAMES = ["web", "hostweb"];

function manifest(
  name: string,
  uid: string | undefined,
  image: string,
  hostNetwork: boolean,
): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", ...(uid ? { uid } : {}) },
    spec: {
      hostNetwork,
      terminationGracePeriodSeconds: 2,
      containers: [
        { name: "main", image, imagePullPolicy: "Never", command: ["sleep", "3600"] },
        {
          name: "side",
          image,
          imagePullPolicy: "Never",
          command: ["sleep", "3600"],
          ports: [{ name: "http", containerPort: 8080 }],
          lifecycle: { preStop: { exec: { command: ["true"] } } },
        },
      ],
    },
  });
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

interface Upstream {
  pods(): Promise<Pod[]>;
  log(): string;
  stop(): Promise<void>;
}

/**
 * Starts the upstream kubelet standalone (no kubeconfig): static pods from
 * `manifestDir`, the harness's containerd and cgroup parent, anonymous read-only
 * port on loopback for `/pods`.
 */
async function startUpstream(
  bin: string,
  opts: { endpoint: string; cgroupParent: string; manifestDir: string; rootDir: string },
  scratch: string,
  run: number,
): Promise<Upstream> {
  const readOnlyPort = freePort();
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
      port: freePort(),
      readOnlyPort,
      healthzBindAddress: "127.0.0.1",
      healthzPort: freePort(),
      containerRuntimeEndpoint: opts.endpoint,
      cgroupDriver: "cgroupfs",
      cgroupRoot: opts.cgroupParent,
      podLogsDir: `${opts.rootDir}/logs`,
      // This machine's cgroups are v1 controllers beside an empty v2 tree.
      failCgroupV1: false,
      failSwapOn: false,
      protectKernelDefaults: true,
    }),
  );
  const sysctls = `${scratch}/sysctl`;
  await Deno.mkdir(sysctls, { recursive: true });
  const binds: string[] = [];
  for (const [key, value] of Object.entries(KERNEL_TUNABLES)) {
    const file = `${sysctls}/${key.replaceAll("/", "_")}`;
    await Deno.writeTextFile(file, `${value}\n`);
    binds.push(`${file} /proc/sys/${key}`);
  }
  await Deno.writeTextFile(`${sysctls}/binds`, binds.join("\n") + "\n");
  const logFile = `${scratch}/kubelet-${run}.log`;
  await Deno.writeTextFile(logFile, "");
  const child = new Deno.Command("unshare", {
    args: [
      "--mount",
      "--propagation",
      "unchanged",
      "sh",
      "-c",
      NS_SCRIPT,
      "sh",
      `${sysctls}/binds`,
      bin,
      `--config=${config}`,
      `--root-dir=${opts.rootDir}`,
      `--cert-dir=${scratch}/pki`,
      "--hostname-override=testnode",
      "--v=2",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) await Deno.writeFile(logFile, chunk, { append: true });
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  let exited: string | undefined;
  const status = child.status.then((s) => (exited = `exited with code ${s.code}`));
  const log = () => {
    try {
      return Deno.readTextFileSync(logFile);
    } catch {
      return "";
    }
  };
  const upstream: Upstream = {
    log,
    async pods() {
      const resp = await fetch(`http://127.0.0.1:${readOnlyPort}/pods`);
      if (!resp.ok) throw new Error(`/pods answered ${resp.status}`);
      return (await resp.json()).items as Pod[];
    },
    async stop() {
      if (exited === undefined) child.kill("SIGTERM");
      await status;
      await pumps;
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

/** Every sandbox and container of the test pods, as containerd has them. */
async function runtimeView(cri: RuntimeService) {
  const sandboxes = (await cri.listPodSandbox()).filter((s) =>
    POD_NAMES.some((n) => s.labels["io.kubernetes.pod.name"] === `${n}-testnode`)
  );
  const containers = (await cri.listContainers()).filter((c) =>
    sandboxes.some((s) => s.id === c.podSandboxId)
  );
  return {
    sandboxes: sandboxes.map((s) => `${s.id} ${s.state}`).sort(),
    containers: containers.map((c) =>
      `${c.id} ${c.metadata.name} state=${c.state} restartCount=${
        c.annotations["io.kubernetes.container.restartCount"]
      } hash=${c.annotations["io.kubernetes.container.hash"]}`
    ).sort(),
  };
}

/** Each test pod's containers as a kubelet reports them: name → [ID, restartCount, ready]. */
function reported(pods: Pod[]): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const name of POD_NAMES) {
    const pod = findPod(pods, name);
    const statuses = pod?.status?.containerStatuses ?? [];
    if (statuses.length !== 2) return undefined;
    for (const cs of statuses) {
      if (!cs.state?.running || !cs.ready) return undefined;
      out[`${name}/${cs.name}`] = `${cs.containerID} restartCount=${cs.restartCount}`;
    }
  }
  return out;
}

/** Removes the upstream kubelet's `/var/log/containers` links into `logs` (its dir is fixed). */
async function removeLogSymlinks(logs: string): Promise<void> {
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

Deno.test({
  name: "denolet adopts the upstream kubelet's pods and hands them back, no container restarted",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const bin = `${e2eBinDir()}/kubelet`;
    try {
      Deno.statSync(bin);
    } catch (cause) {
      throw new Error(`${bin} is missing: run bash tools/e2e/build.sh`, { cause });
    }
    const rt = await startTestRuntime({ name: "adopt" });
    const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    const scratch = await Deno.makeTempDir({ prefix: "denolet-adopt-" });
    const manifestDir = `${scratch}/manifests`;
    const rootDir = `${scratch}/root`;
    await Deno.mkdir(manifestDir);
    await Deno.mkdir(rootDir);
    // Shared before the kubelet's namespace is made, so what it mounts reaches containerd.
    await new Deno.Command("mount", { args: ["--bind", rootDir, rootDir] }).output();
    await new Deno.Command("mount", { args: ["--make-rshared", rootDir] }).output();
    const image = rt.images.busybox;
    await Deno.writeTextFile(
      `${manifestDir}/web.json`,
      manifest("web", undefined, image, false),
    );
    await Deno.writeTextFile(
      `${manifestDir}/hostweb.json`,
      manifest("hostweb", "7d2e5a60-3f4c-4e8d-b0a1-2c3d4e5f6a7b", image, true),
    );
    const dirs = { endpoint: rt.endpoint, cgroupParent: rt.cgroupParent, manifestDir, rootDir };
    let upstream: Upstream | undefined;
    let agent: Awaited<ReturnType<typeof startAgent>> | undefined;
    try {
      upstream = await startUpstream(bin, dirs, scratch, 1);
      const u1 = upstream;
      const before = await waitFor(
        "the upstream kubelet running both pods",
        async () => reported(await u1.pods()),
        { timeoutMs: 90_000, log: u1.log },
      );
      const runtimeBefore = await runtimeView(cri);
      assert.equal(runtimeBefore.containers.length, 4, JSON.stringify(runtimeBefore));
      await upstream.stop();
      upstream = undefined;

      agent = await startAgent({ runtime: rt, manifestDir, rootDir });
      const a = agent;
      const adopted = await waitFor(
        "denolet reporting both pods running",
        async () => reported(await a.pods()),
        { timeoutMs: 60_000, log: a.log },
      );
      assert.deepEqual(adopted, before, "denolet reports upstream's containers, none restarted");
      // /pods answers from the runtime before the first sync has decided anything; each
      // pod's first sync is its one "create" pod worker run, so once both have ended,
      // every kill or start denolet would make has been made.
      await waitFor("denolet's first sync of both pods", async () => {
        const resp = await fetch(`http://127.0.0.1:${a.readOnlyPort}/metrics`);
        const text = await resp.text();
        const m = text.match(
          /^kubelet_pod_worker_duration_seconds_count\{operation_type="create"\} (\d+)$/m,
        );
        return Number(m?.[1] ?? 0) >= POD_NAMES.length;
      }, { timeoutMs: 30_000, log: a.log });
      assert.deepEqual(reported(await a.pods()), before, "and still after its first syncs");
      assert.deepEqual(await runtimeView(cri), runtimeBefore, "nothing killed or started");
      const status = await agent.stop("SIGTERM");
      assert.equal(status.code, 0, agent.log().split("\n").slice(-20).join("\n"));
      agent = undefined;

      upstream = await startUpstream(bin, dirs, scratch, 2);
      const u2 = upstream;
      const back = await waitFor(
        "the upstream kubelet reporting both pods again",
        async () => reported(await u2.pods()),
        { timeoutMs: 90_000, log: u2.log },
      );
      assert.deepEqual(back, before, "upstream reports the same containers, none restarted");
      assert.deepEqual(await runtimeView(cri), runtimeBefore, "nothing killed or started");
    } finally {
      await upstream?.stop();
      await agent?.stop("SIGKILL");
      cri.close();
      await rt.stop();
      await unmountUnder(rootDir);
      await new Deno.Command("umount", { args: ["-l", rootDir] }).output();
      await removeLogSymlinks(`${rootDir}/logs`);
      await Deno.remove(scratch, { recursive: true }).catch(() => {});
    }
  },
});
