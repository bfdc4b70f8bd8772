/**
 * The harness itself against a real containerd: images present, a container survives a
 * containerd restart, and stop() leaves no directory, process, cgroup or bridge behind.
 */

import assert from "node:assert/strict";
import { createRuntimeService, type PodSandboxConfig } from "../../lib/cri/mod.ts";
import { startTestRuntime } from "../harness/mod.ts";
import { pathExists, waitFor } from "../kit/mod.ts";

const decoder = new TextDecoder();

async function ctr(socket: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("ctr", {
    args: ["--address", socket, "--timeout", "10s", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (out.code !== 0) {
    throw new Error(`ctr ${args.join(" ")} failed: ${decoder.decode(out.stderr)}`);
  }
  return decoder.decode(out.stdout);
}

/**
 * Runs a busybox container named `name` in cgroup `<cgroupParent>/<name>` through containerd's
 * own API (`ctr run -d`), with the snapshotter the runtime's config names.
 */
async function runProbe(
  rt: { dir: string; endpoint: string; cgroupParent: string; images: { busybox: string } },
  name: string,
  command: string[],
): Promise<void> {
  const socket = rt.endpoint.replace(/^unix:\/\//, "");
  const config = await Deno.readTextFile(`${rt.dir}/config.toml`);
  const snapshotter = config.match(/snapshotter = "(\w+)"/)?.[1] ?? "overlayfs";
  await ctr(
    socket,
    "-n",
    "k8s.io",
    "run",
    "-d",
    "--snapshotter",
    snapshotter,
    "--cgroup",
    `${rt.cgroupParent}/${name}`,
    rt.images.busybox,
    name,
    ...command,
  );
}

/** PIDs whose command line mentions `text` (our containerd, its shims, our containers). */
function processesMentioning(text: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (cmdline.includes(text) && state !== "Z") pids.push(Number(entry.name));
    } catch {
      // exited while we looked
    }
  }
  return pids;
}

Deno.test("startTestRuntime() runs containerd with the test images, restarts it and cleans up on stop()", async () => {
  const rt = await startTestRuntime({ name: "harness" });
  const socket = rt.endpoint.replace(/^unix:\/\//, "");
  const marker = `denolet-harness-${crypto.randomUUID().slice(0, 8)}`;
  try {
    assert.match(rt.endpoint, /^unix:\/\/\/.+\/containerd\.sock$/);
    assert.ok(socket.startsWith(`${rt.dir}/`), "the socket lives in the runtime dir");
    assert.match(rt.cgroupParent, /^\/denolet-test-[0-9a-f]+$/);
    const config = await Deno.readTextFile(`${rt.dir}/config.toml`);
    assert.match(config, /^version = 2$/m);
    assert.match(config, /restrict_oom_score_adj = true/);
    assert.ok(config.includes(`sandbox_image = "${rt.images.pause}"`));

    const images = (await ctr(socket, "-n", "k8s.io", "images", "ls", "-q")).split("\n");
    assert.ok(images.includes(rt.images.busybox), `busybox missing from ${images.join(", ")}`);
    assert.ok(images.includes(rt.images.pause), `pause missing from ${images.join(", ")}`);

    // A container in our cgroup parent, run through containerd's own API: it must keep
    // running across a containerd restart and be gone after stop().
    await runProbe(rt, "harness-probe", ["sh", "-c", `sleep 3600; echo ${marker}`]);
    await waitFor("the probe container to run", async () => {
      return (await ctr(socket, "-n", "k8s.io", "tasks", "ls")).includes("RUNNING");
    }, { timeoutMs: 10_000, intervalMs: 100 });
    assert.equal(processesMentioning(marker).length, 1, "the probe container runs");
    assert.ok(await pathExists(`/sys/fs/cgroup/memory${rt.cgroupParent}/harness-probe`));

    const daemonsBefore = processesMentioning(`${rt.dir}/config.toml`);
    assert.equal(daemonsBefore.length, 1, "one containerd runs our config");
    await rt.restart();
    const daemonsAfter = processesMentioning(`${rt.dir}/config.toml`);
    assert.equal(daemonsAfter.length, 1, "one containerd runs our config after restart");
    assert.notEqual(daemonsAfter[0], daemonsBefore[0], "containerd was restarted");
    assert.match(await ctr(socket, "version"), /Server:/);
    assert.match(await ctr(socket, "-n", "k8s.io", "tasks", "ls"), /harness-probe\s+\d+\s+RUNNING/);
    assert.equal(processesMentioning(marker).length, 1, "the container survived the restart");
  } finally {
    await rt.stop();
  }

  assert.ok(!(await pathExists(rt.dir)), `${rt.dir} was removed`);
  assert.deepEqual(processesMentioning(rt.dir), [], "no containerd or shim of ours remains");
  assert.deepEqual(processesMentioning(marker), [], "the container was killed");
  for (const hierarchy of ["memory", "cpu", "pids", "systemd", "unified"]) {
    const path = `/sys/fs/cgroup/${hierarchy}${rt.cgroupParent}`;
    assert.ok(!(await pathExists(path)), `${path} was removed`);
  }
  const mounts = await Deno.readTextFile("/proc/self/mountinfo");
  assert.ok(!mounts.includes(rt.dir), "nothing stays mounted under the runtime dir");
  await rt.stop(); // idempotent
});

Deno.test("stop() removes running pods with their network, cgroups and CNI state", async () => {
  const rt = await startTestRuntime({ name: "harness-pods" });
  const cri = createRuntimeService({ endpoint: rt.endpoint });
  const uid = crypto.randomUUID();
  const sandboxConfig: PodSandboxConfig = {
    metadata: { name: "harness-pod", uid, namespace: "default", attempt: 0 },
    hostname: "harness-pod",
    logDirectory: `${rt.dir}/pods/${uid}`,
    labels: {},
    annotations: {},
    linux: { cgroupParent: `${rt.cgroupParent}/pod${uid}` },
  };
  let sandboxId = "";
  let bridge = "";
  try {
    sandboxId = await cri.runPodSandbox(sandboxConfig);
    const { status } = await cri.podSandboxStatus(sandboxId);
    const ip = status.network?.ip ?? "";
    assert.match(ip, /^10\.88\.\d+\.\d+$/, "the pod got an address on the test bridge");
    const [conflist] = [...Deno.readDirSync(`${rt.dir}/cni/net.d`)];
    assert.ok(conflist, "a CNI conflist was written");
    const net = JSON.parse(await Deno.readTextFile(`${rt.dir}/cni/net.d/${conflist.name}`));
    bridge = String(net.plugins[0].bridge);
    const containerId = await cri.createContainer(sandboxId, {
      metadata: { name: "sleeper", attempt: 0 },
      image: { image: rt.images.busybox },
      command: ["sleep", "3600"],
      logPath: "sleeper.log",
      labels: {},
      annotations: {},
    }, sandboxConfig);
    await cri.startContainer(containerId);
    assert.ok(await pathExists(`/sys/class/net/${bridge}`), `bridge ${bridge} exists`);
  } finally {
    cri.close();
    await rt.stop();
  }
  assert.ok(!(await pathExists(rt.dir)), `${rt.dir} was removed`);
  assert.deepEqual(processesMentioning(rt.dir), [], "no containerd or shim of ours remains");
  assert.ok(!(await pathExists(`/sys/class/net/${bridge}`)), `bridge ${bridge} was removed`);
  assert.ok(
    !(await pathExists(`/sys/fs/cgroup/memory${rt.cgroupParent}`)),
    "the pod cgroups were removed",
  );
  const cache = await pathExists("/var/lib/cni/results")
    ? [...Deno.readDirSync("/var/lib/cni/results")]
    : [];
  assert.deepEqual(cache.filter((entry) => entry.name.includes(sandboxId)), [], "no CNI cache");
});

/** The cpu-hierarchy cgroup of a process, from /proc/PID/cgroup (v1 `N:cpu…:/path`). */
function cpuCgroupOf(pid: number): string | undefined {
  const lines = Deno.readTextFileSync(`/proc/${pid}/cgroup`).split("\n");
  return lines.map((l) => l.split(":")).find(([, c]) => (c ?? "").split(",").includes("cpu"))
    ?.[2];
}

Deno.test("ownCpuCgroup runs containerd and its shims in a cpu cgroup of their own, across a restart, and removes it", async () => {
  const rt = await startTestRuntime({ name: "harness-cpu", ownCpuCgroup: true });
  const group = `${rt.cgroupParent}-runtime`;
  try {
    const [daemon] = processesMentioning(`${rt.dir}/config.toml`);
    assert.ok(daemon, "containerd runs");
    assert.equal(cpuCgroupOf(daemon), group);
    assert.notEqual(cpuCgroupOf(Deno.pid), group, "the test process stays where it was");
    // Only the cpu hierarchy: containerd's memory cgroup is the test process's.
    const memoryOf = (pid: number) =>
      Deno.readTextFileSync(`/proc/${pid}/cgroup`).split("\n").find((l) =>
        l.split(":")[1] === "memory"
      )?.split(":")[2];
    assert.equal(memoryOf(daemon), memoryOf(Deno.pid));

    await runProbe(rt, "cpu-probe", ["sleep", "3600"]);
    const shims = await waitFor("the probe's shim", () => {
      const found = processesMentioning(rt.dir).filter((pid) =>
        (Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0")[0] ?? "").endsWith(
          "shim-runc-v2",
        )
      );
      return found.length > 0 ? found : undefined;
    }, { timeoutMs: 10_000, intervalMs: 100 });
    for (const shim of shims) assert.equal(cpuCgroupOf(shim), group, `shim ${shim}`);

    await rt.restart();
    const [again] = processesMentioning(`${rt.dir}/config.toml`);
    assert.ok(again && again !== daemon, "containerd was restarted");
    assert.equal(cpuCgroupOf(again), group, "the restarted containerd joins it again");
  } finally {
    await rt.stop();
  }
  assert.ok(!(await pathExists(`/sys/fs/cgroup/cpu${group}`)), `${group} was removed`);
  assert.deepEqual(processesMentioning(rt.dir), [], "no containerd or shim of ours remains");
});
