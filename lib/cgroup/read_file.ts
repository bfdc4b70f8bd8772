/**
 * The one place cgroup and /proc files are read. Reads are synchronous on
 * purpose: these are kernel pseudo-files (kernfs, procfs) that never wait on a
 * disk, a read takes microseconds, and a synchronous read keeps one container's
 * sample consistent without a thread-pool hop per file.
 *
 * Housekeeping reads the same ~11 files per cgroup every tick, so it keeps
 * them open ({@link CgroupFileCache}) and re-reads each from offset 0.
 *
 * @module
 */

import { closeSync, openSync, readSync } from "node:fs";
import { StatsFileError, StatsPermissionError } from "./errors.ts";

/**
 * Reads a pseudo-file, or returns `undefined` when it does not exist (a
 * controller that is not enabled, a kernel too old for the file).
 * @param file absolute path
 * @returns the text, or undefined when the file is missing
 * @throws {StatsPermissionError} when Deno refuses the read (/proc and /sys need -A)
 * @throws {StatsFileError} on any other read failure
 */
export function readOptionalText(file: string): string | undefined {
  try {
    return Deno.readTextFileSync(file);
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw wrapReadError(file, err);
  }
}

/**
 * Reads a pseudo-file that must exist.
 * @param file absolute path
 * @returns the text
 * @throws {StatsFileError} when missing or unreadable
 */
export function readRequiredText(file: string): string {
  const text = readOptionalText(file);
  if (text === undefined) throw new StatsFileError(file, "file does not exist");
  return text;
}

/**
 * Tells whether a path exists and is a directory.
 * @param path absolute path
 * @returns true for an existing directory
 * @throws {StatsPermissionError} when Deno refuses the stat
 */
export function isDirectory(path: string): boolean {
  try {
    return Deno.statSync(path).isDirectory;
  } catch (err) {
    if (isMissing(err)) return false;
    throw wrapReadError(path, err);
  }
}

/**
 * Tells whether a path exists (file, directory or anything else).
 * @param path absolute path
 * @returns true when it exists
 */
export function pathExists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch (err) {
    if (isMissing(err)) return false;
    throw wrapReadError(path, err);
  }
}

/**
 * Lists the names in a directory.
 * @param dir absolute path
 * @returns entry names, or [] when the directory does not exist
 */
export function listDirectory(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((e) => e.name);
  } catch (err) {
    if (isMissing(err)) return [];
    throw wrapReadError(dir, err);
  }
}

/** Handles a {@link CgroupFileCache} keeps open unless told otherwise. */
export const DEFAULT_MAX_OPEN_FILES = 4096;

/** Options for {@link CgroupFileCache}. */
export interface CgroupFileCacheOptions {
  /**
   * Most handles kept open; the least recently read is closed past it. 4096:
   * 110 one-container pods held 3,556 (330 cgroups: pod, sandbox, container;
   * about 11 files each over cgroup v1's controllers), and the bound
   * must stay well under `ulimit -n` wherever denolet runs (often 1024 soft:
   * raise the limit, or lower this, on such hosts).
   */
  maxOpen?: number;
}

/** A cgroup directory with handles open in it: its path is kept once, not per file. */
interface HeldDir {
  path: string;
  /** Open handles by file name. */
  files: Map<string, CachedFile>;
}

interface CachedFile {
  dir: HeldDir;
  /** Its name in the directory. */
  name: string;
  /** False once closed: an owner's cursor may still point at it. */
  open: boolean;
  /** The last text, kept only for limit files ({@link readCgroupLimit}). */
  lastText?: string;
  /** node:fs descriptor: its readSync with a position is one pread(2). */
  fd: number;
  /** Bytes the last read gave; a drop to 0 from more means "look again". */
  lastLength: number;
  /** Read stamp (the cache's counter): the lowest is the least recently read. */
  used: number;
  /**
   * The scope (housekeeping entry) that opened it, and any others that read it:
   * the handle is closed when the last is released. Nearly every file has one
   * reader, so the rest are a set only when there are any (a set per handle
   * was a third of the cache's heap at 110 pods).
   */
  owner: object;
  others?: Set<object>;
}

