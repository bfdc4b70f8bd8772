/**
 * The UID upstream v1.37's kubelet gives a static pod whose manifest sets none
 * (pkg/kubelet/config/common.go applyDefaults), so denolet and the upstream
 * kubelet name the same manifest's pod alike and adopt each other's containers:
 *
 *   FNV-128a( go-spew `%#v` of the decoded, v1-defaulted *internal* core.Pod
 *             (SortKeys, SpewKeys, no pointer addresses, no methods),
 *             then `host:<node>` `file:<path>` (files) or `url:<url>` )
 *
 * The dump prints every field of every nested Go type, set or not, with its Go
 * type. Those types are described in internal_pod_types.json, generated from
 * upstream's own types by tools/e2e/podschema (field order, Go type names, the
 * v1 JSON name each field is decoded from). A few values have Go internals of
 * their own: resource.Quantity (parsed as upstream's ParseQuantity fast path:
 * the int64 amount and the canonical string it caches), metav1.Time (zero only)
 * and intstr.IntOrString. A pod holding a value this cannot print as upstream
 * does (a quantity upstream stores as inf.Dec, a creationTimestamp) gets
 * `undefined`, and the caller says so.
 *
 * @module
 */

import types from "./internal_pod_types.json" with { type: "json" };
import type { Pod } from "../api/types.ts";
import { isRecord } from "../util/json.ts";

interface TypeDesc {
  k: string;
  e?: string;
  key?: string;
  /** Struct fields: Go name, v1 JSON name, Go type, inlined (embedded) in JSON. */
  f?: [string, string | null, string, boolean][];
}

const SCHEMA = types as unknown as { root: string; types: Record<string, TypeDesc> };
const TYPES = SCHEMA.types;
const ROOT = SCHEMA.root;

/** A value the dump cannot print as upstream does. */
class Unprintable extends Error {}

const ZERO_TIME = "{Time:(time.Time){wall:(uint64)0 ext:(int64)0 loc:(*time.Location)<nil>}}";

/** Suffix → [exponent, format] as upstream's quantitySuffixer reads it. */
const SUFFIXES: Record<string, [number, string]> = {
  "": [0, "DecimalSI"],
  n: [-9, "DecimalSI"],
  u: [-6, "DecimalSI"],
  m: [-3, "DecimalSI"],
  k: [3, "DecimalSI"],
  M: [6, "DecimalSI"],
  G: [9, "DecimalSI"],
  T: [12, "DecimalSI"],
  P: [15, "DecimalSI"],
  E: [18, "DecimalSI"],
  Ki: [10, "BinarySI"],
  Mi: [20, "BinarySI"],
  Gi: [30, "BinarySI"],
  Ti: [40, "BinarySI"],
  Pi: [50, "BinarySI"],
  Ei: [60, "BinarySI"],
};

/**
 * A quantity's Go fields as upstream's ParseQuantity leaves them, for the
 * int64 fast path; anything else (inf.Dec amounts, exponent forms) is unprintable.
 */
function quantityFields(raw: unknown): string {
  const str = typeof raw === "number" ? String(raw) : raw;
  if (typeof str !== "string") throw new Unprintable(`quantity ${String(raw)}`);
  const fields = (value: bigint, scale: number, s: string, format: string) =>
    `{i:(resource.int64Amount){value:(int64)${value} scale:(resource.Scale)${scale}} ` +
    `d:(resource.infDecAmount){Dec:(*inf.Dec)<nil>} s:(string)${s} Format:(resource.Format)${format}}`;
  if (str === "0") return fields(0n, 0, "0", "DecimalSI");
  const m = /^([+-]?)0*(\d*)(?:\.(\d*))?([a-zA-Z]*)$/.exec(str);
  const suffix = m ? SUFFIXES[m[4]!] : undefined;
  if (!m || !suffix) throw new Unprintable(`quantity ${str}`);
  const positive = m[1] !== "-";
  const num = m[2] || "0";
  const denom = m[3] ?? "";
  const [exponent, format] = suffix;
  let precision: number;
  let scale = 0;
  let mantissa = 1n;
  if (format === "BinarySI") {
    if (denom.length > 0) throw new Unprintable(`quantity ${str}`);
    mantissa = 1n << BigInt(exponent);
    precision = 15 - num.length - Math.trunc(exponent * 3 / 10) - 1;
  } else {
    scale = exponent;
    precision = 18 - (num.length + denom.length);
  }
  scale -= denom.length;
  if (precision < 0 || scale < -9) throw new Unprintable(`quantity ${str}`);
  const shifted = num + denom;
  const value = BigInt(shifted);
  let result = value * mantissa;
  if (result > 0x7fffffffffffffffn) throw new Unprintable(`quantity ${str}`);
  if (!positive) result = -result;
  const canonical = format === "BinarySI"
    ? exponent % 10 === 0 && (value & 7n) !== 0n
    : scale % 3 === 0 && !shifted.endsWith("000") && shifted[0] !== "0";
  return fields(result, scale, canonical ? str : "", format);
}

