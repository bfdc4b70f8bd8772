/**
 * configMap, secret, downwardAPI and projected volumes: their files are
 * computed from API objects and the pod (then written by pod_volumes.ts with
 * the atomic writer, on every sync, so a running container sees edited
 * ConfigMaps and Secrets, relabelled pods and rotated tokens in place).
 *
 * @module
 */

import type { Pod, Volume } from "../api/types.ts";
import { podFsUser } from "../api/pod.ts";
import { isObjectNotFound, NoApiServerError, type PodObjects } from "../kubeobjects/types.ts";
import type { Payload } from "./atomic_writer.ts";
import type { NodeAllocatable } from "./downward.ts";
import {
  configMapPayload,
  type ConfigMapVolumeSource,
  DEFAULT_VOLUME_FILE_MODE,
  downwardAPIPayload,
  type DownwardAPIVolumeSource,
  type ProjectedVolumeSource,
  secretPayload,
  type SecretVolumeSource,
} from "./projections.ts";

/** Upstream's default `expirationSeconds` of a projected serviceAccountToken. */
export const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;

/** What setting up an API-backed volume needs. */
export interface ApiVolumeContext {
  pod: Pod;
  /** undefined in standalone mode: volumes that need objects fail with "no apiserver". */
  objects: PodObjects | undefined;
  allocatable: NodeAllocatable;
  signal?: AbortSignal;
}

/** The volume plugins handled here, by their directory name under `volumes/`. */
export const API_VOLUME_PLUGINS = {
  configMap: "kubernetes.io~configmap",
  secret: "kubernetes.io~secret",
  downwardAPI: "kubernetes.io~downward-api",
  projected: "kubernetes.io~projected",
} as const;

/** Which API-backed source a volume has, if any. */
export type ApiVolumeKind = keyof typeof API_VOLUME_PLUGINS;

/**
 * The API-backed source of a volume.
 * @param volume the volume
 * @returns its kind, or undefined for other sources
 */
export function apiVolumeKind(volume: Volume): ApiVolumeKind | undefined {
  return (Object.keys(API_VOLUME_PLUGINS) as ApiVolumeKind[]).find((k) => volume[k] !== undefined);
}

function needObjects(ctx: ApiVolumeContext, what: string): PodObjects {
  if (!ctx.objects) throw new NoApiServerError(what);
  return ctx.objects;
}

/** Reads an object; a missing optional one is undefined. */
async function optionalObject<T>(
  read: () => Promise<T>,
  optional: boolean,
): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (optional && isObjectNotFound(err)) return undefined;
    throw err;
  }
}

function ids(ctx: ApiVolumeContext) {
  const namespace = ctx.pod.metadata.namespace ?? "default";
  const uid = ctx.pod.metadata.uid ?? "";
  const opts = { podUID: uid, ...(ctx.signal ? { signal: ctx.signal } : {}) };
  return { namespace, uid, opts };
}

async function configMapVolumePayload(
  ctx: ApiVolumeContext,
  src: ConfigMapVolumeSource,
  defaultMode: number,
): Promise<Payload> {
  const name = src.name ?? "";
  const optional = src.optional === true;
  const objects = needObjects(ctx, `configmap "${name}"`);
  const { namespace, opts } = ids(ctx);
  const cm = await optionalObject(() => objects.getConfigMap(namespace, name, opts), optional);
  return configMapPayload(cm, src.items, defaultMode, optional);
}

async function secretVolumePayload(
  ctx: ApiVolumeContext,
  name: string,
  src: { items?: SecretVolumeSource["items"]; optional?: boolean },
  defaultMode: number,
): Promise<Payload> {
  const optional = src.optional === true;
  const objects = needObjects(ctx, `secret "${name}"`);
  const { namespace, opts } = ids(ctx);
  const secret = await optionalObject(() => objects.getSecret(namespace, name, opts), optional);
  return secretPayload(secret, src.items, defaultMode, optional);
}

