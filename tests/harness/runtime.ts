/**
 * {@link startTestRuntime}: a private containerd in a temporary directory with the test
 * images imported, a CNI bridge network and a cgroup parent of its own; and its
 * `restart()` / `stop()`.
 *
 * ```
 *  startTestRuntime ──► running ──restart()──► running (same socket, root, state)
 *                          │
 *                        stop() ──► gone: tasks, shims, mounts, dir, cgroups, bridge
 * ```
 *
 * @module
 */

import { exec } from "./_exec.ts";
import {
  choosePodNetwork,
  cniConfList,
  containerdConfig,
  gatedRuncScript,
  type PodNetwork,
  type RuntimePaths,
  runtimePaths,
} from "./config.ts";
import {
  ctr,
  isOurContainerd,
  killContainerd,
  startContainerd,
  stopContainerd,
} from "./containerd.ts";
import { buildTestImages, type TestImage } from "./images.ts";
import { createCgroupParent, createCpuCgroup, removeCgroupParent, unmountUnder } from "./mounts.ts";
import { requireRoot, which } from "./require_root.ts";
import { killLeftovers, removeCniCache, removePodsViaCri, removeWorkloads } from "./teardown.ts";

/** A private containerd for one test (or one test file). */
export interface TestRuntime {
  /** CRI endpoint, `unix:///<dir>/containerd.sock`. */
  endpoint: string;
  /** The temporary directory holding root/, state/, the socket, config and logs. */
  dir: string;
  /** Image references present in the `k8s.io` namespace. */
  images: { busybox: string; pause: string };
  /** A cgroupfs-style cgroup parent (e.g. `/denolet-test-1a2b3c`) for the tests' pods. */
  cgroupParent: string;
  /**
   * Stops every sandbox and container of this containerd, containerd itself (by PID),
   * unmounts and removes the directory, the cgroup parent and the pod bridge.
   * Safe to call more than once.
   */
  stop(): Promise<void>;
  /**
   * Stops containerd only (SIGTERM by PID, or SIGKILL with `kill`: a crash; containers
   * keep running) and starts it again on the same socket, root and state. `whileDown`
   * runs between the two, to observe what clients see while the runtime is gone.
   */
  restart(whileDown?: () => Promise<void>, opts?: { kill?: boolean }): Promise<void>;
  /**
   * Writes the CNI conflist into containerd's conf_dir (containerd picks it up on its
   * own and turns NetworkReady true). Already done at start unless `podNetwork: false`.
   */
  installPodNetwork(): Promise<void>;
  /** Removes the CNI conflist: containerd reloads and reports NetworkReady=false. */
  removePodNetwork(): Promise<void>;
  /**
   * Imports (and unpacks) an OCI archive into the `k8s.io` namespace, as the test images
   * were (`ctr images import`).
   */
  importImage(image: TestImage): Promise<void>;
  /** containerd's root (image content, snapshots, metadata): on its own tmpfs with `rootSizeBytes`. */
  root: string;
  /**
   * With `runcCreateGate`: the file that, while it exists, holds every `runc create`
   * (so RunPodSandbox and StartContainer) in the runtime; `<createGate>.held` appears
   * once one is held. Undefined otherwise.
   */
  createGate: string | undefined;
}

/** Options for {@link startTestRuntime}. */
export interface StartTestRuntimeOptions {
  /** A short label for the directory name, to tell runtimes apart when debugging. */
  name?: string;
  /**
   * False starts containerd with an empty CNI conf_dir, so it reports NetworkReady=false
   * until {@link TestRuntime.installPodNetwork}; true by default.
   */
  podNetwork?: boolean;
  /** Registries containerd reaches over plain http, host → URL (config.ts's `plainHttpRegistries`). */
  plainHttpRegistries?: Readonly<Record<string, string>>;
  /**
   * Puts containerd's root (the image filesystem) on a tmpfs of this size, so a test
   * controls how full it is. Unmounted by stop(). By default the root is a plain directory.
   */
  rootSizeBytes?: number;
  /**
   * Runs containerd, and so its shims and their runc calls, in a cpu cgroup of its own
   * (`<cgroupParent>-runtime`, cgroup v1's cpu hierarchy), as a systemd node runs
   * containerd.service beside kubelet.service: a burst of hundreds of shims then takes one
   * group's share of the CPUs instead of one share per thread against every other
   * process, the agent's event loop and the apiserver included. Only the cpu hierarchy
   * (memory, pids and the rest stay as they are); refused where there is no v1 cpu
   * hierarchy. Off by default.
   */
  ownCpuCgroup?: boolean;
  /**
   * Runs the default handler's runc through config.ts's `gatedRuncScript`, so a test
   * can hold sandbox and container creation in the runtime ({@link TestRuntime.createGate}).
   * Off by default.
   */
  runcCreateGate?: boolean;
}

