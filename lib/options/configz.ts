/**
 * The effective KubeletConfiguration as upstream's configz serves it (the
 * `/configz` route is in lib/server): the object in v1beta1 field order with
 * `kind` and `apiVersion`, zero-valued plain fields omitted as Go's
 * `omitempty` omits them.
 *
 * @module
 */

import type { KubeletConfiguration } from "./kubelet_config.ts";
import {
  isZeroValue,
  KUBELET_CONFIG_SCHEMA,
  leafCode,
  type ObjectSchema,
  type SchemaNode,
} from "./schema.ts";

const MAP_TYPES = new Set(["m", "mb", "mm", "qm"]);

function omitted(node: SchemaNode, value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof node !== "string") return Array.isArray(node) && (value as unknown[]).length === 0;
  const { type, pointer, always } = leafCode(node);
  if (pointer || always) return false;
  if (MAP_TYPES.has(type)) return Object.keys(value as object).length === 0;
  return isZeroValue(value);
}

function encodeObject(
  value: Record<string, unknown>,
  schema: ObjectSchema,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, node] of Object.entries(schema)) {
    const v = value[key];
    if (omitted(node, v)) continue;
    if (Array.isArray(node)) {
      out[key] = (v as Record<string, unknown>[]).map((item) => encodeObject(item, node[0]));
    } else if (typeof node === "object") {
      out[key] = encodeObject(v as Record<string, unknown>, node as ObjectSchema);
    } else out[key] = v;
  }
  return out;
}

/**
 * The configuration as upstream serializes it: v1beta1 field order, kind and
 * apiVersion, omitempty applied.
 * @param config the effective configuration
 * @returns a JSON-ready object
 */
export function encodeKubeletConfiguration(config: KubeletConfiguration): Record<string, unknown> {
  return {
    kind: config.kind,
    apiVersion: config.apiVersion,
    ...encodeObject(config as unknown as Record<string, unknown>, KUBELET_CONFIG_SCHEMA),
  };
}
