/**
 * Kubernetes resource quantities ("100m", "0.5", "128Mi", "1G", "1e3").
 *
 * The grammar follows k8s.io/apimachinery's resource.Quantity: an optionally
 * signed decimal number followed by one suffix, which is a binary SI suffix
 * (Ki, Mi, Gi, Ti, Pi, Ei), a decimal SI suffix (n, u, m, k, M, G, T, P, E) or a
 * decimal exponent (`e3`, `E-2`). Values are returned as JavaScript numbers:
 * exact for every quantity a pod spec realistically holds (below 2^53).
 *
 * @module
 */

import type { Quantity } from "./types.ts";

/** Upstream's wording for a malformed quantity, reused in validation messages. */
export const QUANTITY_FORMAT_HINT =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/** Thrown when a quantity does not parse; `quantity` holds the offending input. */
export class QuantityError extends Error {
  /** The input that failed to parse. */
  readonly quantity: Quantity;

  /**
   * @param quantity the input
   * @param reason why it is invalid
   */
  constructor(quantity: Quantity, reason: string) {
    super(`invalid quantity ${JSON.stringify(String(quantity))}: ${reason}`);
    this.name = "QuantityError";
    this.quantity = quantity;
  }
}

const BINARY: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const DECIMAL: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  "": 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

// The number part: digits with at most one '.', and at least one digit.
const NUMBER = /^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)/;
const EXPONENT = /^[eE][+-]?[0-9]+$/;

/**
 * Parses a quantity into its value as a float ("100m" → 0.1, "1Ki" → 1024).
 * @param q the quantity as written in a manifest (string or number)
 * @returns the value
 * @throws {QuantityError} when `q` is not a valid quantity
 */
export function parseQuantity(q: Quantity): number {
  if (typeof q === "number") {
    if (!Number.isFinite(q)) throw new QuantityError(q, "not a finite number");
    return q;
  }
  if (typeof q !== "string") throw new QuantityError(String(q), "not a string or number");
  const match = NUMBER.exec(q);
  if (!match) throw new QuantityError(q, QUANTITY_FORMAT_HINT);
  const mantissa = Number(match[0]);
  const suffix = q.slice(match[0].length);
  // Scale by a power of ten written as text so "0.1" * 10^-3 stays as exact as a float can.
  const binary = BINARY[suffix];
  if (binary !== undefined) return mantissa * binary;
  const power = DECIMAL[suffix];
  if (power !== undefined) return Number(`${match[0]}e${power}`);
  if (EXPONENT.test(suffix)) {
    const value = Number(`${match[0]}${suffix}`);
    if (!Number.isFinite(value)) throw new QuantityError(q, "exponent out of range");
    return value;
  }
  throw new QuantityError(q, `unknown suffix ${JSON.stringify(suffix)}`);
}

/**
 * The quantity in thousandths, rounded up as upstream's MilliValue does
 * ("100m" → 100, "0.5" → 500, "1" → 1000).
 * @param q the quantity
 * @returns the milli value
 * @throws {QuantityError} when `q` is not a valid quantity
 */
export function milliValue(q: Quantity): number {
  return roundUp(parseQuantity(q) * 1000);
}

/**
 * The quantity as a whole number, rounded up as upstream's Value does; the
 * unit for memory and storage, where it is bytes ("128Mi" → 134217728).
 * @param q the quantity
 * @returns the integer value
 * @throws {QuantityError} when `q` is not a valid quantity
 */
export function intValue(q: Quantity): number {
  return roundUp(parseQuantity(q));
}

/**
 * Tells whether `q` parses, without throwing.
 * @param q the quantity
 * @returns true when valid
 */
export function isValidQuantity(q: Quantity): boolean {
  try {
    parseQuantity(q);
    return true;
  } catch {
    return false;
  }
}

// Float noise ("0.1" * 1000 = 100.00000000000001) must not round 100m up to 101.
function roundUp(value: number): number {
  const nearest = Math.round(value);
  if (Math.abs(value - nearest) < 1e-9 * Math.max(1, Math.abs(value))) return nearest;
  return Math.ceil(value);
}

/**
 * A cpu amount in millicores as the apiserver writes it (upstream
 * `NewMilliQuantity(m, DecimalSI).String()`): whole cores without a suffix
 * ("1", "2"), anything else in millicores ("250m").
 * @param milli millicores, a non-negative integer
 * @returns the canonical quantity
 */
export function formatMilliCPU(milli: number): string {
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`;
}

/**
 * A byte count as the apiserver writes it (upstream `NewQuantity(n,
 * BinarySI).String()`): the largest binary suffix that divides it ("45Mi",
 * "1Gi"), or the plain number.
 * @param bytes a non-negative integer
 * @returns the canonical quantity
 */
export function formatBinaryBytes(bytes: number): string {
  if (bytes === 0) return "0";
  let value = bytes;
  let suffix = "";
  for (const next of ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]) {
    if (value % 1024 !== 0) break;
    value /= 1024;
    suffix = next;
  }
  return `${value}${suffix}`;
}