/** The path of a held file. */
function pathOf(cached: CachedFile): string {
  return `${cached.dir.path}/${cached.name}`;
}

/** Splits an absolute path into its directory and its last name. */
function splitPath(file: string): [string, string] {
  const slash = file.lastIndexOf("/");
  return [file.slice(0, Math.max(0, slash)), file.slice(slash + 1)];
}

// One buffer for every read: reads are synchronous, so it is never shared
// between two reads in flight. Grows (doubling) for a file larger than it.
let buffer = new Uint8Array(16 * 1024);
const decoder = new TextDecoder();

function decode(n: number): string {
  return decoder.decode(buffer.subarray(0, n));
}

/**
 * Parses a file's raw bytes (`length` of them from the start of `bytes`), or
 * returns undefined to have the decoded text parsed instead. It must give
 * what the text parser gives whenever it does not decline.
 */
export type BytesParser<T> = (bytes: Uint8Array, length: number) => T | undefined;

/** Parses a file's text; `file` is its path, for errors. */
export type TextParser<T> = (text: string, file: string) => T;

/**
 * Where an owner's pass through its files has got to, and the handle met at
 * each position on earlier passes (see {@link CgroupFileCache.readAt}).
 */
export interface ReadCursor {
  /** Reads done in this pass. */
  pos: number;
  /** The handle read at each position last time; undefined for a missing file. */
  seen: (CachedFile | undefined)[];
}

/** Reads a whole file from offset 0 into `buffer`; returns the byte count. */
function readAll(fd: number): number {
  let total = 0;
  for (;;) {
    if (total === buffer.length) {
      const bigger = new Uint8Array(buffer.length * 2);
      bigger.set(buffer);
      buffer = bigger;
    }
    const space = buffer.length - total;
    const n = readSync(fd, buffer, total, space, total);
    total += n;
    // A short read is the end: seq_file (kernfs, procfs) fills the buffer
    // until its records run out, and so does a regular file. This saves the
    // extra read that would only return EOF.
    if (n < space) return total;
  }
}

/**
 * Open handles to cgroup files, re-read from offset 0 on every housekeeping
 * tick: a kernfs file gives its current figures on each read from the start,
 * and a re-read is one pread(2) (node:fs readSync with a position) instead
 * of open + statx + read + read + close: ~2.7 µs vs ~12.5 µs for
 * Deno.readTextFileSync on our VMs; FsFile's seekSync + readSync is two calls
 * into the runtime, ~4 µs.
 *
 * Bounded (least recently read closed first) and never a reason for an
 * answer to differ from a fresh read:
 * - a read that fails (ENODEV from a removed cgroup, anything else) or that
 *   gives 0 bytes where the last gave some closes the handle and answers
 *   with a fresh read, so a vanished file reads as missing and an error is
 *   the one {@link readOptionalText} gives;
 * - a missing file is remembered only while a file of the same directory is
 *   held open (so the cgroup exists, and a cgroup's controller files do not
 *   come and go): looking it up again costs an exception on every tick;
 * - {@link CgroupFileCache.release} closes what a housekeeping entry opened
 *   when it is untracked, {@link CgroupFileCache.closeUnder} what lies under a
 *   cgroup found gone, so a removed container's cgroup is not kept open.
 *
 * Only cgroup files go through it ({@link readCgroupText}); /proc/PID files
 * do not, since an open /proc/PID/net/dev would pin the pod's network
 * namespace.
 */
export class CgroupFileCache {
  /** Most handles kept open. */
  readonly maxOpen: number;
  /** Directories with open handles, by path. */
  readonly #dirs = new Map<string, HeldDir>();
  /** Handles open, over all directories. */
  #openCount = 0;
  /** Files found missing, with who looked; trusted only while their directory is held. */
  readonly #missing = new Map<string, Set<object>>();
  readonly #cursors = new Map<object, ReadCursor>();
  #lost = 0;
  // Recency is a stamp per read rather than Map re-insertion, which costs
  // more on every read than an occasional scan costs on eviction.
  #stamp = 0;

  /** @param opts the handle bound */
  constructor(opts: CgroupFileCacheOptions = {}) {
    this.maxOpen = Math.max(1, Math.floor(opts.maxOpen ?? DEFAULT_MAX_OPEN_FILES));
  }

