/**
 * The per-pod directory tree under the kubelet's root dir, laid out as
 * upstream's:
 *
 * ```
 * <rootDir>/pods/<uid>/
 *   volumes/kubernetes.io~<plugin>/<name>/    volumes (empty-dir, configmap, secret,
 *                                             downward-api, projected)
 *   containers/<container>/<random id>        termination-message files (0666)
 *   etc-hosts                                 the managed /etc/hosts (etc_hosts.ts)
 * ```
 *
 * @module
 */

import { hostMounter, type Mounter, mountPointsUnder } from "./mount.ts";

/** The emptyDir plugin's directory name under `volumes/`. */
export const EMPTY_DIR_PLUGIN = "kubernetes.io~empty-dir";

/**
 * `<rootDir>/pods/<uid>`.
 * @param rootDir the kubelet root dir
 * @param uid the pod UID
 * @returns the pod's directory
 */
export function podDir(rootDir: string, uid: string): string {
  if (!uid || uid.includes("/") || uid === "." || uid === "..") {
    throw new Error(`invalid pod UID "${uid}" for a directory name`);
  }
  return `${rootDir.replace(/\/+$/, "")}/pods/${uid}`;
}

/**
 * `<rootDir>/pods/<uid>/volumes/<plugin>/<name>`.
 * @param rootDir the kubelet root dir
 * @param uid the pod UID
 * @param plugin the escaped plugin name, e.g. `kubernetes.io~configmap`
 * @param name the volume name
 * @returns the volume's directory
 */
export function volumeDir(rootDir: string, uid: string, plugin: string, name: string): string {
  if (!name || name.includes("/") || name === "." || name === "..") {
    throw new Error(`invalid volume name "${name}" for a directory name`);
  }
  return `${podDir(rootDir, uid)}/volumes/${plugin}/${name}`;
}

/**
 * `<rootDir>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>`.
 * @param rootDir the kubelet root dir
 * @param uid the pod UID
 * @param name the volume name
 * @returns the emptyDir's directory
 */
export function emptyDirPath(rootDir: string, uid: string, name: string): string {
  return volumeDir(rootDir, uid, EMPTY_DIR_PLUGIN, name);
}

/**
 * `<rootDir>/pods/<uid>/etc-hosts`, the pod's managed /etc/hosts (etc_hosts.ts).
 * @param rootDir the kubelet root dir
 * @param uid the pod UID
 * @returns the file's path
 */
export function etcHostsPath(rootDir: string, uid: string): string {
  return `${podDir(rootDir, uid)}/etc-hosts`;
}

/**
 * Creates a fresh, empty file for one container instance's termination
 * message (a new name per instance, so a restart does not see the old message).
 * @param rootDir the kubelet root dir
 * @param uid the pod UID
 * @param containerName the container
 * @returns the file's path
 */
export async function makeTerminationLogFile(
  rootDir: string,
  uid: string,
  containerName: string,
): Promise<string> {
  const dir = `${podDir(rootDir, uid)}/containers/${containerName}`;
  await Deno.mkdir(dir, { recursive: true, mode: 0o750 });
  const path = `${dir}/${crypto.randomUUID().slice(0, 8)}`;
  await Deno.writeTextFile(path, "", { mode: 0o666 });
  // The container may run as any user and must be able to write its message.
  await Deno.chmod(path, 0o666);
  return path;
}

/** Unmounts every mount point at `dir` or below, deepest first; a missing dir has none. */
async function unmountAllUnder(dir: string, mounter: Mounter): Promise<void> {
  let real: string;
  try {
    // mountinfo holds resolved paths.
    real = await Deno.realPath(dir);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return;
    throw err;
  }
  for (const mountPoint of mountPointsUnder(await mounter.mounts(), real)) {
    await mounter.unmount(mountPoint);
  }
}

/**
 * Tears down a pod's volumes once none of its containers runs, as upstream's
 * volume manager does for a terminated pod (emptyDir's TearDown and the
 * reconciler's unmounts): every mount under `<podDir>/volumes` (the tmpfs of
 * a memory-backed emptyDir, secret or projected volume) is unmounted, then
 * each volume's directory is removed with its content. Nothing is removed
 * while an unmount fails. The pod dir itself (the plugin dirs, termination
 * messages, hosts file) stays until the pod is deleted, as upstream keeps it
 * until cleanupOrphanedPodDirs. Idempotent.
 * @param rootDir the kubelet root dir
 * @param uid the pod UID
 * @param mounter unmounts and lists mounts (the host's by default)
 * @throws {Error} naming the pod UID when an unmount or a removal fails
 */
export async function tearDownPodVolumes(
  rootDir: string,
  uid: string,
  mounter: Mounter = hostMounter,
): Promise<void> {
  const volumes = `${podDir(rootDir, uid)}/volumes`;
  try {
    // The agent makes this a directory; a symlink would lead the removals below elsewhere.
    if ((await Deno.lstat(volumes)).isSymlink) {
      throw new Error(`the volumes dir of pod UID "${uid}" is a symlink: ${volumes}`);
    }
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return;
    throw err;
  }
  try {
    await unmountAllUnder(volumes, mounter);
  } catch (err) {
    throw new Error(`failed to unmount the volumes of pod UID "${uid}"`, { cause: err });
  }
  try {
    for await (const plugin of Deno.readDir(volumes)) {
      if (!plugin.isDirectory) continue;
      for await (const volume of Deno.readDir(`${volumes}/${plugin.name}`)) {
        await Deno.remove(`${volumes}/${plugin.name}/${volume.name}`, { recursive: true });
      }
    }
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return;
    throw new Error(`failed to remove the volumes of pod UID "${uid}"`, { cause: err });
  }
}

/**
 * Removes a pod's directory tree (volumes, termination logs, hosts file):
 * its volumes are torn down first ({@link tearDownPodVolumes}), and nothing
 * is removed while something under the pod dir is still mounted, so a failed
 * unmount never deletes through a mount. hostPath volumes live elsewhere and
 * are never touched. Idempotent.
 * @param rootDir the kubelet root dir
 * @param uid the pod UID
 * @param mounter unmounts and lists mounts (the host's by default)
 * @throws {Error} for a UID that is not a plain directory name, or when an unmount or removal fails
 */
export async function cleanupPodDirs(
  rootDir: string,
  uid: string,
  mounter: Mounter = hostMounter,
): Promise<void> {
  const dir = podDir(rootDir, uid);
  await tearDownPodVolumes(rootDir, uid, mounter);
  try {
    await unmountAllUnder(dir, mounter);
  } catch (err) {
    throw new Error(`failed to unmount the volumes of pod UID "${uid}"`, { cause: err });
  }
  try {
    await Deno.remove(dir, { recursive: true });
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) {
      throw new Error(`failed to remove the directories of pod UID "${uid}"`, { cause: err });
    }
  }
}
