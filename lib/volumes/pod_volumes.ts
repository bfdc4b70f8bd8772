/**
 * Sets up a pod's volumes before its sandbox starts, and again on every sync
 * so API-backed content stays current: emptyDir directories (on tmpfs for
 * `medium: Memory`), hostPath checks, configMap, secret, downwardAPI and
 * projected volumes. A source with no plugin here stops the pod before
 * anything is set up (plugins.ts), never an emptyDir in its place.
 *
 * @module
 */

import { podKey } from "../api/pod.ts";
import type { Pod, Volume } from "../api/types.ts";
import { intValue } from "../api/quantity.ts";
import type { PodObjects } from "../kubeobjects/types.ts";
import { type Clock, realClock } from "../util/clock.ts";
import { API_VOLUME_PLUGINS, apiVolumeKind, apiVolumePayload } from "./api_volumes.ts";
import { writeAtomically } from "./atomic_writer.ts";
import { RO_MASK, setVolumeOwnership } from "./ownership.ts";
import type { NodeAllocatable } from "./downward.ts";
import { NoVolumePluginError, VolumeError } from "./errors.ts";
import { checkHostPathType } from "./host_path.ts";
import { hostMounter, type Mounter, type MountInfo } from "./mount.ts";
import { emptyDirPath, volumeDir } from "./pod_dirs.ts";
import { unsupportedVolumes, volumeSource } from "./plugins.ts";

/** Options for {@link setUpPodVolumes}. */
export interface VolumeOptions {
  /** The kubelet root dir (`--root-dir`, default /var/lib/kubelet). */
  rootDir: string;
  /** ConfigMaps, Secrets and tokens; undefined in standalone mode. */
  objects?: PodObjects;
  /** Names atomic-writer dirs; the real clock by default. */
  clock?: Clock;
  /** Mounts tmpfs; the host's mount(8) by default. */
  mounter?: Mounter;
  /** Node allocatable: the tmpfs size cap and the downward API's default limits. */
  allocatable?: NodeAllocatable;
  signal?: AbortSignal;
}

/** Where one of a pod's volumes keeps its files on the node. */
export interface PodVolumeDir {
  /** The volume's name in the pod. */
  name: string;
  /** `<rootDir>/pods/<uid>/volumes/<plugin>/<name>`. */
  path: string;
  /**
   * Counted in the pod's ephemeral storage (upstream IsLocalEphemeralVolume):
   * a disk-backed emptyDir or a configMap (and gitRepo, which has no plugin
   * here). Secret, downwardAPI, projected and memory-backed emptyDir volumes
   * are reported but not counted.
   */
  localEphemeral: boolean;
  /**
   * Written by the kubelet, not the pod (configMap, secret, downwardAPI,
   * projected): upstream measures these once and keeps the figure.
   */
  kubeletWritten: boolean;
}

/**
 * The pod's volumes that live in its directory (emptyDir and the API-backed
 * sources), in spec order: the ones upstream's volume stats measure with
 * `du` (hostPath and sources without a plugin have no such directory).
 * @param rootDir the kubelet root dir
 * @param pod the pod (its UID names the directory)
 * @returns one entry per such volume
 */
export function podVolumeDirs(rootDir: string, pod: Pod): PodVolumeDir[] {
  const uid = pod.metadata.uid ?? "";
  const out: PodVolumeDir[] = [];
  for (const volume of pod.spec.volumes ?? []) {
    const kind = apiVolumeKind(volume);
    if (kind !== undefined) {
      out.push({
        name: volume.name,
        path: volumeDir(rootDir, uid, API_VOLUME_PLUGINS[kind], volume.name),
        localEphemeral: kind === "configMap",
        kubeletWritten: true,
      });
      continue;
    }
    const source = volumeSource(volume);
    if (source !== undefined && source !== "emptyDir") continue;
    const medium = volume.emptyDir?.medium ?? "";
    out.push({
      name: volume.name,
      path: emptyDirPath(rootDir, uid, volume.name),
      localEphemeral: medium === "",
      kubeletWritten: false,
    });
  }
  return out;
}

/** Directory mode of every volume dir, as upstream's emptyDir setupDir. */
const VOLUME_DIR_MODE = 0o777;

/**
 * The memory limit of a pod as its cgroup would get it: the larger of the
 * app containers' sum (plus sidecars) and the largest regular init
 * container; undefined unless every container sets one.
 * @param pod the pod
 * @returns bytes, or undefined
 */
export function podMemoryLimit(pod: Pod): number | undefined {
  const limit = (c: { resources?: { limits?: Record<string, string | number> } }) => {
    const q = c.resources?.limits?.memory;
    return q === undefined ? undefined : intValue(q);
  };
  let apps = 0;
  let inits = 0;
  for (const c of pod.spec.containers) {
    const l = limit(c);
    if (l === undefined) return undefined;
    apps += l;
  }
  for (const c of pod.spec.initContainers ?? []) {
    const l = limit(c);
    if (l === undefined) return undefined;
    if (c.restartPolicy === "Always") apps += l;
    else inits = Math.max(inits, l);
  }
  return Math.max(apps, inits);
}

/**
 * The size of a memory-backed volume, as upstream's
 * calculateEmptyDirMemorySize: node allocatable memory, lowered to the pod's
 * memory limit and then to the volume's sizeLimit when those are smaller.
 * @param pod the pod
 * @param sizeLimit the emptyDir sizeLimit, if any
 * @param allocatableMemory node allocatable memory in bytes (0 when unknown)
 * @returns bytes; undefined leaves the kernel's default (half of RAM)
 */