  /** Handles open now. */
  get size(): number {
    return this.#openCount;
  }

  /**
   * Tells whether a handle to `file` is open.
   * @param file absolute path
   * @returns true when cached
   */
  has(file: string): boolean {
    return this.#held(...splitPath(file)) !== undefined;
  }

  /**
   * Tells whether a handle to a file directly in `dir` is open: the
   * directory existed when it was opened and, on kernfs, still does as long
   * as reads through it succeed.
   * @param dir absolute directory path, without a trailing slash
   * @returns true when some file of `dir` is cached
   */
  holdsDir(dir: string): boolean {
    return this.#dirs.has(dir);
  }

  /**
   * Counts cached files found gone since the cache was made: a read through
   * the handle failed (kernfs: ENODEV once the cgroup is removed) or came
   * back empty, and the file no longer exists. A reader compares it before
   * and after to learn that a directory it trusted may be gone.
   */
  get lost(): number {
    return this.#lost;
  }

  /**
   * Reads a file through its cached handle, opening one on first use.
   * @param file absolute path
   * @param owner who reads it (a housekeeping entry), for {@link CgroupFileCache.release}
   * @returns the text, or undefined when the file does not exist
   * @throws {StatsPermissionError} when Deno refuses the read (/proc and /sys need -A)
   * @throws {StatsFileError} on any other read failure
   */
  read(file: string, owner: object): string | undefined {
    const [dir, name] = splitPath(file);
    return this.#read(dir, name, owner);
  }

