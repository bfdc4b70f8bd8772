/**
 * A container's cpu and memory as numbers, and the comparisons in-place
 * resize makes: quantities compare by value ("1000m" is "1"), as upstream's
 * `apiequality.Semantic.DeepEqual` and `Quantity.Equal` compare them.
 *
 * @module
 */

import { intValue, isValidQuantity, milliValue } from "./quantity.ts";
import type { Quantity, ResourceRequirements } from "./types.ts";

/**
 * The four values a resize changes (upstream kuberuntime's
 * `resourceRequirements`): cpu in millicores, memory in bytes, 0 when unset.
 */
export interface ResourceNumbers {
  cpuRequest: number;
  cpuLimit: number;
  memoryRequest: number;
  memoryLimit: number;
}

function value(list: Record<string, Quantity> | undefined, name: string): number {
  const q = list?.[name];
  if (q === undefined || !isValidQuantity(q)) return 0;
  return name === "cpu" ? milliValue(q) : intValue(q);
}

/**
 * A container's cpu and memory requests and limits as numbers.
 * @param r the container's resources
 * @returns the values, 0 for each one unset
 */
export function resourceNumbers(r: ResourceRequirements | undefined): ResourceNumbers {
  return {
    cpuRequest: value(r?.requests, "cpu"),
    cpuLimit: value(r?.limits, "cpu"),
    memoryRequest: value(r?.requests, "memory"),
    memoryLimit: value(r?.limits, "memory"),
  };
}

/**
 * Whether two sets of cpu and memory values are the same.
 * @param a one set
 * @param b the other
 * @returns true when all four agree
 */
export function sameResourceNumbers(a: ResourceNumbers, b: ResourceNumbers): boolean {
  return a.cpuRequest === b.cpuRequest && a.cpuLimit === b.cpuLimit &&
    a.memoryRequest === b.memoryRequest && a.memoryLimit === b.memoryLimit;
}

function listsEqual(
  a: Record<string, Quantity> | undefined,
  b: Record<string, Quantity> | undefined,
): boolean {
  const ka = Object.keys(a ?? {});
  const kb = Object.keys(b ?? {});
  if (ka.length !== kb.length) return false;
  for (const name of ka) {
    const x = a?.[name];
    const y = b?.[name];
    if (x === undefined || y === undefined) return false;
    if (x === y) continue;
    if (!isValidQuantity(x) || !isValidQuantity(y)) return false;
    // Compare in the smallest unit either side uses, so "1" and "1000m" agree.
    if (milliValue(x) !== milliValue(y)) return false;
  }
  return true;
}

/**
 * Whether two resource requirements are semantically equal: the same
 * resource names in each list, with equal quantities (an absent list equals
 * an empty one).
 * @param a one
 * @param b the other
 * @returns true when equal
 */
export function resourcesEqual(
  a: ResourceRequirements | undefined,
  b: ResourceRequirements | undefined,
): boolean {
  return listsEqual(a?.requests, b?.requests) && listsEqual(a?.limits, b?.limits);
}
