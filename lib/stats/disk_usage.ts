/**
 * A directory's disk usage as upstream's volume metrics measure it
 * (pkg/volume/util/fs DiskUsage, without the project-quota shortcut): a walk
 * that lstat()s every entry, counts allocated blocks × 512 bytes and one inode
 * per entry, counts a hard-linked inode once, and does not descend into a
 * directory on another device (a mount point under the path). Symbolic links
 * count as themselves and are not followed.
 *
 * The walk is async, so a large tree does not hold the event loop; callers
 * still keep it off request paths (volume_stats.ts runs it on a timer).
 *
 * @module
 */

/** What a walk found. */
export interface DiskUsage {
  /** Allocated bytes (st_blocks × 512). */
  bytes: number;
  /** Entries counted, the path itself included. */
  inodes: number;
}

const BLOCK = 512;

/**
 * Measures `path` (a file or a directory tree).
 * @param path what to measure
 * @param signal stops the walk early
 * @returns bytes and inodes used
 * @throws {Deno.errors.NotFound} when `path` itself does not exist
 */
export async function diskUsage(path: string, signal?: AbortSignal): Promise<DiskUsage> {
  const top = await Deno.stat(path);
  const usage: DiskUsage = { bytes: 0, inodes: 0 };
  const seen = new Set<number>();
  const visit = async (p: string, info: Deno.FileInfo): Promise<void> => {
    signal?.throwIfAborted();
    if (info.dev !== top.dev) return;
    if ((info.nlink ?? 1) > 1 && info.ino !== null) {
      if (seen.has(info.ino)) return;
      seen.add(info.ino);
    }
    usage.bytes += (info.blocks ?? 0) * BLOCK;
    usage.inodes++;
    if (!info.isDirectory) return;
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(p));
    } catch (err) {
      // Removed while the walk ran, as upstream's walk ignores.
      if (err instanceof Deno.errors.NotFound) return;
      throw err;
    }
    for (const e of entries) {
      const child = `${p}/${e.name}`;
      let childInfo: Deno.FileInfo;
      try {
        childInfo = await Deno.lstat(child);
      } catch (err) {
        if (err instanceof Deno.errors.NotFound) continue;
        throw err;
      }
      await visit(child, childInfo);
    }
  };
  await visit(path.replace(/\/+$/, "") || "/", await Deno.lstat(path));
  return usage;
}

/**
 * One path that is not walked (a file, a symbolic link) as {@link diskUsage}
 * measures it, without a walk and synchronously: its allocated blocks and one
 * inode, or nothing when a symbolic link's target is on another device.
 * @param path the file
 * @returns bytes and inodes used
 * @throws {Deno.errors.NotFound} when `path` does not exist
 */
export function fileUsage(path: string): DiskUsage {
  const info = Deno.lstatSync(path);
  if (info.isSymlink && Deno.statSync(path).dev !== info.dev) return { bytes: 0, inodes: 0 };
  return { bytes: (info.blocks ?? 0) * BLOCK, inodes: 1 };
}

/**
 * The summed usage of the files right inside `dir`, subdirectories left out:
 * how upstream measures a container's log directory (and a pod's, for files
 * at its top), each file as {@link fileUsage} measures it. Synchronous: one
 * directory listing and an lstat per file (a log directory holds a handful),
 * which costs a fraction of the same calls made async.
 * @param dir the directory
 * @returns the sums, or undefined when `dir` does not exist
 * @throws {Error} when the directory or a file in it cannot be read
 */
export function filesUsage(dir: string): DiskUsage | undefined {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  const sum: DiskUsage = { bytes: 0, inodes: 0 };
  for (const e of entries) {
    if (e.isDirectory) continue;
    try {
      const u = fileUsage(`${dir}/${e.name}`);
      sum.bytes += u.bytes;
      sum.inodes += u.inodes;
    } catch (err) {
      // Rotated away between the listing and the stat.
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }
  return sum;
}