let overlayWorks: boolean | undefined;

/** overlayfs when the kernel lets us mount it on this filesystem, else native. */
async function pickSnapshotter(dir: string): Promise<string> {
  if (overlayWorks === undefined) {
    const probe = `${dir}/overlay-probe`;
    for (const sub of ["lower", "upper", "work", "merged"]) {
      await Deno.mkdir(`${probe}/${sub}`, { recursive: true });
    }
    const mounted = await exec("mount", [
      "-t",
      "overlay",
      "overlay",
      "-o",
      `lowerdir=${probe}/lower,upperdir=${probe}/upper,workdir=${probe}/work`,
      `${probe}/merged`,
    ], { allowFailure: true });
    if (mounted.code === 0) await exec("umount", [`${probe}/merged`]);
    await Deno.remove(probe, { recursive: true });
    overlayWorks = mounted.code === 0;
  }
  return overlayWorks ? "overlayfs" : "native";
}

async function deleteLink(name: string): Promise<void> {
  const shown = await exec("ip", ["link", "show", name], { allowFailure: true });
  if (shown.code === 0) await exec("ip", ["link", "delete", name]);
}

/**
 * Starts a private containerd (with runc) in a new temporary directory and imports the
 * busybox and pause images into its `k8s.io` namespace.
 *
 * @param opts see {@link StartTestRuntimeOptions}
 * @returns the running runtime; the caller must `stop()` it
 * @throws Error when not root or a tool is missing ({@link requireRoot}), or with the tail
 *   of containerd's log when it does not come up
 */
