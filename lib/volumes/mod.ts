/**
 * Pod volumes and the per-pod directory tree: emptyDir and hostPath volumes,
 * termination-message files, the managed /etc/hosts, and cleanup.
 *
 * ```ts
 * const paths = await setUpPodVolumes(pod, { rootDir: "/var/lib/kubelet" });
 * // ... later, when the pod is gone for good:
 * await cleanupPodDirs("/var/lib/kubelet", pod.metadata.uid!);
 * ```
 *
 * @module
 */

export { VolumeError } from "./errors.ts";
export { checkHostPathType, type HostPathType } from "./host_path.ts";
export {
  cleanupPodDirs,
  emptyDirPath,
  makeTerminationLogFile,
  managedHostsContent,
  podDir,
  writeEtcHosts,
} from "./pod_dirs.ts";
export { setUpPodVolumes, type VolumeOptions } from "./pod_volumes.ts";