  #read(dir: string, name: string, owner: object): string | undefined {
    const held = this.#dirs.get(dir);
    const cached = held?.files.get(name);
    if (cached !== undefined) {
      if (cached.owner !== owner) (cached.others ??= new Set()).add(owner);
      return this.#reread(cached, owner);
    }
    const missing = held === undefined ? undefined : this.#missing.get(`${dir}/${name}`);
    if (missing !== undefined) {
      missing.add(owner);
      return undefined;
    }
    return this.#open(dir, name, owner);
  }

  #held(dir: string, name: string): CachedFile | undefined {
    return this.#dirs.get(dir)?.files.get(name);
  }

  /**
   * Reads `dir`/`name` as {@link CgroupFileCache.read} does, first trying the
   * handle `cursor` met at this position on the owner's last pass: a
   * collector reads the same files in the same order every tick, so the
   * handle is found without building the path or a lookup by it.
   * @param dir absolute cgroup directory
   * @param name file name in it
   * @param owner who reads it
   * @param cursor the owner's cursor, from {@link CgroupFileCache.cursor}
   * @param limit for a limit file: "refresh" reads it and keeps the text,
   *   "reuse" gives the kept text without reading (reads when none is kept)
   * @returns the text, or undefined when the file does not exist
   */
  readAt(
    dir: string,
    name: string,
    owner: object,
    cursor: ReadCursor,
    limit?: "refresh" | "reuse",
  ): string | undefined {
    const at = cursor.pos++;
    const seen = cursor.seen[at];
    let text: string | undefined;
    let held: CachedFile | undefined;
    if (seen !== undefined && seen.open && seen.name === name && seen.dir.path === dir) {
      if (limit === "reuse" && seen.lastText !== undefined) return seen.lastText;
      text = this.#reread(seen, owner);
      held = seen.open ? seen : undefined;
    } else {
      text = this.#read(dir, name, owner);
      held = this.#held(dir, name);
    }
    if (held === undefined) {
      if (seen !== undefined) cursor.seen[at] = undefined;
      return text;
    }
    cursor.seen[at] = held;
    if (limit !== undefined && text !== undefined) held.lastText = text;
    return text;
  }

  /**
   * The read cursor of `owner`, rewound to its first read; kept until
   * {@link CgroupFileCache.release}.
   * @param owner who reads
   * @returns the cursor
   */
  cursor(owner: object): ReadCursor {
    let cursor = this.#cursors.get(owner);
    if (cursor === undefined) {
      cursor = { pos: 0, seen: [] };
      this.#cursors.set(owner, cursor);
    }
    cursor.pos = 0;
    return cursor;
  }

  /**
   * Stops `owner` holding its files; each file no one else reads is closed.
   * @param owner what was passed to {@link CgroupFileCache.read}
   * @returns handles closed
   */
  release(owner: object): number {
    this.#cursors.delete(owner);
    for (const [file, owners] of this.#missing) {
      if (owners.delete(owner) && owners.size === 0) this.#missing.delete(file);
    }
    let closed = 0;
    for (const cached of this.#all()) {
      if (cached.owner !== owner) {
        if (cached.others?.delete(owner) && cached.others.size === 0) delete cached.others;
        continue;
      }
      const next = cached.others?.values().next().value;
      if (next === undefined) {
        this.#close(cached);
        closed++;
        continue;
      }
      cached.owner = next;
      cached.others!.delete(next);
      if (cached.others!.size === 0) delete cached.others;
    }
    return closed;
  }

  /**
   * Closes every handle to a file under `dir` (a cgroup found gone).
   * @param dir absolute directory path
   * @returns handles closed
   */
  closeUnder(dir: string): number {
    const prefix = dir.endsWith("/") ? dir : `${dir}/`;
    for (const file of this.#missing.keys()) {
      if (file.startsWith(prefix)) this.#missing.delete(file);
    }
    let closed = 0;
    for (const held of [...this.#dirs.values()]) {
      if (!`${held.path}/`.startsWith(prefix)) continue;
      const files = [...held.files.values()];
      for (const cached of files) this.#close(cached);
      closed += files.length;
    }
    return closed;
  }

  /** Closes every handle (agent stop). */
  closeAll(): void {
    this.#missing.clear();
    this.#cursors.clear();
    for (const cached of this.#all()) this.#close(cached);
  }

  /**
   * Reads `dir`/`name` as {@link CgroupFileCache.readAt} does, giving the
   * bytes of a held file to `bytes` without decoding them; when `bytes`
   * declines (undefined) or the file is read some other way, the text goes
   * to `text`.
   * @param dir absolute cgroup directory
   * @param name file name in it
   * @param owner who reads it
   * @param cursor the owner's cursor, from {@link CgroupFileCache.cursor}
   * @param bytes parser of the raw bytes (valid only during the call)
   * @param text parser of the text
   * @returns the parsed value, or undefined when the file does not exist
   */
  parseAt<T>(
    dir: string,
    name: string,
    owner: object,
    cursor: ReadCursor,
    bytes: BytesParser<T>,
    text: TextParser<T>,
  ): T | undefined {
    const seen = cursor.seen[cursor.pos];
    if (seen !== undefined && seen.open && seen.name === name && seen.dir.path === dir) {
      cursor.pos++;
      const n = this.#readHeld(seen);
      if (n >= 0) {
        const value = bytes(buffer, n);
        return value !== undefined ? value : text(decode(n), `${dir}/${name}`);
      }
      const fresh = this.#reopen(seen, owner);
      return fresh === undefined ? undefined : text(fresh, pathOf(seen));
    }
    const fresh = this.readAt(dir, name, owner, cursor);
    return fresh === undefined ? undefined : text(fresh, `${dir}/${name}`);
  }

  /** Re-reads a held file from offset 0; on a failure, reads it afresh. */
  #reread(cached: CachedFile, owner: object): string | undefined {
    const n = this.#readHeld(cached);
    if (n < 0) return this.#reopen(cached, owner);
    const text = decode(n);
    if (cached.lastText !== undefined) cached.lastText = text;
    return text;
  }

  /** Reads a held file into `buffer`: the byte count, or -1 when it must be opened afresh. */
  #readHeld(cached: CachedFile): number {
    cached.used = ++this.#stamp;
    let n = -1;
    try {
      n = readAll(cached.fd);
    } catch {
      // ENODEV once the cgroup is removed, or anything else: a fresh read
      // (#reopen) tells "gone" (undefined) from a real error (thrown as today).
    }
    if (n > 0 || (n === 0 && cached.lastLength === 0)) {
      cached.lastLength = n;
      return n;
    }
    return -1;
  }

  /** Closes a handle whose read failed or turned empty, and reads the file afresh. */
  #reopen(cached: CachedFile, owner: object): string | undefined {
    this.#close(cached);
    const text = this.#open(cached.dir.path, cached.name, owner);
    if (text === undefined) this.#lost++;
    return text;
  }

  #open(dir: string, name: string, owner: object): string | undefined {
    const file = `${dir}/${name}`;
    let fd: number;
    try {
      fd = openSync(file, "r");
    } catch (err) {
      // node:fs reports errno codes; a missing file is routine (a controller
      // not enabled), anything else is re-read the usual way for its error.
      if (isMissingCode(err)) {
        const owners = this.#missing.get(file);
        if (owners) owners.add(owner);
        else this.#missing.set(file, new Set([owner]));
        return undefined;
      }
      if (err instanceof Deno.errors.NotCapable) throw new StatsPermissionError(file, err);
      return readOptionalText(file);
    }
    let n: number;
    try {
      n = readAll(fd);
    } catch {
      closeSync(fd);
      return readOptionalText(file);
    }
    const text = decode(n);
    if (this.#openCount >= this.maxOpen) this.#evict();
    let held = this.#dirs.get(dir);
    if (held === undefined) {
      held = { path: dir, files: new Map() };
      this.#dirs.set(dir, held);
    }
    held.files.set(name, {
      dir: held,
      name,
      open: true,
      fd,
      lastLength: n,
      used: ++this.#stamp,
      owner,
    });
    this.#openCount++;
    return text;
  }

  /** Every open handle, listed first (closing while iterating is safe). */
  #all(): CachedFile[] {
    const out: CachedFile[] = [];
    for (const held of this.#dirs.values()) for (const f of held.files.values()) out.push(f);
    return out;
  }

  /** Closes the least recently read 1/16 of the bound (at least one handle). */
  #evict(): void {
    const count = Math.max(1, this.#openCount - this.maxOpen + 1, this.maxOpen >> 4);
    const byAge = this.#all().sort((a, b) => a.used - b.used);
    for (const cached of byAge.slice(0, count)) this.#close(cached);
  }

  #close(cached: CachedFile): void {
    if (!cached.open) return;
    cached.open = false;
    cached.dir.files.delete(cached.name);
    this.#openCount--;
    if (cached.dir.files.size === 0) this.#dirs.delete(cached.dir.path);
    try {
      closeSync(cached.fd);
    } catch {
      // Already closed: nothing is held.
    }
  }
}

