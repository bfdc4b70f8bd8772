/**
 * tmpfs mounts for memory-backed volumes (emptyDir `medium: Memory`, and
 * secret and projected volumes, which upstream keeps off disk), through
 * mount(8)/umount(8); mount points are read from /proc/self/mountinfo.
 *
 * @module
 */

/** One line of /proc/self/mountinfo. */
export interface MountInfo {
  mountPoint: string;
  fsType: string;
  source: string;
}

/** The mount operations volumes need; tests pass a fake. */
export interface Mounter {
  /**
   * Mounts a fresh tmpfs on `dir`.
   * @throws {Error} naming the dir and the command's output
   */
  mountTmpfs(dir: string, sizeBytes: number | undefined): Promise<void>;
  /**
   * Unmounts `dir`.
   * @throws {Error} naming the dir and the command's output
   */
  unmount(dir: string): Promise<void>;
  /** Every mount, in mount order. */
  mounts(): Promise<MountInfo[]>;
}

/**
 * The mount(8) arguments for a tmpfs on `dir`, as upstream's setupTmpfs.
 * @param dir the mount point
 * @param sizeBytes the size limit; undefined or 0 for the kernel's default
 * @returns the argument list (without "mount")
 */
export function tmpfsMountArgs(dir: string, sizeBytes: number | undefined): string[] {
  const args = ["-t", "tmpfs"];
  if (sizeBytes && sizeBytes > 0) args.push("-o", `size=${Math.ceil(sizeBytes)}`);
  return [...args, "tmpfs", dir];
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescapeOctal(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/**
 * Parses /proc/self/mountinfo.
 * @param text the file's content
 * @returns its mounts in order
 */
export function parseMountInfo(text: string): MountInfo[] {
  const out: MountInfo[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const fields = line.split(" ");
    const sep = fields.indexOf("-", 6);
    if (sep < 0 || fields.length < sep + 3) continue;
    out.push({
      mountPoint: unescapeOctal(fields[4]!),
      fsType: fields[sep + 1]!,
      source: unescapeOctal(fields[sep + 2]!),
    });
  }
  return out;
}

/**
 * The mount points at `dir` or below it, deepest first (the order to unmount in).
 * @param mounts from {@link Mounter.mounts}
 * @param dir an absolute directory
 * @returns mount points, each once
 */
export function mountPointsUnder(mounts: readonly MountInfo[], dir: string): string[] {
  const root = dir.replace(/\/+$/, "");
  const under = new Set(
    mounts.map((m) => m.mountPoint).filter((p) => p === root || p.startsWith(`${root}/`)),
  );
  return [...under].sort((a, b) => b.length - a.length);
}

async function run(cmd: string, args: string[], what: string): Promise<void> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  } catch (err) {
    throw new Error(`${what}: cannot run ${cmd}`, { cause: err });
  }
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr).trim() ||
      new TextDecoder().decode(out.stdout).trim();
    throw new Error(`${what}: ${cmd} ${args.join(" ")} exited with ${out.code}: ${text}`);
  }
}

/** The node's own mount(8) and umount(8); needs root. */
export const hostMounter: Mounter = {
  mountTmpfs(dir, sizeBytes) {
    return run("mount", tmpfsMountArgs(dir, sizeBytes), `failed to mount tmpfs on "${dir}"`);
  },
  unmount(dir) {
    return run("umount", [dir], `failed to unmount "${dir}"`);
  },
  async mounts() {
    return parseMountInfo(await Deno.readTextFile("/proc/self/mountinfo"));
  },
};
