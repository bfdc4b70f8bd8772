/**
 * Writes a volume's files so that readers never see a half-updated set, as
 * upstream's AtomicWriter (pkg/volume/util/atomic_writer.go):
 *
 * ```
 * <dir>/
 *   ..2026_11_30_18_40_29.1234567/   the current payload (0755), one per version
 *   ..data -> ..2026_11_30_18_40_29.1234567   swapped by rename(2)
 *   key -> ..data/key                 one symlink per top-level path
 * ```
 *
 * A write with unchanged content and modes touches nothing; a changed one
 * writes a new timestamped dir, renames a fresh `..data_tmp` link over
 * `..data`, adds links for new keys, removes links of keys that went away,
 * and deletes the old dir. A container holding the volume sees the swap in
 * place.
 *
 * @module
 */

import { realClock } from "../util/clock.ts";
import type { Clock } from "../util/clock.ts";
import { lstatOrUndefined } from "../util/fs.ts";

/** One file of a volume payload. */
export interface FileProjection {
  data: Uint8Array;
  /** Permission bits (e.g. 0o644). */
  mode: number;
  /** The file's owner, when not root (upstream's FileProjection.FsUser: projected tokens). */
  fsUser?: number;
}

/** Relative path → file. */
export type Payload = Map<string, FileProjection>;

const DATA_DIR = "..data";
const NEW_DATA_DIR = "..data_tmp";

/**
 * Checks a payload path as upstream's validatePath: relative, not empty, no
 * `..` element, not starting with `..`, at most 4096 bytes, no element over 255.
 * @param path the payload path
 * @throws {Error} naming the path and the rule it breaks
 */
export function validatePayloadPath(path: string): void {
  const fail = (why: string) => new Error(`invalid file path "${path}": ${why}`);
  if (path === "") throw fail("must not be empty");
  if (path.length > 4096) throw fail("must be at most 4096 characters");
  if (path.startsWith("/")) throw fail("must be relative");
  if (path.startsWith("..")) throw fail("must not start with '..'");
  const parts = path.split("/");
  if (parts.includes("..")) throw fail("must not contain '..'");
  if (parts.some((p) => p.length > 255)) throw fail("has an element longer than 255 characters");
}

/**
 * The name of a new payload dir for `now`: `..YYYY_MM_DD_HH_MM_SS.<random>`
 * in UTC, as upstream's MkdirTemp pattern.
 * @param now ms since the epoch
 * @param random 0..1
 * @returns the dir name
 */
export function timestampDirName(now: number, random: number = Math.random()): string {
  const d = new Date(now);
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  const ts = `${p(d.getUTCFullYear(), 4)}_${p(d.getUTCMonth() + 1)}_${p(d.getUTCDate())}_${
    p(d.getUTCHours())
  }_${p(d.getUTCMinutes())}_${p(d.getUTCSeconds())}`;
  return `..${ts}.${Math.floor(random * 1e9)}`;
}

