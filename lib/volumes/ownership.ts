/**
 * A pod's fsGroup applied to a volume, as upstream's VolumeOwnership
 * (pkg/volume/volume_linux.go): every entry under the volume dir gets the
 * group (symlinks themselves, never their targets) and group read/write
 * (read-only volumes: read), directories also the setgid and exec bits so new
 * files inherit the group. Upstream's in-tree emptyDir, configMap, secret,
 * downwardAPI and projected plugins call it with no fsGroupChangePolicy, so
 * the policy (OnRootMismatch) changes nothing for them; hostPath is never
 * touched.
 *
 * @module
 */

import { lchown } from "node:fs/promises";

const RW_MASK = 0o660;
/** What a read-only volume's files gain: group (and owner) read. */
export const RO_MASK = 0o440;
const EXEC_MASK = 0o110;
const SETGID = 0o2000;

async function changeEntry(
  path: string,
  info: Deno.FileInfo,
  fsGroup: number,
  readOnly: boolean,
): Promise<void> {
  // Upstream logs a failed chown or chmod and carries on; so do we, quietly.
  await lchown(path, -1, fsGroup).catch(() => {});
  if (info.isSymlink) return;
  let mask = readOnly ? RO_MASK : RW_MASK;
  if (info.isDirectory) mask |= SETGID | EXEC_MASK;
  await Deno.chmod(path, ((info.mode ?? 0) & 0o7777) | mask).catch(() => {});
}

async function walk(
  path: string,
  info: Deno.FileInfo,
  visit: (p: string, i: Deno.FileInfo) => Promise<void>,
): Promise<void> {
  if (info.isDirectory) {
    const names: string[] = [];
    for await (const e of Deno.readDir(path)) names.push(e.name);
    for (const name of names.sort()) {
      const child = `${path}/${name}`;
      await walk(child, await Deno.lstat(child), visit);
    }
  }
  // Children first, then the directory itself, as upstream's walkDeep.
  await visit(path, info);
}

/**
 * Gives the volume at `dir` to the pod's fsGroup (upstream SetVolumeOwnership).
 * @param dir the volume dir on the host
 * @param fsGroup the pod's `securityContext.fsGroup`; nothing happens without one
 * @param readOnly true for configMap, secret, downwardAPI and projected volumes
 * @throws {Error} when the tree cannot be read
 */
export async function setVolumeOwnership(
  dir: string,
  fsGroup: number | undefined,
  readOnly: boolean,
): Promise<void> {
  if (fsGroup === undefined) return;
  await walk(dir, await Deno.lstat(dir), (p, i) => changeEntry(p, i, fsGroup, readOnly));
}
