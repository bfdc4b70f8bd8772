/**
 * Downward API values shared by env vars and downwardAPI volumes, as
 * upstream's pkg/fieldpath and pkg/api/v1/resource: pod metadata fields,
 * label and annotation maps as `key="value"` lines, and container resources
 * divided by a divisor and rounded up.
 *
 * @module
 */

import type { Container, Pod, Quantity } from "../api/types.ts";
import { intValue, milliValue } from "../api/quantity.ts";

/** Node allocatable, the default of limits a container does not set. */
export interface NodeAllocatable {
  cpu?: Quantity;
  memory?: Quantity;
  "ephemeral-storage"?: Quantity;
}

/** A `resourceFieldRef`. */
export interface ResourceFieldSelector {
  containerName?: string;
  resource: string;
  divisor?: Quantity;
}

const GO_ESCAPES: Record<string, string> = {
  "\x07": "\\a",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\v": "\\v",
  "\\": "\\\\",
  '"': '\\"',
};

/**
 * Quotes a string as Go's `%q` does for the common cases: the named escapes,
 * `\xNN` for other ASCII controls, `\u00NN` for C1 controls, printable text as is.
 * @param s the text
 * @returns the quoted text
 */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const named = GO_ESCAPES[ch];
    const code = ch.codePointAt(0)!;
    if (named) out += named;
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else if (code >= 0x80 && code <= 0xa0) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return out + '"';
}

/**
 * A label or annotation map as upstream's fieldpath.FormatMap: `key="value"`
 * lines sorted by key, no trailing newline.
 * @param m the map
 * @returns the text
 */
export function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {}).sort().map((k) => `${k}=${goQuote(m![k]!)}`).join("\n");
}

/**
 * The value of a metadata field path, as upstream's ExtractFieldPathAsString.
 * @param pod the pod
 * @param fieldPath `metadata.name`, `metadata.labels`, `metadata.labels['k']`, ...
 * @returns the value, or undefined for a path that is not a metadata field
 */
export function metadataFieldValue(pod: Pod, fieldPath: string): string | undefined {
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (m) {
    return (m[1] === "labels" ? pod.metadata.labels : pod.metadata.annotations)?.[m[2]!] ?? "";
  }
  switch (fieldPath) {
    case "metadata.name":
      return pod.metadata.name ?? "";
    case "metadata.namespace":
      return pod.metadata.namespace ?? "default";
    case "metadata.uid":
      return pod.metadata.uid ?? "";
    case "metadata.labels":
      return formatMap(pod.metadata.labels);
    case "metadata.annotations":
      return formatMap(pod.metadata.annotations);
  }
  return undefined;
}

/**
 * A container resource divided by the divisor and rounded up, as upstream's
 * ExtractContainerResourceValue: cpu in milli-units (so "250m" / "1m" = 250),
 * the rest in whole units; an unset limit is the node's allocatable; a divisor that is
 * unset or zero is 1.
 * @param container the container
 * @param ref the resource (`limits.cpu`, `requests.memory`, ...) and divisor
 * @param allocatable node allocatable for unset limits
 * @returns the value as text
 * @throws {Error} for an unsupported resource or a divisor that is not positive
 */
export function resourceFieldValue(
  container: Container,
  ref: ResourceFieldSelector,
  allocatable: NodeAllocatable = {},
): string {
  const dot = ref.resource.indexOf(".");
  const kind = ref.resource.slice(0, dot);
  const name = ref.resource.slice(dot + 1);
  const known = name === "cpu" || name === "memory" || name === "ephemeral-storage" ||
    name.startsWith("hugepages-");
  if (dot < 0 || (kind !== "limits" && kind !== "requests") || !known) {
    throw new Error(`unsupported container resource: ${ref.resource}`);
  }
  const set = kind === "limits" ? container.resources?.limits : container.resources?.requests;
  const fallback = kind === "limits" && !name.startsWith("hugepages-")
    ? allocatable[name as keyof NodeAllocatable]
    : undefined;
  const q = set?.[name] ?? fallback ?? 0;
  // A zero divisor means 1, as upstream's (the apiserver defaults an unset one to "0").
  const given = ref.divisor === undefined || ref.divisor === "" ? 0 : ref.divisor;
  const divisor = milliValue(given) === 0 ? 1 : given;
  const [value, unit] = name === "cpu"
    ? [milliValue(q), milliValue(divisor)]
    : [intValue(q), intValue(divisor)];
  if (unit <= 0) throw new Error(`divisor "${ref.divisor}" of ${ref.resource} must be positive`);
  return String(Math.ceil(value / unit));
}
