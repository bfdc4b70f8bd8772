/**
 * Just enough of resource.Quantity to compare requests with limits: parses a
 * quantity into an exact integer count of nano-units.
 *
 * @module
 */

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};

/** Decimal suffixes as powers of ten. */
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

const PATTERN = /^([+-]?)(\d*)(?:\.(\d*))?(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$/;

/**
 * Parses a quantity ("100m", "128Mi", "1.5", 2, "1e3") into nano-units, so
 * that "1" and "1000m" compare equal. Precision finer than 1n is truncated.
 * @param quantity the manifest value
 * @returns nano-units, or undefined when it is not a quantity
 */
export function parseQuantityNano(quantity: string | number): bigint | undefined {
  const text = String(quantity).trim();
  const m = PATTERN.exec(text);
  if (m === null) return undefined;
  const [, sign = "", whole = "", frac = "", exponent, suffix = ""] = m;
  if (whole === "" && frac === "") return undefined;
  const digits = BigInt(`${whole}${frac}` || "0");
  let multiplier = 1n;
  let power = -frac.length + 9; // express in nano-units
  if (exponent !== undefined) power += Number(exponent.slice(1));
  else if (suffix in BINARY) multiplier = BINARY[suffix] ?? 1n;
  else power += DECIMAL[suffix] ?? 0;
  let value = digits * multiplier;
  value = power >= 0 ? value * 10n ** BigInt(power) : value / 10n ** BigInt(-power);
  return sign === "-" ? -value : value;
}