async function readLinkOrEmpty(path: string): Promise<string> {
  try {
    return await Deno.readLink(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return "";
    throw err;
  }
}

/** Every file and dir under `root`, as relative paths (dirs included). */
async function walk(root: string, prefix = ""): Promise<Map<string, Deno.DirEntry>> {
  const out = new Map<string, Deno.DirEntry>();
  for await (const e of Deno.readDir(prefix ? `${root}/${prefix}` : root)) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    out.set(rel, e);
    if (e.isDirectory) { for (const [k, v] of await walk(root, rel)) out.set(k, v); }
  }
  return out;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Whether the payload differs from what `oldDir` holds (content, mode, or set
 * of files). `addedBits` are the permission bits setPerms adds to every file.
 */
async function payloadChanged(
  payload: Payload,
  oldDir: string,
  addedBits: number,
): Promise<boolean> {
  let existing: Map<string, Deno.DirEntry>;
  try {
    existing = await walk(oldDir);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return true;
    throw err;
  }
  const files = [...existing].filter(([, e]) => !e.isDirectory).map(([k]) => k);
  if (files.length !== payload.size) return true;
  for (const [path, file] of payload) {
    const entry = existing.get(path);
    if (!entry?.isFile) return true;
    const info = await Deno.stat(`${oldDir}/${path}`);
    if (((info.mode ?? 0) & 0o7777) !== (file.mode | addedBits)) return true;
    if (!sameBytes(await Deno.readFile(`${oldDir}/${path}`), file.data)) return true;
  }
  return false;
}

/** Options for {@link writeAtomically}. */
export interface AtomicWriteOptions {
  /** Names the payload dirs; the real clock by default. */
  clock?: Clock;
  /**
   * Runs after a new payload is written and before readers see it (upstream's
   * setPerms: the pod's fsGroup); not when the content was already current.
   */
  setPerms?: () => Promise<void>;
  /** The permission bits setPerms adds to each file (so they are not taken for a change). */
  setPermsFileBits?: number;
}

/**
 * Makes `dir` hold exactly `payload`, atomically for readers. `dir` must exist.
 * @param dir the volume directory
 * @param payload relative path → content and mode
 * @param opts the clock naming new payload dirs
 * @returns true when content was written, false when it was already current
 * @throws {Error} naming the dir (or the bad path) when a step fails
 */
export async function writeAtomically(
  dir: string,
  payload: Payload,
  opts: AtomicWriteOptions = {},
): Promise<boolean> {
  const clean: Payload = new Map();
  for (const [path, file] of payload) {
    validatePayloadPath(path);
    clean.set(path.replace(/\/+$/, "").replace(/\/{2,}/g, "/"), file);
  }
  try {
    return await write(
      dir,
      clean,
      opts.clock ?? realClock,
      opts.setPerms,
      opts.setPermsFileBits ?? 0,
    );
  } catch (err) {
    throw new Error(`failed to write the files of volume dir "${dir}": ${(err as Error).message}`, {
      cause: err,
    });
  }
}

async function write(
  dir: string,
  payload: Payload,
  clock: Clock,
  setPerms: (() => Promise<void>) | undefined,
  setPermsFileBits: number,
): Promise<boolean> {
  const dataLink = `${dir}/${DATA_DIR}`;
  const oldTsName = await readLinkOrEmpty(dataLink);
  const oldTsDir = oldTsName ? `${dir}/${oldTsName}` : "";

  // Top-level names the old payload had and the new one lacks lose their links.
  const newTop = new Set([...payload.keys()].map((p) => p.split("/")[0]!));
  const toRemove: string[] = [];
  let changed = true;
  if (oldTsDir) {
    try {
      for await (const e of Deno.readDir(oldTsDir)) if (!newTop.has(e.name)) toRemove.push(e.name);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    changed = await payloadChanged(payload, oldTsDir, setPerms ? setPermsFileBits : 0);
  }

  if (changed) {
    const tsName = timestampDirName(clock.now());
    const tsDir = `${dir}/${tsName}`;
    await Deno.mkdir(tsDir, { mode: 0o755 });
    await Deno.chmod(tsDir, 0o755);
    for (const [path, file] of payload) {
      const full = `${tsDir}/${path}`;
      const parent = full.slice(0, full.lastIndexOf("/"));
      if (parent !== tsDir) await Deno.mkdir(parent, { recursive: true, mode: 0o755 });
      await Deno.writeFile(full, file.data, { mode: file.mode });
      // The umask applied at create; modes are the payload's exactly.
      await Deno.chmod(full, file.mode);
      if (file.fsUser !== undefined) await Deno.chown(full, file.fsUser, null);
    }
    await setPerms?.();
    const tmpLink = `${dir}/${NEW_DATA_DIR}`;
    await Deno.remove(tmpLink).catch((err) => {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    });
    await Deno.symlink(tsName, tmpLink);
    await Deno.rename(tmpLink, dataLink);
  }

  for (const top of newTop) {
    const link = `${dir}/${top}`;
    if (!(await lstatOrUndefined(link))) await Deno.symlink(`${DATA_DIR}/${top}`, link);
  }
  for (const name of toRemove) {
    await Deno.remove(`${dir}/${name}`).catch((err) => {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    });
  }
  if (changed && oldTsDir) await Deno.remove(oldTsDir, { recursive: true });
  return changed;
}
