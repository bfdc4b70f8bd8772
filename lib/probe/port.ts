/**
 * Port and address helpers of the network probes and the httpGet hook
 * (upstream's pkg/probe `ResolveContainerPort`).
 *
 * @module
 */

import type { Container } from "../api/types.ts";

/**
 * Resolves a probe's port as upstream's `ResolveContainerPort`: a number is
 * used as is; a name is looked up in the container's ports, and failing that
 * read as a number written as a string.
 * @param port the probe's port
 * @param container the container whose ports name it
 * @returns the port number, in 1..65535
 * @throws {RangeError} when the name is unknown or the number is out of range
 */
export function resolveContainerPort(port: number | string, container: Container): number {
  let n: number;
  if (typeof port === "number") {
    n = port;
  } else {
    const named = container.ports?.find((p) => p.name === port);
    if (named) n = named.containerPort;
    else if (/^-?\d+$/.test(port)) n = Number(port);
    else throw new RangeError(`container "${container.name}": port ${port} not found`);
  }
  if (Number.isInteger(n) && n > 0 && n < 65536) return n;
  throw new RangeError(`container "${container.name}": invalid port number: ${n}`);
}
