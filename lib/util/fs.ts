/**
 * Small file-system helpers that several folders need.
 *
 * @module
 */

/**
 * Stats a path, following symlinks.
 * @param path the path
 * @returns its info, or undefined when nothing is there
 * @throws any error but NotFound (a permission problem must not look like absence)
 */
export async function statOrUndefined(path: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.stat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
}

/**
 * Stats a path without following a final symlink.
 * @param path the path
 * @returns its info, or undefined when nothing is there
 * @throws any error but NotFound
 */
export async function lstatOrUndefined(path: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.lstat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
}