function intOrStringFields(raw: unknown): string {
  if (typeof raw === "string") {
    return `{Type:(intstr.Type)1 IntVal:(int32)0 StrVal:(string)${raw}}`;
  }
  return `{Type:(intstr.Type)0 IntVal:(int32)${Number(raw ?? 0)} StrVal:(string)}`;
}

/** go-spew's `%#v` of `value` decoded into Go type `type`; `typed` prints the `(type)` prefix. */
function dump(type: string, value: unknown, typed: boolean): string {
  const desc = TYPES[type];
  if (!desc) throw new Unprintable(`type ${type}`);
  const prefix = typed ? `(${type})` : "";
  const absent = value === undefined || value === null;
  switch (desc.k) {
    case "ptr":
      return absent ? `(${type})<nil>` : prefix + dump(desc.e!, value, false);
    case "slice":
      if (absent) return `(${type})<nil>`;
      if (!Array.isArray(value)) throw new Unprintable(`${type} ${JSON.stringify(value)}`);
      return `${prefix}[${value.map((v) => dump(desc.e!, v, false)).join(" ")}]`;
    case "map": {
      if (absent) return `(${type})<nil>`;
      if (!isRecord(value)) throw new Unprintable(`${type} ${JSON.stringify(value)}`);
      const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort();
      return `${prefix}map[${keys.map((k) => `${k}:${dump(desc.e!, value[k], false)}`).join(" ")}]`;
    }
    case "struct": {
      const obj = isRecord(value) ? value : {};
      const parts = desc.f!.map(([name, json, fieldType, inline]) =>
        `${name}:${dump(fieldType, inline ? obj : json === null ? undefined : obj[json], true)}`
      );
      return `${prefix}{${parts.join(" ")}}`;
    }
    case "string":
      return prefix + (absent ? "" : String(value));
    case "int":
    case "uint":
      return prefix + (absent ? "0" : String(value));
    case "bool":
      return prefix + (value === true ? "true" : "false");
    case "quantity":
      return prefix + quantityFields(value);
    case "intstr":
      return prefix + intOrStringFields(value);
    case "time":
      if (!absent) throw new Unprintable(`time ${String(value)}`);
      return prefix + ZERO_TIME;
    default:
      throw new Unprintable(`type ${type} (${desc.k})`);
  }
}

/**
 * FNV-1a, 128-bit, of a string's UTF-8 bytes, as Go's hash/fnv New128a.
 * @param text the input
 * @returns 32 hex digits
 */
export function fnv128a(text: string): string {
  const prime = (1n << 88n) + 0x13bn;
  const mask = (1n << 128n) - 1n;
  let h = 0x6c62272e07bb014262b821756295c58dn;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= BigInt(byte);
    h = (h * prime) & mask;
  }
  return h.toString(16).padStart(32, "0");
}

/**
 * go-spew's dump of a static pod as upstream's kubelet hashes it: the internal
 * core.Pod as decoded (TypeMeta blank, the manifest's own namespace), after
 * the v1 defaults.
 * @param defaulted the API-defaulted pod
 * @param namespace the namespace the manifest sets ("" when none)
 * @returns the dump, or undefined when the pod holds a value it cannot print
 */
export function upstreamPodDump(defaulted: Pod, namespace: string): string | undefined {
  const decoded = {
    ...defaulted,
    kind: undefined,
    apiVersion: undefined,
    metadata: { ...defaulted.metadata, namespace },
  };
  try {
    return dump(ROOT, decoded, true);
  } catch (err) {
    if (err instanceof Unprintable) return undefined;
    throw err;
  }
}

/**
 * Upstream's UID for a static pod without one.
 * @param defaulted the API-defaulted pod
 * @param namespace the namespace the manifest sets ("" when none)
 * @param source `file` with the node name and path, or `http` with the URL
 * @returns 32 hex digits, or undefined when the pod holds a value the dump cannot print
 */
export function upstreamStaticPodUID(
  defaulted: Pod,
  namespace: string,
  source: { kind: "file" | "http"; nodeName: string; origin: string },
): string | undefined {
  const text = upstreamPodDump(defaulted, namespace);
  if (text === undefined) return undefined;
  const tail = source.kind === "file"
    ? `host:${source.nodeName}file:${source.origin}`
    : `url:${source.origin}`;
  return fnv128a(text + tail);
}
