/**
 * subPath mounts, as upstream's makeMounts: the path (a volumeMount's subPath,
 * or its subPathExpr once expanded) is a relative path without `..`, created
 * (with the volume dir's mode) when missing, and must resolve, symlinks
 * followed, to a place inside the volume, so a container cannot point a
 * subPath at the host through a symlink it wrote.
 *
 * @module
 */

/** One volumeMount's subPath, resolved (a subPathExpr already expanded). */
export interface SubPathMount {
  /** The volumeMount's name: the pod volume it mounts. */
  volumeName: string;
  subPath: string;
}

/**
 * Checks a subPath's spelling, with upstream's messages.
 * @param subPath the volumeMount's subPath, or its expanded subPathExpr
 * @throws {Error} when it is absolute or has a `..` element
 */
export function validateSubPath(subPath: string): void {
  if (subPath.startsWith("/")) {
    throw new Error(`error SubPath \`${subPath}\` must not be an absolute path`);
  }
  if (subPath.split("/").includes("..")) {
    throw new Error(`unable to provision SubPath \`${subPath}\`: must not contain '..'`);
  }
}

function within(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`);
}

/**
 * Prepares one subPath of a volume: creates it when missing and checks that
 * it stays inside the volume.
 * @param volumePath the volume's host path
 * @param subPath the relative path
 * @returns the host path to bind-mount
 * @throws {Error} naming the subPath when it escapes the volume or cannot be created
 */
export async function prepareSubPath(volumePath: string, subPath: string): Promise<string> {
  validateSubPath(subPath);
  const root = await Deno.realPath(volumePath);
  const hostPath = `${volumePath.replace(/\/+$/, "")}/${subPath}`;
  let resolved: string;
  try {
    resolved = await Deno.realPath(hostPath);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
    await makeDirsWithin(root, volumePath, subPath);
    resolved = await Deno.realPath(hostPath);
  }
  if (!within(root, resolved)) throw escapes(subPath, resolved);
  return hostPath;
}

function escapes(subPath: string, resolved: string): Error {
  return new Error(`subPath "${subPath}" resolves to "${resolved}", outside the volume`);
}

/**
 * Creates the missing directories of a subPath one at a time, as upstream's
 * SafeMakeDir: each with the volume's mode (not the runtime's later guess,
 * which would miss an fsGroup's g+rwx), and never through a symlink that
 * leaves the volume, which a recursive mkdir would follow.
 */
async function makeDirsWithin(root: string, volumePath: string, subPath: string): Promise<void> {
  const mode = ((await Deno.stat(root)).mode ?? 0o755) & 0o7777;
  let current = volumePath.replace(/\/+$/, "");
  for (const part of subPath.split("/")) {
    if (part === "" || part === ".") continue;
    current = `${current}/${part}`;
    let info: Deno.FileInfo | undefined;
    try {
      info = await Deno.lstat(current);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    if (info?.isSymlink) {
      const target = await Deno.realPath(current);
      if (!within(root, target)) throw escapes(subPath, target);
    } else if (!info) {
      try {
        await Deno.mkdir(current, { mode });
        await Deno.chmod(current, mode);
      } catch (err) {
        // Made by the container meanwhile: the final realPath check judges it.
        if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
      }
    }
  }
}

/**
 * Prepares every subPath mount of a container.
 * @param containerName the container, for errors
 * @param mounts its volumeMounts' resolved subPaths
 * @param volumePaths volume name → host path
 * @throws {Error} naming the volume mount and container
 */
export async function prepareSubPaths(
  containerName: string,
  mounts: readonly SubPathMount[],
  volumePaths: ReadonlyMap<string, string>,
): Promise<void> {
  for (const { volumeName, subPath } of mounts) {
    const volumePath = volumePaths.get(volumeName);
    if (volumePath === undefined) continue; // containerMounts reports unknown volumes.
    try {
      await prepareSubPath(volumePath, subPath);
    } catch (err) {
      throw new Error(
        `failed to prepare subPath for volumeMount "${volumeName}" of container "${containerName}": ${
          (err as Error).message
        }`,
        { cause: err },
      );
    }
  }
}
