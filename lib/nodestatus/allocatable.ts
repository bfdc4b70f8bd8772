/**
 * Node capacity and allocatable, as upstream's MachineInfo setter and the
 * container manager's GetNodeAllocatableReservation compute them:
 * allocatable = capacity − kubeReserved − systemReserved − hard eviction
 * thresholds (memory.available against memory, nodefs.available against
 * ephemeral-storage), never below zero, and memory also less every hugepage
 * pool. Quantities are printed in apimachinery's canonical form so that a
 * value we write compares equal to the one the apiserver returns.
 *
 * @module
 */

import { intValue, milliValue, parseQuantity } from "../api/mod.ts";
import type { Quantity } from "../api/types.ts";
import { type EvictionThreshold, parseEvictionThresholds } from "../options/mod.ts";
import type { MachineInfo } from "../stats/mod.ts";

/** What capacity and allocatable are computed from. */
export interface AllocatableOptions {
  /** `maxPods`, the `pods` capacity (110 by default upstream). */
  maxPods: number;
  /** `--kube-reserved`: resource → quantity. */
  kubeReserved?: Readonly<Record<string, string>>;
  /** `--system-reserved`: resource → quantity. */
  systemReserved?: Readonly<Record<string, string>>;
  /** `--eviction-hard`: signal → "100Mi" or "10%". */
  evictionHard?: Readonly<Record<string, string>>;
  /**
   * `localStorageCapacityIsolation` (true); false leaves `ephemeral-storage`
   * out of capacity and allocatable, as upstream's GetCapacity.
   */
  localStorageCapacityIsolation?: boolean;
}

const BINARY_SUFFIXES = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
const DECIMAL_SUFFIXES = ["", "k", "M", "G", "T", "P", "E"];

/**
 * Formats an integer amount of bytes as a BinarySI quantity in canonical
 * form: the largest power of 1024 that divides it exactly (3145728 → "3Mi",
 * 1536 → "1536"); amounts below 1024 are plain numbers.
 * @param bytes a whole number
 * @returns the quantity string
 */