export async function startTestRuntime(opts: StartTestRuntimeOptions = {}): Promise<TestRuntime> {
  requireRoot();
  const images = await buildTestImages();
  const id = crypto.randomUUID().replaceAll("-", "").slice(0, 6);
  const label = (opts.name ?? "rt").replace(/[^A-Za-z0-9_-]/g, "").slice(0, 16) || "rt";
  const dir = await Deno.makeTempDir({ prefix: `denolet-${label}-` });
  const paths = runtimePaths(dir);
  const cgroupParent = `/denolet-test-${id}`;
  const runtimeCgroup = opts.ownCpuCgroup ? `${cgroupParent}-runtime` : undefined;
  let runtimeProcs: string[] = [];
  const createGate = opts.runcCreateGate ? `${dir}/runc-create-gate` : undefined;
  let network: PodNetwork | undefined;
  let pid: number | undefined;
  let stopping: Promise<void> | undefined;

  const tearDown = async (): Promise<void> => {
    const problems: string[] = [];
    const step = async (what: string, fn: () => unknown): Promise<void> => {
      try {
        await fn();
      } catch (err) {
        problems.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
      }
    };
    const containerIds: string[] = [];
    // A containerd that died (or a test killed) cannot be asked; what it left running is
    // found by socket address and cgroup below.
    if (pid !== undefined && isOurContainerd(pid, paths)) {
      const running = pid;
      await step("removing pods through CRI", async () => {
        const refused = await removePodsViaCri(`unix://${paths.socket}`);
        if (refused.length > 0) throw new Error(refused.join("; "));
      });
      // Whatever CRI did not own (ctr-made containers) or could not remove.
      await step("removing tasks and containers", async () => {
        const refused = await removeWorkloads(paths, containerIds);
        if (refused.length > 0) throw new Error(refused.join("; "));
      });
      await step("stopping containerd", () => stopContainerd(running, paths));
    }
    await step("killing leftover processes", () => killLeftovers(paths, cgroupParent));
    if (runtimeCgroup) {
      await step("killing leftover runtime processes", () => killLeftovers(paths, runtimeCgroup));
    }
    await step("unmounting", () => unmountUnder(dir));
    await step("removing the directory", () => Deno.remove(dir, { recursive: true }));
    await step("removing cgroups", () => removeCgroupParent(cgroupParent));
    if (runtimeCgroup) {
      await step("removing the runtime's cgroup", () => removeCgroupParent(runtimeCgroup));
    }
    if (network !== undefined) {
      const { bridge, name } = network;
      await step("removing the pod bridge", () => deleteLink(bridge));
      await step("removing CNI cache entries", () => removeCniCache(name, containerIds));
    }
    if (problems.length > 0) {
      throw new Error(`harness: stopping the runtime in ${dir} left work: ${problems.join("; ")}`);
    }
  };
  const installPodNetwork = async (): Promise<void> => {
    if (network === undefined) throw new Error(`harness: runtime in ${dir} has no pod network`);
    // Written in place: containerd 1.6's conf syncer reloads on a write event and
    // ignores a create (so a file renamed into the directory goes unseen).
    await Deno.writeTextFile(
      `${paths.cniConfDir}/10-denolet-test.conflist`,
      cniConfList(network, paths.cniDataDir),
    );
  };
  const removePodNetwork = (): Promise<void> =>
    Deno.remove(`${paths.cniConfDir}/10-denolet-test.conflist`);
  // Every caller (a test's finally, a suite's teardown) waits for the one tear-down.
  const stop = (): Promise<void> => stopping ??= tearDown();

  try {
    const snapshotter = await pickSnapshotter(dir);
    network = await choosePodNetwork(id);
    await Deno.mkdir(paths.cniConfDir, { recursive: true });
    await Deno.mkdir(paths.cniDataDir, { recursive: true });
    if (opts.podNetwork ?? true) await installPodNetwork();
    if (createGate) {
      await Deno.writeTextFile(`${dir}/runc-gated`, gatedRuncScript(createGate, which("runc")!), {
        mode: 0o755,
      });
    }
    await Deno.writeTextFile(
      paths.config,
      containerdConfig({
        paths,
        sandboxImage: images.pause.ref,
        snapshotter,
        ...(opts.plainHttpRegistries ? { plainHttpRegistries: opts.plainHttpRegistries } : {}),
        ...(createGate ? { runcBinary: `${dir}/runc-gated` } : {}),
      }),
    );
    if (opts.rootSizeBytes !== undefined) {
      await Deno.mkdir(paths.root, { recursive: true });
      await exec("mount", [
        "-t",
        "tmpfs",
        "-o",
        `size=${opts.rootSizeBytes},mode=0711`,
        "denolet-test-root",
        paths.root,
      ]);
    }
    createCgroupParent(cgroupParent);
    if (runtimeCgroup) runtimeProcs = createCpuCgroup(runtimeCgroup);
    pid = await startContainerd(paths, undefined, runtimeProcs);
    for (const image of [images.busybox, images.pause]) {
      await importImage(paths, snapshotter, image.archive, image.ref);
    }
  } catch (err) {
    await stop().catch((stopErr) => {
      console.error(`harness: clean-up after a failed start also failed: ${stopErr}`);
    });
    throw err;
  }

  return {
    endpoint: `unix://${paths.socket}`,
    dir,
    images: { busybox: images.busybox.ref, pause: images.pause.ref },
    cgroupParent,
    stop,
    installPodNetwork,
    removePodNetwork,
    root: paths.root,
    createGate,
    importImage: async (image: TestImage) => {
      await importImage(paths, await pickSnapshotter(dir), image.archive, image.ref);
    },
    async restart(whileDown?: () => Promise<void>, opts: { kill?: boolean } = {}): Promise<void> {
      if (stopping !== undefined) {
        throw new Error(`harness: runtime in ${dir} was stopped; cannot restart`);
      }
      if (pid !== undefined) {
        await (opts.kill ? killContainerd(pid, paths) : stopContainerd(pid, paths));
      }
      pid = undefined;
      try {
        await whileDown?.();
      } finally {
        pid = await startContainerd(paths, undefined, runtimeProcs);
      }
    },
  };
}

async function importImage(
  paths: RuntimePaths,
  snapshotter: string,
  archive: string,
  ref: string,
): Promise<void> {
  try {
    await ctr(paths, ["-n", "k8s.io", "images", "import", "--snapshotter", snapshotter, archive]);
  } catch (cause) {
    throw new Error(`harness: cannot import image ${ref} from ${archive}`, { cause });
  }
}
