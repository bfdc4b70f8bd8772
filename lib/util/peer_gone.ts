/**
 * A connection whose peer went away is no reason for the agent to exit.
 *
 * A node socket's failed write (`EPIPE`, `ECONNRESET`) is emitted as an 'error' event,
 * and an 'error' with no listener throws out of the event loop, which ends the process.
 * Every socket the agent makes has a listener while its owner holds it, but not every
 * socket the runtime makes underneath stays covered: in the fault suite's full run
 * (seed 1097731048) the agent exited twice on an uncaught `write EPIPE`, raised in
 * Deno's stream_base_commons with no other frame, just after containerd was SIGKILLed
 * under a StopContainer call, and a listener of its own on the CRI connection's socket
 * did not stop it. The upstream kubelet gets such an error back from the write and
 * carries on; so does this agent: the error is logged and the process stays. Any other
 * uncaught error still ends it, as before.
 *
 * @module
 */

import type { Logger } from "./log.ts";

/** The errno codes of a connection whose peer is gone. */
const PEER_GONE_CODES = new Set(["EPIPE", "ECONNRESET"]);

/** The system calls a socket's failed read or write names. */
const SOCKET_CALLS = new Set(["write", "writev", "read", "shutdown"]);

/**
 * Tells whether an error is a socket's read or write that failed because its peer went
 * away (node's errnoException: `code` EPIPE or ECONNRESET, `syscall` a read or write).
 * @param err anything thrown
 * @returns true for such an error
 */
export function isPeerGone(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const { code, syscall } = err as Error & { code?: unknown; syscall?: unknown };
  return typeof code === "string" && PEER_GONE_CODES.has(code) &&
    typeof syscall === "string" && SOCKET_CALLS.has(syscall);
}

/**
 * Keeps the process running through an uncaught {@link isPeerGone} error, logging it; any
 * other uncaught error is left to end the process.
 * @param logger where the kept error is logged
 * @param target the global scope whose 'error' event reports uncaught errors
 * @returns a function that removes the listener
 */
export function surviveLostPeers(
  logger: Logger,
  target: EventTarget = globalThis,
): () => void {
  const onError: EventListener = (event) => {
    const err = (event as ErrorEvent).error;
    if (!isPeerGone(err)) return;
    event.preventDefault();
    logger.error("A connection's peer went away and no one was listening for it", err);
  };
  target.addEventListener("error", onError);
  return () => target.removeEventListener("error", onError);
}
