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
 * their own: resource.Quantity (as upstream's ParseQuantity leaves it: the
 * int64 amount with the canonical string it caches, or an inf.Dec's big.Int
 * words and scale; ResourceList values rounded up to milli units as the v1
 * defaults do), metav1.Time (zero only) and intstr.IntOrString. A pod holding
 * a value this cannot print as upstream does (a creationTimestamp: its
 * time.Location's contents depend on the host's zone data and on whether the
 * kubelet has loaded them yet; an exponent past ±1000 upstream would expand)
 * gets `undefined`, and the caller says so.
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

/** Suffix → [base, exponent, format] as upstream's quantitySuffixer reads it. */
const SUFFIXES: Record<string, [bigint, number, string]> = {
  "": [10n, 0, "DecimalSI"],
  n: [10n, -9, "DecimalSI"],
  u: [10n, -6, "DecimalSI"],
  m: [10n, -3, "DecimalSI"],
  k: [10n, 3, "DecimalSI"],
  M: [10n, 6, "DecimalSI"],
  G: [10n, 9, "DecimalSI"],
  T: [10n, 12, "DecimalSI"],
  P: [10n, 15, "DecimalSI"],
  E: [10n, 18, "DecimalSI"],
  Ki: [2n, 10, "BinarySI"],
  Mi: [2n, 20, "BinarySI"],
  Gi: [2n, 30, "BinarySI"],
  Ti: [2n, 40, "BinarySI"],
  Pi: [2n, 50, "BinarySI"],
  Ei: [2n, 60, "BinarySI"],
};

const MAX_INT64 = (1n << 63n) - 1n;

/** An exponent past this is one we do not expand (upstream would, into a huge inf.Dec). */
const MAX_EXPONENT = 1000;

/** A quantity as upstream's resource.Quantity holds it: the int64 amount, or else the inf.Dec. */
interface GoQuantity {
  /** int64Amount value and scale (zero when dec is set). */
  value: bigint;
  scale: number;
  /** infDecAmount: unscaled and scale (the value is unscaled × 10^-scale). */
  dec?: { unscaled: bigint; scale: number };
  /** The cached canonical string. */
  s: string;
  format: string;
}

/** `x` rounded to `scale` decimal places, away from zero (inf.Dec's Round with RoundUp). */
function roundDecUp(
  dec: { unscaled: bigint; scale: number },
  scale: number,
): { unscaled: bigint; scale: number } {
  if (dec.scale <= scale) {
    return { unscaled: dec.unscaled * 10n ** BigInt(scale - dec.scale), scale };
  }
  const divisor = 10n ** BigInt(dec.scale - scale);
  const quotient = dec.unscaled / divisor;
  if (dec.unscaled % divisor === 0n) return { unscaled: quotient, scale };
  return { unscaled: quotient + (dec.unscaled < 0n ? -1n : 1n), scale };
}

/** Upstream's parseQuantityString: sign, the numeric text, numerator, denominator and suffix. */
function splitQuantity(str: string) {
  const m = /^([+-]?)(0*)(\d*)(?:\.(\d*))?(.*)$/s.exec(str)!;
  const [, sign, zeros, digits, denom = "", rest] = m;
  const positive = sign !== "-";
  if (digits === "" && m[4] === undefined && rest === "") {
    return { positive, value: "0", num: "0", denom: "", suffix: "" };
  }
  const value = sign! + zeros! + digits! + (m[4] === undefined ? "" : "." + denom);
  const suffix = /^[eEinumkKMGTP]*[+-]?\d*$/.test(rest!) ? rest! : undefined;
  return { positive, value, num: digits || "0", denom, suffix };
}

/**
 * What upstream's ParseQuantity makes of a quantity string: the int64 fast path
 * (with the canonical string cached when it is one), or an inf.Dec rounded up
 * to nano units, capped for binary suffixes.
 */