/** The process-wide cache housekeeping uses unless given its own. */
export const cgroupFileCache: CgroupFileCache = new CgroupFileCache();

interface Scope {
  cache: CgroupFileCache;
  owner: object;
  cursor: ReadCursor;
  limits: "refresh" | "reuse";
}

let scope: Scope | undefined;

/** Options for {@link withCachedReads}. */
export interface CachedReadOptions {
  /**
   * Give limit files ({@link readCgroupLimit}) the text this owner last read
   * instead of reading them again; false.
   */
  reuseLimits?: boolean;
}

/**
 * Runs `fn` with {@link readCgroupText}, {@link readCgroupFile} and
 * {@link readCgroupLimit} reading through `cache` on behalf of `owner`. Meant
 * for synchronous collectors: reads after an `await` inside `fn` are outside
 * the scope and read fresh.
 * @param cache the handle cache
 * @param owner who the handles are held for (released with {@link CgroupFileCache.release})
 * @param fn the reads
 * @param opts whether limit files may be answered from the last read
 * @returns what `fn` returns
 */
export function withCachedReads<T>(
  cache: CgroupFileCache,
  owner: object,
  fn: () => T,
  opts: CachedReadOptions = {},
): T {
  const outer = scope;
  scope = {
    cache,
    owner,
    cursor: cache.cursor(owner),
    limits: opts.reuseLimits === true ? "reuse" : "refresh",
  };
  try {
    return fn();
  } finally {
    scope = outer;
  }
}

/**
 * Reads a cgroup file: through the handle cache inside
 * {@link withCachedReads}, as a fresh read outside it. Same answers and
 * errors either way.
 * @param file absolute path
 * @returns the text, or undefined when the file does not exist
 * @throws {StatsPermissionError} when Deno refuses the read (/proc and /sys need -A)
 * @throws {StatsFileError} on any other read failure
 */
