/**
 * Container environment and `$(VAR)` expansion, with upstream's rules
 * (third_party/forked/golang/expansion and makeEnvironmentVariables):
 *
 * - envFrom (configMapRef/secretRef, with prefix) first, keys that are not
 *   valid variable names skipped and reported; then env in order, a later
 *   definition replacing an earlier one in place; then the service-link
 *   variables not already defined.
 * - `$(NAME)` is replaced when NAME is defined (by envFrom, an earlier env or
 *   a service link) and kept verbatim otherwise, `$$` is an escaped `$`, and
 *   a `$` before anything else stays as written.
 * - ConfigMaps, Secrets and Services are read beforehand by
 *   {@link fetchEnvObjects}, so {@link makeEnvironment} stays pure.
 *
 * @module
 */

import type { ConfigMap, Secret } from "../api/cluster_types.ts";
import type { Container, EnvVar, Pod } from "../api/types.ts";
import {
  isObjectNotFound,
  NoApiServerError,
  type PodObjects,
  serviceEnvMap,
} from "../kubeobjects/mod.ts";
import { metadataFieldValue, type NodeAllocatable, resourceFieldValue } from "../volumes/mod.ts";

/** Failure to build a container's config; `reason` is upstream's CreateContainerConfigError. */
export class ContainerConfigError extends Error {
  /** The kubelet reason shown in the container's waiting state. */
  readonly reason = "CreateContainerConfigError";

