/**
 * Scratch resources a test holds for its own duration: temporary directories and free
 * local ports.
 *
 * @module
 */

/**
 * Runs `fn` in a fresh temporary directory (its real path, symlinks resolved), removed
 * afterwards whatever `fn` does.
 *
 * @param fn the test body
 * @param prefix the directory name's prefix, to tell leftovers apart
 */
export async function withTempDir<T>(
  fn: (dir: string) => Promise<T>,
  prefix = "denolet-test-",
): Promise<T> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix }));
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A TCP port on 127.0.0.1 that is free when asked (the OS does not reserve it). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}
