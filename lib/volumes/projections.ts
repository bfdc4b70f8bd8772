/**
 * The files of configMap, secret and downwardAPI volumes (and of the same
 * sources inside a projected volume), as upstream's MakePayload functions:
 * pure, from the objects already read.
 *
 * @module
 */

import type { ConfigMap, Secret } from "../api/cluster_types.ts";
import type { Container, Pod } from "../api/types.ts";
import type { FileProjection, Payload } from "./atomic_writer.ts";
import {
  metadataFieldValue,
  type NodeAllocatable,
  type ResourceFieldSelector,
  resourceFieldValue,
} from "./downward.ts";

/** Upstream's default file mode of configMap, secret, downwardAPI and projected volumes. */
export const DEFAULT_VOLUME_FILE_MODE = 0o644;

/** `items[]` of configMap and secret sources. */
export interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

/** `volumes[].configMap` (and a projected `sources[].configMap`, without defaultMode). */
export interface ConfigMapVolumeSource {
  name?: string;
  items?: KeyToPath[];
  defaultMode?: number;
  optional?: boolean;
}

/** `volumes[].secret`. */
export interface SecretVolumeSource {
  secretName?: string;
  items?: KeyToPath[];
  defaultMode?: number;
  optional?: boolean;
}

/** `items[]` of downwardAPI sources. */
export interface DownwardAPIVolumeFile {
  path: string;
  fieldRef?: { apiVersion?: string; fieldPath: string };
  resourceFieldRef?: ResourceFieldSelector;
  mode?: number;
}

/** `volumes[].downwardAPI`. */
export interface DownwardAPIVolumeSource {
  items?: DownwardAPIVolumeFile[];
  defaultMode?: number;
}

/** A projected `sources[].serviceAccountToken`. */
export interface ServiceAccountTokenProjection {
  audience?: string;
  expirationSeconds?: number;
  path: string;
}

/** One of a projected volume's `sources[]`. */
export interface VolumeProjection {
  configMap?: ConfigMapVolumeSource;
  secret?: { name?: string; items?: KeyToPath[]; optional?: boolean };
  downwardAPI?: { items?: DownwardAPIVolumeFile[] };
  serviceAccountToken?: ServiceAccountTokenProjection;
  clusterTrustBundle?: unknown;
  podCertificate?: unknown;
}

/** `volumes[].projected`. */
export interface ProjectedVolumeSource {
  sources?: VolumeProjection[];
  defaultMode?: number;
}

const encoder = new TextEncoder();

function decodeBase64(text: string, what: string): Uint8Array {
  try {
    const bin = atob(text);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch (err) {
    throw new Error(`${what} is not valid base64`, { cause: err });
  }
}

/** A file mode from the API (a JSON number), checked as validation would. */
function fileMode(mode: number | undefined, fallback: number, what: string): number {
  if (mode === undefined) return fallback;
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o777) {
    throw new Error(`${what}: mode ${mode} must be a number between 0 and 0777 (octal)`);
  }
  return mode;
}

/**
 * The payload of one key/value object as upstream's MakePayload: every key
 * without items, else each item's key at its path (a missing key skipped
 * when optional).
 */
function keyedPayload(
  values: Map<string, Uint8Array>,
  items: KeyToPath[] | undefined,
  defaultMode: number,
  optional: boolean,
  missingKey: (key: string) => string,
): Payload {
  const out: Payload = new Map();
  if (!items || items.length === 0) {
    for (const [key, data] of values) out.set(key, { data, mode: defaultMode });
    return out;
  }
  for (const item of items) {
    const data = values.get(item.key);
    if (data === undefined) {
      if (optional) continue;
      throw new Error(missingKey(item.key));
    }
    out.set(item.path, { data, mode: fileMode(item.mode, defaultMode, `item "${item.key}"`) });
  }
  return out;
}

/**
 * The files of a ConfigMap (data and binaryData).
 * @param cm the ConfigMap; undefined for a missing optional one (no files)
 * @param items key → path mappings; all keys when empty
 * @param defaultMode mode of files without their own
 * @param optional whether missing keys are skipped
 * @returns path → file
 * @throws {Error} "configmap references non-existent config key: K"
 */
export function configMapPayload(
  cm: ConfigMap | undefined,
  items: KeyToPath[] | undefined,
  defaultMode: number,
  optional: boolean,
): Payload {
  const values = new Map<string, Uint8Array>();
  for (const [k, v] of Object.entries(cm?.data ?? {})) values.set(k, encoder.encode(v));
  for (const [k, v] of Object.entries(cm?.binaryData ?? {})) {
    values.set(k, decodeBase64(v, `binaryData key "${k}" of configmap "${cm?.metadata.name}"`));
  }
  return keyedPayload(
    values,
    items,
    defaultMode,
    optional,
    (k) => `configmap references non-existent config key: ${k}`,
  );
}

/**
 * The files of a Secret (data, base64 as the API returns it).
 * @param secret the Secret; undefined for a missing optional one (no files)
 * @param items key → path mappings; all keys when empty
 * @param defaultMode mode of files without their own
 * @param optional whether missing keys are skipped
 * @returns path → file
 * @throws {Error} "references non-existent secret key: K"
 */
export function secretPayload(
  secret: Secret | undefined,
  items: KeyToPath[] | undefined,
  defaultMode: number,
  optional: boolean,
): Payload {
  const values = new Map<string, Uint8Array>();
  for (const [k, v] of Object.entries(secret?.data ?? {})) {
    values.set(k, decodeBase64(v, `key "${k}" of secret "${secret?.metadata.name}"`));
  }
  return keyedPayload(
    values,
    items,
    defaultMode,
    optional,
    (k) => `references non-existent secret key: ${k}`,
  );
}

function findContainer(pod: Pod, name: string | undefined): Container | undefined {
  const all = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
  return all.find((c) => c.name === name);
}

/**
 * The files of a downwardAPI source: metadata fields and container resources.
 * @param pod the pod
 * @param items the files
 * @param defaultMode mode of files without their own
 * @param allocatable node allocatable, for limits a container leaves unset
 * @returns path → file
 * @throws {Error} naming the item for an unsupported field or an unknown container
 */
export function downwardAPIPayload(
  pod: Pod,
  items: DownwardAPIVolumeFile[] | undefined,
  defaultMode: number,
  allocatable: NodeAllocatable = {},
): Payload {
  const out: Payload = new Map();
  for (const item of items ?? []) {
    let text: string;
    if (item.fieldRef) {
      const v = metadataFieldValue(pod, item.fieldRef.fieldPath);
      if (v === undefined) {
        throw new Error(
          `item "${item.path}": unsupported fieldRef fieldPath "${item.fieldRef.fieldPath}"`,
        );
      }
      text = v;
    } else if (item.resourceFieldRef) {
      const ref = item.resourceFieldRef;
      const container = findContainer(pod, ref.containerName);
      if (!container) {
        throw new Error(
          `item "${item.path}": container "${ref.containerName ?? ""}" not found in the pod`,
        );
      }
      try {
        text = resourceFieldValue(container, ref, allocatable);
      } catch (err) {
        throw new Error(`item "${item.path}": ${(err as Error).message}`, { cause: err });
      }
    } else {
      throw new Error(`item "${item.path}" names neither fieldRef nor resourceFieldRef`);
    }
    const file: FileProjection = {
      data: encoder.encode(text),
      mode: fileMode(item.mode, defaultMode, `item "${item.path}"`),
    };
    out.set(item.path, file);
  }
  return out;
}