  /**
   * @param message what is wrong, naming the container and field
   * @param options the underlying error
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ContainerConfigError";
  }
}

/**
 * Expands `$(VAR)` references in `input`.
 * @param input the text
 * @param lookup the value of a variable, or undefined when it is not defined
 * @returns the expanded text
 */
export function expandVars(input: string, lookup: (name: string) => string | undefined): string {
  let out = "";
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== "$" || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const next = input[cursor + 1];
    let advance = 1;
    if (next === "$") {
      out += "$";
    } else if (next === "(") {
      const close = input.indexOf(")", cursor + 2);
      if (close < 0) {
        // An unterminated reference is kept as written.
        out += "$(";
      } else {
        const name = input.slice(cursor + 2, close);
        out += lookup(name) ?? `$(${name})`;
        advance = close - cursor;
      }
    } else {
      out += "$" + next;
    }
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

/** The objects a container's env references, read before {@link makeEnvironment}. */
export interface EnvObjects {
  /** By name; undefined when the ConfigMap does not exist. */
  configMaps: ReadonlyMap<string, ConfigMap | undefined>;
  /** By name; undefined when the Secret does not exist. */
  secrets: ReadonlyMap<string, Secret | undefined>;
  /** Service-link variables (`KUBERNETES_SERVICE_HOST`, ...). */
  serviceEnv: ReadonlyMap<string, string>;
}

/** Facts about the pod and node that downward-API env vars read. */
export interface EnvContext {
  podIP?: string;
  podIPs?: string[];
  hostIP?: string;
  hostIPs?: string[];
  nodeName?: string;
  /** Node allocatable used for resourceFieldRef when the container sets no limit. */
  nodeAllocatable?: NodeAllocatable;
  /** From {@link fetchEnvObjects}; absent in standalone mode (no apiserver). */
  envObjects?: EnvObjects;
  /**
   * Told about envFrom keys skipped as invalid names, with upstream's
   * InvalidEnvironmentVariableNames message.
   */
  onInvalidEnvKeys?: (message: string) => void;
}

/** Upstream's IsEnvVarName. */
const ENV_NAME_RE = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

function fieldRefValue(pod: Pod, path: string, ctx: EnvContext): string | undefined {
  if (path.startsWith("metadata.")) return metadataFieldValue(pod, path);
  switch (path) {
    case "spec.nodeName":
      return pod.spec.nodeName ?? ctx.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec.serviceAccountName ?? "";
    case "status.podIP":
      return ctx.podIP ?? ctx.podIPs?.[0] ?? "";
    case "status.podIPs":
      return (ctx.podIPs ?? (ctx.podIP ? [ctx.podIP] : [])).join(",");
    case "status.hostIP":
      return ctx.hostIP ?? ctx.hostIPs?.[0] ?? "";
    case "status.hostIPs":
      return (ctx.hostIPs ?? (ctx.hostIP ? [ctx.hostIP] : [])).join(",");
  }
  return undefined;
}

type ObjectKind = "configmap" | "secret";

/**
 * A referenced object: the object, or undefined when it is missing and optional.
 * @throws {ContainerConfigError} when it is missing and required, or there is no apiserver
 */
function referenced<T>(
  kind: ObjectKind,
  name: string,
  optional: boolean,
  ctx: EnvContext,
  where: string,
): T | undefined {
  const objects = ctx.envObjects;
  const table = (kind === "configmap" ? objects?.configMaps : objects?.secrets) as
    | ReadonlyMap<string, T | undefined>
    | undefined;
  if (!table || !table.has(name)) {
    throw new ContainerConfigError(
      `${where}: ${new NoApiServerError(`${kind} "${name}"`).message}`,
    );
  }
  const obj = table.get(name);
  if (obj === undefined && !optional) {
    throw new ContainerConfigError(`${where}: ${kind} "${name}" not found`);
  }
  return obj;
}

function secretValue(secret: Secret, key: string): string | undefined {
  const b64 = secret.data?.[key];
  if (b64 === undefined) return undefined;
  const bin = atob(b64);
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

function secretValues(secret: Secret): [string, string][] {
  return Object.keys(secret.data ?? {}).sort().map((k) => [k, secretValue(secret, k)!]);
}

/** Adds one envFrom source's keys to `env`. */
function addEnvFrom(
  pod: Pod,
  container: Container,
  ctx: EnvContext,
  env: Map<string, string>,
): void {
  const ns = pod.metadata.namespace ?? "default";
  for (const from of container.envFrom ?? []) {
    const kind: ObjectKind = from.configMapRef ? "configmap" : "secret";
    const ref = from.configMapRef ?? from.secretRef;
    if (!ref) continue;
    const name = ref.name ?? "";
    const where = `envFrom ${kind} "${name}" of container "${container.name}"`;
    let entries: [string, string][];
    if (kind === "configmap") {
      const cm = referenced<ConfigMap>(kind, name, ref.optional === true, ctx, where);
      if (!cm) continue;
      entries = Object.keys(cm.data ?? {}).sort().map((k) => [k, cm.data![k]!]);
    } else {
      const secret = referenced<Secret>(kind, name, ref.optional === true, ctx, where);
      if (!secret) continue;
      entries = secretValues(secret);
    }
    const invalid: string[] = [];
    for (const [key, value] of entries) {
      const name = (from.prefix ?? "") + key;
      if (!ENV_NAME_RE.test(name)) invalid.push(name);
      else env.set(name, value);
    }
    if (invalid.length > 0) {
      ctx.onInvalidEnvKeys?.(
        `Keys [${
          invalid.sort().join(", ")
        }] from the EnvFrom ${kind} ${ns}/${name} were skipped since they are considered invalid environment variable names.`,
      );
    }
  }
}

/** The value of one env var; undefined when an optional source is missing (the var is left out). */
function resolveEnvVar(
  pod: Pod,
  container: Container,
  env: EnvVar,
  ctx: EnvContext,
  lookup: (name: string) => string | undefined,
): string | undefined {
  const where = `env "${env.name}" of container "${container.name}"`;
  const from = env.valueFrom;
  if (env.value || !from) return expandVars(env.value ?? "", lookup);
  const ns = pod.metadata.namespace ?? "default";
  if (from.fieldRef) {
    const v = fieldRefValue(pod, from.fieldRef.fieldPath, ctx);
    if (v === undefined) {
      throw new ContainerConfigError(
        `${where}: unsupported fieldRef fieldPath "${from.fieldRef.fieldPath}"`,
      );
    }
    return v;
  }
  if (from.resourceFieldRef) {
    try {
      return resourceFieldValue(container, from.resourceFieldRef, ctx.nodeAllocatable);
    } catch (err) {
      throw new ContainerConfigError(`${where}: ${(err as Error).message}`, { cause: err });
    }
  }
  if (from.configMapKeyRef) {
    const { name = "", key, optional = false } = from.configMapKeyRef;
    const cm = referenced<ConfigMap>("configmap", name, optional, ctx, where);
    const v = cm?.data?.[key];
    if (v === undefined && cm && !optional) {
      throw new ContainerConfigError(
        `${where}: couldn't find key ${key} in ConfigMap ${ns}/${name}`,
      );
    }
    return v;
  }
  if (from.secretKeyRef) {
    const { name = "", key, optional = false } = from.secretKeyRef;
    const secret = referenced<Secret>("secret", name, optional, ctx, where);
    const v = secret ? secretValue(secret, key) : undefined;
    if (v === undefined && secret && !optional) {
      throw new ContainerConfigError(`${where}: couldn't find key ${key} in Secret ${ns}/${name}`);
    }
    return v;
  }
  throw new ContainerConfigError(`${where}: valueFrom names no source`);
}

/**
 * The container's environment: envFrom, then env in definition order (a
 * later definition of a name replaces the earlier value in place), then the
 * service-link variables not defined otherwise; `$(VAR)` references in env
 * values are expanded against what is defined before them.
 * @param pod the pod
 * @param container the container
 * @param ctx pod/node facts and the referenced objects
 * @returns name/value pairs
 * @throws {ContainerConfigError} naming the container and object for a
 *   missing required ConfigMap/Secret or key, an object with no apiserver,
 *   or an unsupported field path
 */
export function makeEnvironment(
  pod: Pod,
  container: Container,
  ctx: EnvContext = {},
): { key: string; value: string }[] {
  const values = new Map<string, string>();
  addEnvFrom(pod, container, ctx, values);
  const services = ctx.envObjects?.serviceEnv ?? new Map<string, string>();
  const lookup = (name: string) => values.get(name) ?? services.get(name);
  for (const env of container.env ?? []) {
    const v = resolveEnvVar(pod, container, env, ctx, lookup);
    if (v !== undefined) values.set(env.name, v);
  }
  for (const [k, v] of services) if (!values.has(k)) values.set(k, v);
  return [...values].map(([key, value]) => ({ key, value }));
}

/**
 * Reads what a container's env references: its ConfigMaps and Secrets (a
 * missing one recorded as undefined) and the service-link variables (from
 * the Services already watched: an API pod's container does not start before
 * they were listed once, as upstream's).
 * @param pod the pod
 * @param container the container
 * @param objects the object source; undefined in standalone mode
 * @param signal cancels the reads
 * @returns the objects, or undefined without a source
 * @throws {ContainerConfigError} naming the object when a read fails other than NotFound,
 *   or with upstream's message when the Services were not listed yet
 */
export async function fetchEnvObjects(
  pod: Pod,
  container: Container,
  objects: PodObjects | undefined,
  signal?: AbortSignal,
): Promise<EnvObjects | undefined> {
  if (!objects) return undefined;
  const ns = pod.metadata.namespace ?? "default";
  const cmNames = new Set<string>();
  const secretNames = new Set<string>();
  for (const f of container.envFrom ?? []) {
    if (f.configMapRef) cmNames.add(f.configMapRef.name ?? "");
    if (f.secretRef) secretNames.add(f.secretRef.name ?? "");
  }
  for (const e of container.env ?? []) {
    if (e.value) continue;
    if (e.valueFrom?.configMapKeyRef) cmNames.add(e.valueFrom.configMapKeyRef.name ?? "");
    if (e.valueFrom?.secretKeyRef) secretNames.add(e.valueFrom.secretKeyRef.name ?? "");
  }
  const opts = { podUID: pod.metadata.uid ?? "", ...(signal ? { signal } : {}) };
  const read = async <T>(kind: string, name: string, get: () => Promise<T>) => {
    try {
      return await get();
    } catch (err) {
      if (isObjectNotFound(err)) return undefined;
      throw new ContainerConfigError(
        `failed to get ${kind} "${ns}/${name}" for the env of container "${container.name}": ${
          (err as Error).message
        }`,
        { cause: err },
      );
    }
  };
  const configMaps = new Map<string, ConfigMap | undefined>();
  for (const name of cmNames) {
    configMaps.set(name, await read("configmap", name, () => objects.getConfigMap(ns, name, opts)));
  }
  const secrets = new Map<string, Secret | undefined>();
  for (const name of secretNames) {
    secrets.set(name, await read("secret", name, () => objects.getSecret(ns, name, opts)));
  }
  let serviceEnv: Map<string, string>;
  try {
    serviceEnv = serviceEnvMap(objects, pod);
  } catch (err) {
    // Upstream's message as it is: the container waits with it until the Services are listed.
    throw new ContainerConfigError((err as Error).message, { cause: err });
  }
  return { configMaps, secrets, serviceEnv };
}

/**
 * Expands `$(VAR)` in a container's command and args from its environment.
 * @param container the container
 * @param env the environment from {@link makeEnvironment}
 * @returns the expanded command and args (undefined when the spec has none)
 */
export function expandCommandAndArgs(
  container: Container,
  env: { key: string; value: string }[],
): { command: string[] | undefined; args: string[] | undefined } {
  const values = new Map(env.map((e) => [e.key, e.value]));
  const lookup = (name: string) => values.get(name);
  return {
    command: container.command?.map((c) => expandVars(c, lookup)),
    args: container.args?.map((a) => expandVars(a, lookup)),
  };
}

/**
 * Expands a volumeMount's `subPathExpr` from the container's environment, as
 * upstream's ExpandContainerVolumeMounts: unlike command and args, a
 * reference to a variable that is undefined or empty is an error, so a
 * subPath never silently collapses to the volume root.
 * @param subPathExpr the expression
 * @param env the environment from {@link makeEnvironment}
 * @returns the expanded subPath
 * @throws {ContainerConfigError} naming the variables without a value (sorted)
 */
export function expandSubPathExpr(
  subPathExpr: string,
  env: readonly { key: string; value: string }[],
): string {
  const values = new Map(env.map((e) => [e.key, e.value]));
  const missing = new Set<string>();
  const expanded = expandVars(subPathExpr, (name) => {
    const value = values.get(name) ?? "";
    if (value === "") missing.add(name);
    return value;
  });
  if (missing.size > 0) {
    throw new ContainerConfigError(`missing value for ${[...missing].sort().join(", ")}`);
  }
  return expanded;
}
