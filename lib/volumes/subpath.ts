/**
 * subPath mounts, as upstream's makeMounts: the path is a relative path
 * without `..`, created (with the volume dir's mode) when missing, and must
 * resolve, symlinks followed, to a place inside the volume, so a container
 * cannot point a subPath at the host through a symlink it wrote.
 *
 * @module
 */

import type { Container } from "../api/types.ts";

/**
 * Checks a subPath's spelling.
 * @param subPath the volumeMount's subPath
 * @throws {Error} when it is absolute or has a `..` element
 */
export function validateSubPath(subPath: string): void {
  if (subPath.startsWith("/") || subPath.split("/").includes("..")) {
    throw new Error(`subPath "${subPath}" must be a relative path without ".."`);
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
    // Created now so it gets the volume's mode rather than whatever the runtime picks.
    const mode = ((await Deno.stat(root)).mode ?? 0o755) & 0o7777;
    await Deno.mkdir(hostPath, { recursive: true, mode });
    await Deno.chmod(hostPath, mode);
    resolved = await Deno.realPath(hostPath);
  }
  if (!within(root, resolved)) {
    throw new Error(`subPath "${subPath}" resolves to "${resolved}", outside the volume`);
  }
  return hostPath;
}

/**
 * Prepares every subPath mount of a container.
 * @param container the container
 * @param volumePaths volume name → host path
 * @throws {Error} naming the volume mount and container
 */
export async function prepareSubPaths(
  container: Container,
  volumePaths: ReadonlyMap<string, string>,
): Promise<void> {
  for (const vm of container.volumeMounts ?? []) {
    if (!vm.subPath) continue;
    const volumePath = volumePaths.get(vm.name);
    if (volumePath === undefined) continue; // containerMounts reports unknown volumes.
    try {
      await prepareSubPath(volumePath, vm.subPath);
    } catch (err) {
      throw new Error(
        `failed to prepare subPath for volumeMount "${vm.name}" of container "${container.name}": ${
          (err as Error).message
        }`,
        { cause: err },
      );
    }
  }
}