export function readCgroupText(file: string): string | undefined {
  return scope === undefined ? readOptionalText(file) : scope.cache.read(file, scope.owner);
}

/**
 * Reads the file `name` of the cgroup directory `dir`, as
 * {@link readCgroupText} reads `${dir}/${name}`; inside
 * {@link withCachedReads} without building the path on a repeat pass.
 * @param dir absolute cgroup directory
 * @param name file name
 * @returns the text, or undefined when the file does not exist
 * @throws {StatsPermissionError} when Deno refuses the read (/proc and /sys need -A)
 * @throws {StatsFileError} on any other read failure
 */
export function readCgroupFile(dir: string, name: string): string | undefined {
  if (scope === undefined) return readOptionalText(`${dir}/${name}`);
  return scope.cache.readAt(dir, name, scope.owner, scope.cursor);
}

/**
 * Reads and parses the file `name` of the cgroup directory `dir`: inside
 * {@link withCachedReads} a held file's bytes go to `bytes` without being
 * decoded; otherwise, or when `bytes` declines, the text goes to `text`.
 * @param dir absolute cgroup directory
 * @param name file name
 * @param bytes parser of the raw bytes
 * @param text parser of the text and path (its errors are the caller's errors)
 * @returns the parsed value, or undefined when the file does not exist
 * @throws {StatsPermissionError} when Deno refuses the read (/proc and /sys need -A)
 * @throws {StatsFileError} on any other read failure
 */
export function readCgroupParsed<T>(
  dir: string,
  name: string,
  bytes: BytesParser<T>,
  text: TextParser<T>,
): T | undefined {
  if (scope === undefined) {
    const file = `${dir}/${name}`;
    const fresh = readOptionalText(file);
    return fresh === undefined ? undefined : text(fresh, file);
  }
  return scope.cache.parseAt(dir, name, scope.owner, scope.cursor, bytes, text);
}

/**
 * Reads a limit file (memory.max, pids.max, …), or another file housekeeping
 * reads only on the limits' cadence (memory.events), as {@link readCgroupFile}
 * does, except that inside {@link withCachedReads} with `reuseLimits` it
 * gives the text this owner last read from it, without a read.
 * @param dir absolute cgroup directory
 * @param name file name
 * @returns the text, or undefined when the file does not exist
 * @throws {StatsPermissionError} when Deno refuses the read (/proc and /sys need -A)
 * @throws {StatsFileError} on any other read failure
 */
export function readCgroupLimit(dir: string, name: string): string | undefined {
  if (scope === undefined) return readOptionalText(`${dir}/${name}`);
  return scope.cache.readAt(dir, name, scope.owner, scope.cursor, scope.limits);
}

/**
 * Tells whether the cache in scope holds files of `dir` open, which lets a
 * reader skip looking the directory up (see {@link CgroupFileCache.holdsDir}).
 * @param dir absolute directory path
 * @returns false outside {@link withCachedReads}
 */
export function cgroupDirHeldOpen(dir: string): boolean {
  return scope !== undefined && scope.cache.holdsDir(dir);
}

/**
 * The {@link CgroupFileCache.lost} count of the cache in scope.
 * @returns the count; 0 outside {@link withCachedReads}
 */
export function lostCgroupFiles(): number {
  return scope === undefined ? 0 : scope.cache.lost;
}

/**
 * Closes cached handles under a cgroup directory found gone: those of the
 * cache in scope, else of the process-wide one.
 * @param dir absolute directory path
 */
export function forgetCgroupDir(dir: string): void {
  (scope?.cache ?? cgroupFileCache).closeUnder(dir);
}

function isMissingCode(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

function isMissing(err: unknown): boolean {
  return err instanceof Deno.errors.NotFound || err instanceof Deno.errors.NotADirectory;
}

function wrapReadError(file: string, err: unknown): StatsFileError {
  // NotCapable is Deno's own refusal; PermissionDenied is the kernel's EACCES.
  if (err instanceof Deno.errors.NotCapable) return new StatsPermissionError(file, err);
  const detail = err instanceof Error ? err.message : String(err);
  return new StatsFileError(file, `read failed: ${detail}`, { cause: err });
}