async function projectedPayload(
  ctx: ApiVolumeContext,
  src: ProjectedVolumeSource,
): Promise<Payload> {
  const defaultMode = src.defaultMode ?? DEFAULT_VOLUME_FILE_MODE;
  const payload: Payload = new Map();
  const errors: string[] = [];
  for (const [i, source] of (src.sources ?? []).entries()) {
    try {
      let part: Payload;
      if (source.configMap) {
        part = await configMapVolumePayload(ctx, source.configMap, defaultMode);
      } else if (source.secret) {
        part = await secretVolumePayload(ctx, source.secret.name ?? "", source.secret, defaultMode);
      } else if (source.downwardAPI) {
        part = downwardAPIPayload(ctx.pod, source.downwardAPI.items, defaultMode, ctx.allocatable);
      } else if (source.serviceAccountToken) {
        part = await tokenPayload(ctx, source.serviceAccountToken, defaultMode);
      } else {
        const kind = Object.keys(source)[0] ?? "(empty)";
        throw new Error(`projected source ${kind} is not supported by this node`);
      }
      for (const [k, v] of part) payload.set(k, v);
    } catch (err) {
      errors.push(`sources[${i}]: ${(err as Error).message}`);
    }
  }
  // As upstream, every failing source is reported, not only the first.
  if (errors.length === 1) throw new Error(errors[0]);
  if (errors.length > 1) throw new Error(`[${errors.join(", ")}]`);
  return payload;
}

async function tokenPayload(
  ctx: ApiVolumeContext,
  src: NonNullable<ProjectedVolumeSource["sources"]>[number]["serviceAccountToken"] & object,
  mode: number,
): Promise<Payload> {
  const sa = ctx.pod.spec.serviceAccountName || "default";
  const objects = needObjects(ctx, `a token for service account "${sa}"`);
  const { namespace, uid } = ids(ctx);
  const token = await objects.getServiceAccountToken(
    namespace,
    sa,
    {
      audiences: src.audience ? [src.audience] : [],
      expirationSeconds: src.expirationSeconds ?? DEFAULT_TOKEN_EXPIRATION_SECONDS,
      boundPod: { name: ctx.pod.metadata.name ?? "", uid },
    },
    ctx.signal ? { signal: ctx.signal } : {},
  );
  // As upstream: the token is its user's and 0600 when the pod names one user or an fsGroup
  // (SetVolumeOwnership then adds group read).
  const fsUser = podFsUser(ctx.pod);
  const owned = fsUser !== undefined || ctx.pod.spec.securityContext?.fsGroup !== undefined;
  const data = new TextEncoder().encode(token.token);
  return new Map([[
    src.path,
    { data, mode: owned ? 0o600 : mode, ...(fsUser !== undefined ? { fsUser } : {}) },
  ]]);
}

/**
 * Computes an API-backed volume's files.
 * @param ctx the pod, object source and node facts
 * @param volume a configMap, secret, downwardAPI or projected volume
 * @returns path → file
 * @throws {Error} with upstream's wording (`configmap "x" not found`, ...) or a NoApiServerError
 */
export function apiVolumePayload(ctx: ApiVolumeContext, volume: Volume): Promise<Payload> {
  if (volume.configMap) {
    const src = volume.configMap as ConfigMapVolumeSource;
    return configMapVolumePayload(ctx, src, src.defaultMode ?? DEFAULT_VOLUME_FILE_MODE);
  }
  if (volume.secret) {
    const src = volume.secret as SecretVolumeSource;
    return secretVolumePayload(
      ctx,
      src.secretName ?? "",
      src,
      src.defaultMode ?? DEFAULT_VOLUME_FILE_MODE,
    );
  }
  if (volume.downwardAPI) {
    const src = volume.downwardAPI as DownwardAPIVolumeSource;
    return Promise.resolve().then(() =>
      downwardAPIPayload(
        ctx.pod,
        src.items,
        src.defaultMode ?? DEFAULT_VOLUME_FILE_MODE,
        ctx.allocatable,
      )
    );
  }
  if (volume.projected) return projectedPayload(ctx, volume.projected as ProjectedVolumeSource);
  return Promise.reject(new Error(`volume "${volume.name}" has no API-backed source`));
}

/**
 * Whether containers must mount a volume read-only whatever the mount says
 * (upstream's ReadOnlyAPIDataVolumes: configMap, secret, downwardAPI, projected).
 * @param volume the volume
 * @returns true for API-backed volumes
 */
export function isReadOnlyVolume(volume: Volume): boolean {
  return apiVolumeKind(volume) !== undefined;
}

/**
 * Whether a pod has volumes whose content follows API objects or the pod
 * itself, and so should be set up again on every sync.
 * @param pod the pod
 * @returns true when any volume is API-backed
 */
export function hasApiVolumes(pod: Pod): boolean {
  return (pod.spec.volumes ?? []).some(isReadOnlyVolume);
}
