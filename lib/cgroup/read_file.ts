/**
 * The one place cgroup and /proc files are read. Reads are synchronous on
 * purpose: these are kernel pseudo-files (kernfs, procfs) that never wait on a
 * disk, a read takes microseconds, and a synchronous read keeps one container's
 * sample consistent without a thread-pool hop per file.
 *
 * @module
 */

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
    if (err instanceof Deno.errors.NotFound || err instanceof Deno.errors.NotADirectory) {
      return undefined;
    }
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
    if (err instanceof Deno.errors.NotFound || err instanceof Deno.errors.NotADirectory) {
      return false;
    }
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
    if (err instanceof Deno.errors.NotFound || err instanceof Deno.errors.NotADirectory) {
      return false;
    }
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
    if (err instanceof Deno.errors.NotFound || err instanceof Deno.errors.NotADirectory) {
      return [];
    }
    throw wrapReadError(dir, err);
  }
}

function wrapReadError(file: string, err: unknown): StatsFileError {
  // NotCapable is Deno's own refusal; PermissionDenied is the kernel's EACCES.
  if (err instanceof Deno.errors.NotCapable) return new StatsPermissionError(file, err);
  const detail = err instanceof Error ? err.message : String(err);
  return new StatsFileError(file, `read failed: ${detail}`, { cause: err });
}