export function memoryVolumeSize(
  pod: Pod,
  sizeLimit: string | number | undefined,
  allocatableMemory: number,
): number | undefined {
  let size = allocatableMemory > 0 ? allocatableMemory : undefined;
  const podLimit = podMemoryLimit(pod);
  if (podLimit !== undefined && podLimit > 0 && (size === undefined || podLimit <= size)) {
    size = podLimit;
  }
  const volLimit = sizeLimit === undefined ? 0 : intValue(sizeLimit);
  if (volLimit > 0 && (size === undefined || volLimit <= size)) size = volLimit;
  return size;
}

/**
 * Creates a volume dir (0777 whatever the umask) and, when asked, a tmpfs on it.
 * @returns true when the dir (or its tmpfs) was set up now, false when it was already there
 */
async function ensureVolumeDir(
  dir: string,
  memory: { size: number | undefined } | undefined,
  mounter: Mounter,
  mounts: () => Promise<MountInfo[]>,
): Promise<boolean> {
  let fresh = await Deno.stat(dir).then(() => false, () => true);
  await Deno.mkdir(dir, { recursive: true, mode: VOLUME_DIR_MODE });
  if (memory) {
    const real = await Deno.realPath(dir);
    if (!(await mounts()).some((m) => m.mountPoint === real)) {
      await mounter.mountTmpfs(dir, memory.size);
      fresh = true;
    }
  }
  const info = await Deno.stat(dir);
  // A fresh tmpfs root is 1777; leave it, as upstream does.
  if (!memory && ((info.mode ?? 0) & 0o777) !== VOLUME_DIR_MODE) {
    await Deno.chmod(dir, VOLUME_DIR_MODE);
  }
  return fresh;
}

/**
 * Prepares every volume of a pod and brings API-backed content up to date.
 * Idempotent: emptyDirs keep their content, tmpfs is mounted once, unchanged
 * configMap/secret/downwardAPI/projected files are left alone.
 * @param pod the pod
 * @param opts the root dir, object source, mounter and node facts
 * @returns volume name → host path to bind-mount
 * @throws {NoVolumePluginError} when a container uses a volume whose source
 *   denolet does not implement; nothing is set up then
 * @throws {VolumeError} naming the pod and volume, worded as upstream's
 *   `MountVolume.SetUp failed: …` (e.g. `configmap "x" not found`)
 */
export async function setUpPodVolumes(
  pod: Pod,
  opts: VolumeOptions,
): Promise<Map<string, string>> {
  const podName = podKey(pod);
  const refused = unsupportedVolumes(pod);
  if (refused.length > 0) throw new NoVolumePluginError(podName, refused);
  const uid = pod.metadata.uid ?? "";
  const mounter = opts.mounter ?? hostMounter;
  const allocatable = opts.allocatable ?? {};
  const allocatableMemory = allocatable.memory === undefined ? 0 : intValue(allocatable.memory);
  let mountTable: Promise<MountInfo[]> | undefined;
  const mounts = () => (mountTable ??= mounter.mounts());
  const fsGroup = pod.spec.securityContext?.fsGroup;
  const paths = new Map<string, string>();
  for (const volume of pod.spec.volumes ?? []) {
    try {
      const path = await setUpVolume(volume);
      if (path !== undefined) paths.set(volume.name, path);
    } catch (err) {
      throw new VolumeError(
        podName,
        volume.name,
        `MountVolume.SetUp failed: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }
  return paths;

  async function setUpVolume(volume: Volume): Promise<string | undefined> {
    if (volume.hostPath) {
      await checkHostPathType(volume.hostPath.path, volume.hostPath.type ?? "");
      return volume.hostPath.path;
    }
    const kind = apiVolumeKind(volume);
    if (kind) {
      const dir = volumeDir(opts.rootDir, uid, API_VOLUME_PLUGINS[kind], volume.name);
      // Upstream keeps secret and projected (token) content off disk.
      const inMemory = kind === "secret" || kind === "projected";
      const ctx = {
        pod,
        objects: opts.objects,
        allocatable,
        ...(opts.signal ? { signal: opts.signal } : {}),
      };
      // Content first: a missing object must not leave an empty mounted dir behind.
      const payload = await apiVolumePayload(ctx, volume);
      const size = inMemory ? memoryVolumeSize(pod, undefined, allocatableMemory) : undefined;
      await ensureVolumeDir(dir, inMemory ? { size } : undefined, mounter, mounts);
      // Upstream's configMap, secret, downwardAPI and projected mounters are read-only.
      await writeAtomically(dir, payload, {
        clock: opts.clock ?? realClock,
        ...(fsGroup !== undefined
          ? { setPerms: () => setVolumeOwnership(dir, fsGroup, true), setPermsFileBits: RO_MASK }
          : {}),
      });
      return dir;
    }
    const source = volumeSource(volume);
    // An unused volume without a plugin needs nothing, as upstream skips it.
    if (source !== undefined && source !== "emptyDir") return undefined;
    // A volume without a source is an emptyDir (upstream defaulting).
    const dir = emptyDirPath(opts.rootDir, uid, volume.name);
    const memory = volume.emptyDir?.medium === "Memory"
      ? { size: memoryVolumeSize(pod, volume.emptyDir.sizeLimit, allocatableMemory) }
      : undefined;
    // Upstream's emptyDir applies fsGroup once, when it sets the volume up.
    if (await ensureVolumeDir(dir, memory, mounter, mounts)) {
      await setVolumeOwnership(dir, fsGroup, false);
    }
    return dir;
  }
}
