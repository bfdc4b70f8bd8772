/**
 * Which volume sources this node has a plugin for, and the refusal of the
 * rest. Upstream's volume manager looks a plugin up for every volume a
 * container mounts (desired_state_of_world_populator processPodVolumes);
 * when none matches, WaitForAttachAndMount fails at once and the pod's sync
 * stops before its sandbox with a FailedMount event. denolet does the same
 * for every source it does not implement (csi, nfs, iscsi, ephemeral,
 * persistentVolumeClaim, image, ...), so a pod never runs with an empty
 * directory where its data should be.
 *
 * @module
 */

import type { Container, Pod, Volume } from "../api/types.ts";
import { IMPLEMENTED_VOLUME_SOURCES } from "../api/volume_sources.ts";

/** A volume a container needs whose source has no plugin here. */
export interface UnsupportedVolume {
  /** The volume's name. */
  name: string;
  /** Its source, as the pod spells it (`nfs`, `csi`, ...). */
  source: string;
}

/**
 * The source of a volume: its one key besides `name`.
 * @param volume a (defaulted) volume
 * @returns the key, or undefined when it has none
 */
export function volumeSource(volume: Volume): string | undefined {
  return Object.keys(volume).find((k) => k !== "name");
}

/**
 * The names of the volumes some container (init, app or ephemeral) mounts or
 * uses as a block device, as upstream's GetPodVolumeNames: only these need a
 * plugin.
 * @param pod the pod
 * @returns the volume names
 */
export function usedVolumeNames(pod: Pod): Set<string> {
  const names = new Set<string>();
  const containers: Container[] = [
    ...(pod.spec.initContainers ?? []),
    ...pod.spec.containers,
    ...(pod.spec.ephemeralContainers ?? []),
  ];
  for (const c of containers) {
    for (const m of c.volumeMounts ?? []) names.add(m.name);
    for (const d of c.volumeDevices ?? []) names.add(d.name);
  }
  return names;
}

/**
 * The volumes the pod's containers use whose source denolet does not
 * implement. A volume nothing mounts is skipped, as upstream skips it.
 * @param pod the pod
 * @returns the volumes to refuse, in spec order
 */
export function unsupportedVolumes(pod: Pod): UnsupportedVolume[] {
  const used = usedVolumeNames(pod);
  const out: UnsupportedVolume[] = [];
  for (const volume of pod.spec.volumes ?? []) {
    if (!used.has(volume.name)) continue;
    const source = volumeSource(volume);
    if (source === undefined) continue; // defaulted to emptyDir before it gets here
    if (!(IMPLEMENTED_VOLUME_SOURCES as readonly string[]).includes(source)) {
      out.push({ name: volume.name, source });
    }
  }
  return out;
}

/**
 * Upstream's reason for one volume without a plugin (the populator's
 * AddPodToVolume error around ErrNoPluginMatched), with the source named.
 * @param volume the volume
 * @returns the message
 */
export function noPluginMessage(volume: UnsupportedVolume): string {
  return `failed to get Plugin from volumeSpec for volume ${JSON.stringify(volume.name)} ` +
    `err=no volume plugin matched (denolet does not implement ${volume.source} volumes)`;
}
