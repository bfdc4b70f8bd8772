/**
 * The volume sources of a pod: every one upstream's v1 VolumeSource has
 * (k8s.io/api v0.37, by JSON name) and the ones denolet implements. Pod
 * validation accepts all of upstream's; lib/volumes refuses the rest at mount
 * time, as upstream refuses a source with no plugin.
 *
 * @module
 */

/** The sources denolet implements (lib/volumes/pod_volumes.ts). */
export const IMPLEMENTED_VOLUME_SOURCES = [
  "emptyDir",
  "hostPath",
  "configMap",
  "secret",
  "downwardAPI",
  "projected",
] as const;

/** Every source of upstream's v1 VolumeSource. */
export const UPSTREAM_VOLUME_SOURCES = [
  ...IMPLEMENTED_VOLUME_SOURCES,
  "gcePersistentDisk",
  "awsElasticBlockStore",
  "gitRepo",
  "nfs",
  "iscsi",
  "glusterfs",
  "persistentVolumeClaim",
  "rbd",
  "flexVolume",
  "cinder",
  "cephfs",
  "flocker",
  "fc",
  "azureFile",
  "vsphereVolume",
  "quobyte",
  "azureDisk",
  "photonPersistentDisk",
  "portworxVolume",
  "scaleIO",
  "storageos",
  "csi",
  "ephemeral",
  "image",
] as const;
