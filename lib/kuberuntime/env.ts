/**
 * Container environment and `$(VAR)` expansion, with upstream's rules
 * (third_party/forked/golang/expansion and makeEnvironmentVariables):
 * `$(NAME)` is replaced when NAME is defined and kept verbatim otherwise, `$$`
 * is an escaped `$`, and a `$` before anything else stays as written.
 *
 * @module
 */

import type { Container, EnvVar, Pod, Quantity } from "../api/types.ts";
import { intValue, milliValue, parseQuantity } from "../api/quantity.ts";

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

/** Facts about the pod and node that downward-API env vars read. */
export interface EnvContext {
  podIP?: string;
  podIPs?: string[];
  hostIP?: string;
  hostIPs?: string[];
  nodeName?: string;
  /** Node allocatable used for resourceFieldRef when the container sets no limit. */
  nodeAllocatable?: { cpu?: Quantity; memory?: Quantity };
}

function fieldRefValue(pod: Pod, path: string, ctx: EnvContext): string | undefined {
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (m) return (m[1] === "labels" ? pod.metadata.labels : pod.metadata.annotations)?.[m[2]!] ?? "";
  switch (path) {
    case "metadata.name":
      return pod.metadata.name ?? "";
    case "metadata.namespace":
      return pod.metadata.namespace ?? "default";
    case "metadata.uid":
      return pod.metadata.uid ?? "";
    case "spec.nodeName":
      return pod.spec.nodeName ?? ctx.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec.serviceAccountName ?? "";
    case "status.podIP":
      return ctx.podIP ?? "";
    case "status.podIPs":
      return (ctx.podIPs ?? (ctx.podIP ? [ctx.podIP] : [])).join(",");
    case "status.hostIP":
      return ctx.hostIP ?? "";
    case "status.hostIPs":
      return (ctx.hostIPs ?? (ctx.hostIP ? [ctx.hostIP] : [])).join(",");
  }
  return undefined;
}

function resourceFieldValue(
  container: Container,
  ref: { resource: string; divisor?: Quantity },
  ctx: EnvContext,
): string | undefined {
  const [kind, name] = ref.resource.split(".");
  if ((kind !== "limits" && kind !== "requests") || (name !== "cpu" && name !== "memory")) {
    return undefined;
  }
  const set = kind === "limits" ? container.resources?.limits : container.resources?.requests;
  const q = set?.[name] ?? (kind === "limits" ? ctx.nodeAllocatable?.[name] : undefined) ?? 0;
  const divisor = parseQuantity(ref.divisor ?? 1);
  if (divisor <= 0) return undefined;
  // Upstream rounds up to the divisor's unit; cpu in milli-units first to stay exact.
  const value = name === "cpu" ? milliValue(q) / 1000 : intValue(q);
  return String(Math.ceil(value / divisor));
}

function resolveEnvVar(
  pod: Pod,
  container: Container,
  env: EnvVar,
  ctx: EnvContext,
  lookup: (name: string) => string | undefined,
): string {
  const where = `env "${env.name}" of container "${container.name}"`;
  const from = env.valueFrom;
  if (!from) return expandVars(env.value ?? "", lookup);
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
    const v = resourceFieldValue(container, from.resourceFieldRef, ctx);
    if (v === undefined) {
      throw new ContainerConfigError(
        `${where}: unsupported resourceFieldRef resource "${from.resourceFieldRef.resource}"`,
      );
    }
    return v;
  }
  const kind = from.configMapKeyRef ? "configMapKeyRef" : from.secretKeyRef ? "secretKeyRef" : "";
  throw new ContainerConfigError(
    kind
      ? `${where}: ${kind} is not supported by this node yet`
      : `${where}: valueFrom names no source`,
  );
}

/**
 * The container's environment, in definition order (a later definition of a
 * name replaces the earlier value in place), with `$(VAR)` references in
 * values expanded against the variables defined before them.
 * @param pod the pod
 * @param container the container
 * @param ctx pod/node facts for downward-API values
 * @returns name/value pairs
 * @throws {ContainerConfigError} for envFrom, configMap/secret refs and unknown field paths
 */
export function makeEnvironment(
  pod: Pod,
  container: Container,
  ctx: EnvContext = {},
): { key: string; value: string }[] {
  if ((container.envFrom ?? []).length > 0) {
    throw new ContainerConfigError(
      `envFrom of container "${container.name}": configMap/secret sources are not supported by this node yet`,
    );
  }
  const values = new Map<string, string>();
  const lookup = (name: string) => values.get(name);
  for (const env of container.env ?? []) {
    values.set(env.name, resolveEnvVar(pod, container, env, ctx, lookup));
  }
  return [...values].map(([key, value]) => ({ key, value }));
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
