/**
 * Sets up a pod's volumes before its sandbox starts: emptyDir directories
 * under the pod dir, hostPath checks. Other sources are refused by name.
 *
 * @module
 */

import type { Pod, Volume } from "../api/types.ts";
import { VolumeError } from "./errors.ts";
import { checkHostPathType } from "./host_path.ts";
import { emptyDirPath } from "./pod_dirs.ts";

/** Options for {@link setUpPodVolumes}. */
export interface VolumeOptions {
  /** The kubelet root dir (`--root-dir`, default /var/lib/kubelet). */
  rootDir: string;
}

const UNSUPPORTED = [
  "configMap",
  "secret",
  "downwardAPI",
  "projected",
  "persistentVolumeClaim",
] as const;

async function setUpEmptyDir(pod: Pod, volume: Volume, rootDir: string): Promise<string> {
  if (volume.emptyDir?.medium === "Memory") {
    // A tmpfs needs mount(2), which this agent does not have.
    throw new Error('emptyDir medium "Memory" (tmpfs) is not supported by this node yet');
  }
  const path = emptyDirPath(rootDir, pod.metadata.uid ?? "", volume.name);
  await Deno.mkdir(path, { recursive: true });
  // Any container user may write to an emptyDir, whatever our umask.
  await Deno.chmod(path, 0o777);
  return path;
}

/**
 * Prepares every volume of a pod. Idempotent: existing emptyDirs keep their content.
 * @param pod the pod
 * @param opts the root dir
 * @returns volume name → host path to bind-mount
 * @throws {VolumeError} naming the pod and volume
 */
export async function setUpPodVolumes(
  pod: Pod,
  opts: VolumeOptions,
): Promise<Map<string, string>> {
  const podName = `${pod.metadata.namespace ?? "default"}/${pod.metadata.name ?? ""}`;
  const paths = new Map<string, string>();
  for (const volume of pod.spec.volumes ?? []) {
    try {
      if (volume.hostPath) {
        await checkHostPathType(volume.hostPath.path, volume.hostPath.type ?? "");
        paths.set(volume.name, volume.hostPath.path);
        continue;
      }
      const unsupported = UNSUPPORTED.find((k) => volume[k] !== undefined);
      if (unsupported) {
        throw new Error(`${unsupported} volumes are not supported by this node yet`);
      }
      // A volume without a source is an emptyDir (upstream defaulting).
      paths.set(volume.name, await setUpEmptyDir(pod, volume, opts.rootDir));
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
}
