/**
 * tmpfs mounts for memory-backed volumes (emptyDir `medium: Memory`, and
 * secret and projected volumes, which upstream keeps off disk), through
 * mount(8)/umount(8), a few at a time; mount points are read from /proc/self/mountinfo.
 *
 * @module
 */

import { Slots } from "../util/slots.ts";

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

/** What a command left: its exit and its output. */
export interface CommandResult {
  success: boolean;
  code: number;
  stdout: Uint8Array;
  stderr: Uint8Array;
}

/** Runs a command to its end; {@link commandMounter}'s seam for tests. */
export type RunCommand = (cmd: string, args: string[]) => Promise<CommandResult>;

const runProcess: RunCommand = (cmd, args) =>
  new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();

/**
 * mount(8) and umount(8) processes in flight at most. The kernel takes a mount namespace's
 * lock for each mount and unmount, so more at once only add processes, each reading the
 * whole mount table in the agent's own CPU share: on 2 cores, 250 umount(8)s at once on a
 * table of 1,250 mounts held the agent's event loop up to 856 ms, against 17 ms with 4 at
 * a time, in the same total time.
 */
export const MOUNT_COMMANDS_IN_FLIGHT = 4;

/**
 * A {@link Mounter} through mount(8) and umount(8), at most `inFlight` of them at once
 * (the others wait in arrival order); mount points are read from /proc/self/mountinfo.
 * @param opts `inFlight` (default {@link MOUNT_COMMANDS_IN_FLIGHT}); `run` runs a command
 *   (tests pass a fake)
 * @returns the mounter
 */
export function commandMounter(
  opts: { inFlight?: number; run?: RunCommand } = {},
): Mounter {
  const slots = new Slots(opts.inFlight ?? MOUNT_COMMANDS_IN_FLIGHT);
  const runCommand = opts.run ?? runProcess;
  const run = (cmd: string, args: string[], what: string) =>
    slots.run(async () => {
      let out: CommandResult;
      try {
        out = await runCommand(cmd, args);
      } catch (err) {
        throw new Error(`${what}: cannot run ${cmd}`, { cause: err });
      }
      if (!out.success) {
        const text = new TextDecoder().decode(out.stderr).trim() ||
          new TextDecoder().decode(out.stdout).trim();
        throw new Error(`${what}: ${cmd} ${args.join(" ")} exited with ${out.code}: ${text}`);
      }
    });
  return {
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
}

/** The node's own mount(8) and umount(8) ({@link commandMounter}'s defaults); needs root. */
export const hostMounter: Mounter = commandMounter();
