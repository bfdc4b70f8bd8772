/**
 * The `/var/log/containers/<pod>_<namespace>_<container>-<id>.log` symlinks
 * that log shippers tail, as upstream's legacy log symlinks: made when a
 * container starts, removed with the container, and dangling ones (the log
 * is gone) cleaned by {@link cleanDanglingLogSymlinks}.
 *
 * @module
 */

import type { RuntimeService } from "../cri/types.ts";
import { isNotFound } from "../cri/errors.ts";
import type { Logger } from "../util/log.ts";

/** Upstream's legacyContainerLogsDir. */
export const DEFAULT_CONTAINER_LOGS_DIR = "/var/log/containers";

/**
 * Where the symlinks go for a `podLogsDir`: upstream's `/var/log/containers`
 * beside the default `/var/log/pods`; for a pod logs directory moved elsewhere,
 * the `containers` directory beside it, so that an agent (or a test) whose
 * logs live elsewhere never writes into the host's /var/log/containers.
 * @param podLogsDir the pod logs directory (`podLogsDir`)
 * @returns the container logs directory
 */
export function containerLogsDirFor(podLogsDir: string): string {
  const trimmed = podLogsDir.replace(/\/+$/, "");
  const parent = trimmed.slice(0, trimmed.lastIndexOf("/")) || "/";
  return `${parent === "/" ? "" : parent}/containers`;
}

/** ext4's file name limit, which upstream cuts the name to (suffix kept). */
const MAX_NAME = 255;
const SUFFIX = ".log";
/** CRI ContainerState EXITED. */
const CONTAINER_EXITED = 2;

/**
 * The symlink's path, as upstream's logSymlink.
 * @param dir the container logs directory
 * @param pod the pod's name and namespace
 * @param containerName the container's name
 * @param containerId the runtime's container id
 * @returns `<dir>/<pod>_<namespace>_<container>-<id>.log`
 */
export function logSymlinkPath(
  dir: string,
  pod: { name: string; namespace: string },
  containerName: string,
  containerId: string,
): string {
  const name = `${pod.name}_${pod.namespace}_${containerName}-${containerId}`;
  return `${dir.replace(/\/+$/, "")}/${name.slice(0, MAX_NAME - SUFFIX.length)}${SUFFIX}`;
}

/**
 * Links the container's log into the container logs directory. Only when the
 * log exists (a runtime that logs elsewhere would leave a dangling link).
 * Failures are logged, never fatal to the start, as upstream.
 * @param dir the container logs directory
 * @param link the symlink's path
 * @param logPath the container's log file
 * @param logger where failures go
 */
export async function createLogSymlink(
  dir: string,
  link: string,
  logPath: string,
  logger: Logger,
): Promise<void> {
  try {
    await Deno.lstat(logPath);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return;
  }
  try {
    await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
    await Deno.symlink(logPath, link);
  } catch (err) {
    logger.error("Failed to create legacy symbolic link", err, { path: link, logPath });
  }
}

/**
 * Removes a container's symlink; a missing one is fine.
 * @param link the symlink's path
 * @param logger where failures go
 */
export async function removeLogSymlink(link: string, logger: Logger): Promise<void> {
  try {
    await Deno.remove(link);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) {
      logger.error("Failed to remove container log symlink", err, { path: link });
    }
  }
}

/**
 * Removes the symlinks whose log is gone, as upstream's container GC does,
 * except those of containers still running: their log may be missing only
 * for a moment, between a rotation's rename and the runtime's reopen.
 * @param dir the container logs directory
 * @param runtime ContainerStatus, to tell running containers
 * @param logger where failures go
 * @returns the links removed
 */
export async function cleanDanglingLogSymlinks(
  dir: string,
  runtime: Pick<RuntimeService, "containerStatus">,
  logger: Logger,
): Promise<string[]> {
  const removed: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir));
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return removed;
    throw err;
  }
  for (const e of entries) {
    if (!e.name.endsWith(SUFFIX)) continue;
    const link = `${dir}/${e.name}`;
    try {
      await Deno.stat(link);
      continue;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) continue;
    }
    const id = /-([0-9a-f]{64})\.log$/.exec(e.name)?.[1];
    if (id) {
      try {
        const { status } = await runtime.containerStatus(id);
        if (status.state !== CONTAINER_EXITED) continue;
      } catch (err) {
        if (!isNotFound(err)) {
          logger.v(2).info("Error getting ContainerStatus for containerID", {
            containerID: id,
            err: (err as Error).message,
          });
        }
      }
    }
    await removeLogSymlink(link, logger);
    removed.push(link);
  }
  return removed;
}