function parseGoQuantity(str: string): GoQuantity {
  if (str === "") throw new Unprintable('quantity ""');
  if (str === "0") return { value: 0n, scale: 0, s: "0", format: "DecimalSI" };
  const { positive, value, num, denom, suffix } = splitQuantity(str);
  let interpreted = suffix === undefined ? undefined : SUFFIXES[suffix];
  if (!interpreted && suffix && /^[eE][+-]?\d+$/.test(suffix)) {
    // strconv.ParseInt into an int64, then int32(parsed)
    const parsed = BigInt(suffix.slice(1));
    if (BigInt.asIntN(64, parsed) !== parsed) throw new Unprintable(`quantity ${str}`);
    interpreted = [10n, Number(BigInt.asIntN(32, parsed)), "DecimalExponent"];
  }
  if (!interpreted) throw new Unprintable(`quantity ${str}`);
  const [base, exponent] = interpreted;
  let format = interpreted[2];

  let precision = -1;
  let scale = 0;
  let mantissa = 1n;
  if (format === "BinarySI") {
    if (denom.length === 0) {
      mantissa = 1n << BigInt(exponent);
      precision = 15 - num.length - Math.trunc(exponent * 3 / 10) - 1;
    }
  } else {
    scale = exponent;
    precision = 18 - (num.length + denom.length);
  }
  if (precision >= 0) {
    scale -= denom.length;
    if (scale >= -9) {
      const shifted = num + denom;
      const result = BigInt(shifted) * mantissa;
      if (result <= MAX_INT64) {
        const canonical = format === "BinarySI"
          ? exponent % 10 === 0 && (BigInt(shifted) & 7n) !== 0n
          : scale % 3 === 0 && !shifted.endsWith("000") && shifted[0] !== "0";
        return { value: positive ? result : -result, scale, s: canonical ? str : "", format };
      }
    }
  }

  if (!/\d/.test(value) || Math.abs(exponent) > MAX_EXPONENT) {
    throw new Unprintable(`quantity ${str}`);
  }
  const point = value.indexOf(".");
  let unscaled = BigInt(value.replace(".", ""));
  let decScale = point < 0 ? 0 : value.length - point - 1;
  if (base === 10n) decScale -= exponent;
  else unscaled *= 1n << BigInt(exponent);
  const negative = unscaled < 0n;
  if (negative) unscaled = -unscaled;
  let dec = { unscaled, scale: decScale };
  if (unscaled !== 0n) dec = roundDecUp(dec, 9);
  if (unscaled !== 0n && format === "BinarySI") {
    // nonzero amounts are at scale 9 here
    if (dec.unscaled > MAX_INT64 * 10n ** BigInt(dec.scale)) {
      dec = { unscaled: MAX_INT64, scale: 0 };
    } else if (dec.unscaled < 10n ** BigInt(dec.scale)) format = "DecimalSI";
  }
  if (negative) dec.unscaled = -dec.unscaled;
  return { value: 0n, scale: 0, dec, s: "", format };
}

/** Quantity.RoundUp(-3), which upstream's v1 defaults apply to every ResourceList value. */
function roundUpToMilli(q: GoQuantity): GoQuantity {
  if (q.dec) return { ...q, dec: roundDecUp(q.dec, 3), s: "" };
  if (q.scale >= -3) return q;
  const divisor = 10n ** BigInt(-3 - q.scale);
  let value = q.value / divisor;
  if (q.value % divisor !== 0n) value += q.value < 0n ? -1n : 1n;
  return { ...q, value, scale: -3, s: "" };
}

/** go-spew's words of a big.nat: little-endian 64-bit words, `<nil>` for zero. */
function natWords(abs: bigint): string {
  if (abs === 0n) return "<nil>";
  const words: bigint[] = [];
  for (let rest = abs; rest > 0n; rest >>= 64n) words.push(rest & 0xffffffffffffffffn);
  return `[${words.join(" ")}]`;
}

/**
 * A quantity's Go fields as upstream decodes it; `resourceList` applies the
 * rounding upstream's defaults give ResourceList values.
 */
function quantityFields(raw: unknown, resourceList: boolean): string {
  const str = typeof raw === "number" ? String(raw) : raw;
  if (typeof str !== "string") throw new Unprintable(`quantity ${String(raw)}`);
  const parsed = parseGoQuantity(str);
  const q = resourceList ? roundUpToMilli(parsed) : parsed;
  const dec = q.dec
    ? `{unscaled:(big.Int){neg:(bool)${q.dec.unscaled < 0n} abs:(big.nat)${
      natWords(q.dec.unscaled < 0n ? -q.dec.unscaled : q.dec.unscaled)
    }} scale:(inf.Scale)${q.dec.scale}}`
    : "<nil>";
  return `{i:(resource.int64Amount){value:(int64)${q.value} scale:(resource.Scale)${q.scale}} ` +
    `d:(resource.infDecAmount){Dec:(*inf.Dec)${dec}} s:(string)${q.s} Format:(resource.Format)${q.format}}`;
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
      // upstream's v1 defaults round every ResourceList value up to milli units
      const item = (v: unknown) =>
        type === "core.ResourceList" ? quantityFields(v, true) : dump(desc.e!, v, false);
      return `${prefix}map[${keys.map((k) => `${k}:${item(value[k])}`).join(" ")}]`;
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
      return prefix + quantityFields(value, false);
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