export function formatBinarySI(bytes: number): string {
  let n = Math.trunc(bytes);
  if (Math.abs(n) < 1024) return String(n);
  let i = 0;
  while (n !== 0 && n % 1024 === 0 && i < BINARY_SUFFIXES.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n}${BINARY_SUFFIXES[i]}`;
}

/**
 * Formats a DecimalSI quantity given in thousandths in canonical form
 * (1900 → "1900m", 2000 → "2", 110000 → "110", 1000000 → "1k").
 * @param milli the value × 1000, a whole number
 * @returns the quantity string
 */
export function formatDecimalSIMilli(milli: number): string {
  const m = Math.trunc(milli);
  if (m % 1000 !== 0) return `${m}m`;
  let n = m / 1000;
  let i = 0;
  while (n !== 0 && n % 1000 === 0 && i < DECIMAL_SUFFIXES.length - 1) {
    n /= 1000;
    i++;
  }
  return `${n}${DECIMAL_SUFFIXES[i]}`;
}

/**
 * The resource name of a hugepage pool ("hugepages-2Mi", "hugepages-1Gi").
 * @param pageSizeBytes the page size
 * @returns the resource name
 */
export function hugePageResourceName(pageSizeBytes: number): string {
  return `hugepages-${formatBinarySI(pageSizeBytes)}`;
}

/** cpu is counted in thousandths, everything else in whole units. */
function amountOf(resource: string, q: Quantity): number {
  return resource === "cpu" ? milliValue(q) : intValue(q);
}

function format(resource: string, amount: number): string {
  if (resource === "cpu") return formatDecimalSIMilli(amount);
  if (resource === "pods") return formatDecimalSIMilli(amount * 1000);
  return formatBinarySI(amount);
}

/**
 * The node's capacity in base units (cpu in millicores, memory and storage
 * in bytes, pods as a count).
 * @param machine the machine's facts
 * @param maxPods the pods capacity
 * @returns resource → amount
 */
export function capacityAmounts(machine: MachineInfo, maxPods: number): Map<string, number> {
  const out = new Map<string, number>([
    ["cpu", machine.numCores * 1000],
    ["memory", machine.memoryCapacityBytes],
    ["ephemeral-storage", machine.ephemeralStorageCapacityBytes],
    ["pods", maxPods],
  ]);
  for (const pool of machine.hugepages) {
    out.set(hugePageResourceName(pool.pageSizeBytes), pool.pageSizeBytes * pool.numPages);
  }
  return out;
}

/** Which capacity a hard eviction threshold is held back from. */
const EVICTION_RESOURCE: Record<string, string> = {
  "memory.available": "memory",
  "nodefs.available": "ephemeral-storage",
};

/**
 * What is held back from each resource: kubeReserved + systemReserved + the
 * hard eviction thresholds (a percentage is of the resource's capacity,
 * truncated as upstream's int64 conversion does).
 * @param capacity resource → amount in base units
 * @param opts the reservations and thresholds
 * @returns resource → amount held back
 * @throws {Error} naming the field when a reservation or threshold is malformed
 */
export function reservationAmounts(
  capacity: ReadonlyMap<string, number>,
  opts: AllocatableOptions,
): Map<string, number> {
  const out = new Map<string, number>();
  const add = (resource: string, amount: number) =>
    out.set(resource, (out.get(resource) ?? 0) + amount);
  for (
    const [field, map] of [["kubeReserved", opts.kubeReserved], [
      "systemReserved",
      opts.systemReserved,
    ]] as const
  ) {
    for (const [resource, q] of Object.entries(map ?? {})) {
      try {
        add(resource, amountOf(resource, q));
      } catch (err) {
        throw new Error(`${field}[${JSON.stringify(resource)}]: ${(err as Error).message}`, {
          cause: err,
        });
      }
    }
  }
  const thresholds: EvictionThreshold[] = parseEvictionThresholds(
    opts.evictionHard ?? {},
    "evictionHard",
  );
  for (const t of thresholds) {
    const resource = EVICTION_RESOURCE[t.signal];
    if (resource === undefined) continue;
    if (t.quantity !== undefined) add(resource, Math.ceil(t.quantity));
    else if (t.percentage !== undefined) {
      add(resource, Math.floor((capacity.get(resource) ?? 0) * t.percentage));
    }
  }
  return out;
}

/**
 * What the pods' top cgroup (kubepods) is limited to (upstream
 * getNodeAllocatableInternalAbsolute, with `enforceNodeAllocatable: [pods]`):
 * capacity, with the `pid` count (min of pid_max and threads-max) added, less
 * kubeReserved and systemReserved (not the eviction thresholds), never below zero.
 * @param machine the machine's facts
 * @param opts the reservations
 * @returns resource → amount (cpu in millicores, memory in bytes, pid a count)
 * @throws {Error} naming the field when a reservation is malformed
 */
export function nodeAllocatableAbsolute(
  machine: MachineInfo,
  opts: Pick<AllocatableOptions, "kubeReserved" | "systemReserved">,
): Map<string, number> {
  const capacity = capacityAmounts(machine, 0);
  capacity.delete("pods");
  if (machine.maxPid !== undefined) capacity.set("pid", machine.maxPid);
  // Only the reservations: `opts` may be the whole options object, eviction thresholds and all.
  const reserved = reservationAmounts(capacity, {
    maxPods: 0,
    ...(opts.kubeReserved ? { kubeReserved: opts.kubeReserved } : {}),
    ...(opts.systemReserved ? { systemReserved: opts.systemReserved } : {}),
  });
  const out = new Map<string, number>();
  for (const [r, amount] of capacity) out.set(r, Math.max(0, amount - (reserved.get(r) ?? 0)));
  return out;
}

/** The amounts node allocatable enforcement (lib/cm node_allocatable.ts) decides from. */
export interface EnforcementAmounts {
  /** Capacity with the `pid` count, without `pods` (upstream internalCapacity). */
  internalCapacity: Map<string, number>;
  /** {@link nodeAllocatableAbsolute}. */
  allocatable: Map<string, number>;
  systemReserved: Map<string, number>;
  kubeReserved: Map<string, number>;
}

/**
 * The capacity, allocatable and each reservation in base units, for the
 * kubepods and reserved cgroups' limits.
 * @param machine the machine's facts
 * @param opts the reservations
 * @returns the amounts
 * @throws {Error} naming the field when a reservation is malformed
 */
export function enforcementAmounts(
  machine: MachineInfo,
  opts: Pick<AllocatableOptions, "kubeReserved" | "systemReserved">,
): EnforcementAmounts {
  const one = (field: "kubeReserved" | "systemReserved") => {
    const map = opts[field];
    return reservationAmounts(new Map(), { maxPods: 0, ...(map ? { [field]: map } : {}) });
  };
  return {
    internalCapacity: nodeAllocatableAbsolute(machine, {}),
    allocatable: nodeAllocatableAbsolute(machine, opts),
    systemReserved: one("systemReserved"),
    kubeReserved: one("kubeReserved"),
  };
}

/** Capacity and allocatable as they go into a NodeStatus. */
export interface NodeResources {
  capacity: Record<string, Quantity>;
  allocatable: Record<string, Quantity>;
}

/**
 * Computes capacity and allocatable.
 * @param machine the machine's facts
 * @param opts maxPods, reservations and eviction thresholds
 * @returns both maps, quantities in canonical form
 * @throws {Error} naming the field when a reservation or threshold is malformed
 */
export function computeNodeResources(
  machine: MachineInfo,
  opts: AllocatableOptions,
): NodeResources {
  const capacity = capacityAmounts(machine, opts.maxPods);
  if (opts.localStorageCapacityIsolation === false) capacity.delete("ephemeral-storage");
  const reserved = reservationAmounts(capacity, opts);
  const allocatable = new Map<string, number>();
  for (const [resource, amount] of capacity) {
    allocatable.set(resource, Math.max(0, amount - (reserved.get(resource) ?? 0)));
  }
  // Hugepages are carved out of memory, so pods cannot also count them as memory.
  for (const [resource, amount] of capacity) {
    if (!resource.startsWith("hugepages-")) continue;
    allocatable.set("memory", Math.max(0, (allocatable.get("memory") ?? 0) - amount));
  }
  const out: NodeResources = { capacity: {}, allocatable: {} };
  for (const [r, a] of capacity) out.capacity[r] = format(r, a);
  for (const [r, a] of allocatable) out.allocatable[r] = format(r, a);
  return out;
}

/**
 * Whether two quantities denote the same amount ("1Gi" and "1073741824").
 * @param a a quantity
 * @param b another
 * @returns true when equal; unparsable ones compare as text
 */
export function sameQuantity(a: Quantity | undefined, b: Quantity | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  try {
    return parseQuantity(a) === parseQuantity(b);
  } catch {
    return String(a) === String(b);
  }
}
