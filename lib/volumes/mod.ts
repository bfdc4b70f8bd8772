/**
 * Pod volumes and the per-pod directory tree: emptyDir (disk or tmpfs),
 * hostPath, configMap, secret, downwardAPI and projected volumes (written
 * with upstream's atomic `..data` symlink swap), the refusal of every other
 * source (no plugin, as upstream's FailedMount), subPath preparation,
 * termination-message files, the managed /etc/hosts, and cleanup.
 *
 * ```ts
 * // Before the sandbox, and again on every sync to refresh API-backed content:
 * const paths = await setUpPodVolumes(pod, { rootDir: "/var/lib/kubelet", objects });
 * // ... once it is terminated (its containers stopped): unmount and remove its volumes,
 * await tearDownPodVolumes("/var/lib/kubelet", pod.metadata.uid!);
 * // ... and when the pod is gone for good, its whole directory:
 * await cleanupPodDirs("/var/lib/kubelet", pod.metadata.uid!);
 * // Housekeeping: the dirs of pods nobody knows (gone while the agent was down):
 * await cleanupOrphanedPodDirs({ rootDir: "/var/lib/kubelet", isKnown, logger });
 * ```
 *
 * @module
 */

export { NoVolumePluginError, VolumeError } from "./errors.ts";
export {
  noPluginMessage,
  type UnsupportedVolume,
  unsupportedVolumes,
  usedVolumeNames,
  volumeSource,
} from "./plugins.ts";
export { checkHostPathType, type HostPathType } from "./host_path.ts";
export {
  cleanupPodDirs,
  EMPTY_DIR_PLUGIN,
  emptyDirPath,
  etcHostsPath,
  makeTerminationLogFile,
  podDir,
  tearDownPodVolumes,
  volumeDir,
} from "./pod_dirs.ts";
export { managedHostsContent, nodeHostsContent, writeEtcHosts } from "./etc_hosts.ts";
export {
  memoryVolumeSize,
  podMemoryLimit,
  type PodVolumeDir,
  podVolumeDirs,
  setUpPodVolumes,
  type VolumeOptions,
} from "./pod_volumes.ts";
export {
  API_VOLUME_PLUGINS,
  type ApiVolumeContext,
  type ApiVolumeKind,
  apiVolumeKind,
  apiVolumePayload,
  DEFAULT_TOKEN_EXPIRATION_SECONDS,
  hasApiVolumes,
  isReadOnlyVolume,
} from "./api_volumes.ts";
export {
  type AtomicWriteOptions,
  type FileProjection,
  type Payload,
  timestampDirName,
  validatePayloadPath,
  writeAtomically,
} from "./atomic_writer.ts";
export {
  formatMap,
  goQuote,
  metadataFieldValue,
  type NodeAllocatable,
  type ResourceFieldSelector,
  resourceFieldValue,
} from "./downward.ts";
export {
  configMapPayload,
  type ConfigMapVolumeSource,
  DEFAULT_VOLUME_FILE_MODE,
  downwardAPIPayload,
  type DownwardAPIVolumeFile,
  type DownwardAPIVolumeSource,
  type KeyToPath,
  type ProjectedVolumeSource,
  secretPayload,
  type SecretVolumeSource,
  type ServiceAccountTokenProjection,
  type VolumeProjection,
} from "./projections.ts";
export {
  commandMounter,
  type CommandResult,
  hostMounter,
  MOUNT_COMMANDS_IN_FLIGHT,
  type Mounter,
  type MountInfo,
  mountPointsUnder,
  parseMountInfo,
  type RunCommand,
  tmpfsMountArgs,
} from "./mount.ts";
export {
  cleanupOrphanedPodDirs,
  type OrphanedPodDirsOptions,
  type OrphanedPodDirsResult,
} from "./orphaned_pod_dirs.ts";
export { prepareSubPath, prepareSubPaths, type SubPathMount, validateSubPath } from "./subpath.ts";
