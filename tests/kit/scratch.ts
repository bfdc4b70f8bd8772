/**
 * Scratch resources a test holds for its own duration: temporary directories (empty or a
 * copy of a fixture tree) and free local ports; and whether a path is there.
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

/**
 * {@link withTempDir} for a test that only does synchronous work in the directory.
 *
 * @param fn the work, given the directory's real path
 * @param prefix the directory name's prefix, to tell leftovers apart
 * @returns what `fn` returns
 */
export function withTempDirSync<T>(fn: (dir: string) => T, prefix = "denolet-test-"): T {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix }));
  try {
    return fn(dir);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

/**
 * A fresh temporary directory holding a copy of the tree at `from` (a fixture the test
 * will edit), for code that is driven synchronously. The caller removes it.
 *
 * @param from the directory to copy
 * @param prefix the directory name's prefix, to tell leftovers apart
 * @returns the copy's path
 */
export function tempCopySync(from: string, prefix = "denolet-test-"): string {
  const root = Deno.makeTempDirSync({ prefix });
  const copy = (src: string, dst: string) => {
    Deno.mkdirSync(dst, { recursive: true });
    for (const e of Deno.readDirSync(src)) {
      if (e.isDirectory) copy(`${src}/${e.name}`, `${dst}/${e.name}`);
      else Deno.copyFileSync(`${src}/${e.name}`, `${dst}/${e.name}`);
    }
  };
  copy(from, root);
  return root;
}

/** Every port {@link freePort} handed out in this process. */
const handedOut = new Set<number>();

/**
 * A TCP port on 127.0.0.1 that is free when asked (the OS does not reserve it), and
 * never one this process was given before: the kernel may hand a port just closed out
 * again, and two such ports for one agent (its healthz and read-only ports) collide
 * once it binds the second.
 */
export function freePort(): number {
  for (;;) {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

/**
 * Whether something is at `path`, a dangling symlink included (it is not followed).
 *
 * @param path the path to look at
 * @throws what `Deno.lstat` throws for any reason but the path's absence
 */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}
