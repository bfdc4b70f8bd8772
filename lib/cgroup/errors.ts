/**
 * Errors raised while reading cgroup and /proc files. Each names the file it is
 * about, so a log line says which file on which node went wrong.
 *
 * @module
 */

/** A cgroup or /proc file could not be read (other than "does not exist"). */
export class StatsFileError extends Error {
  /** Absolute path of the file. */
  readonly file: string;
  /**
   * @param file absolute path of the file
   * @param message what went wrong
   * @param options the underlying error as `cause`
   */
  constructor(file: string, message: string, options?: ErrorOptions) {
    super(`${file}: ${message}`, options);
    this.name = "StatsFileError";
    this.file = file;
  }
}

/** A file exists but its content is not in the kernel's format (empty, garbled). */
export class StatsParseError extends StatsFileError {
  /**
   * @param file absolute path of the file
   * @param message what was expected and what was found
   */
  constructor(file: string, message: string) {
    super(file, message);
    this.name = "StatsParseError";
  }
}

/**
 * Deno refused the read. Deno 2.9 treats /proc and /sys (except /proc/pressure)
 * as privileged: it allows reads there only when every permission is granted
 * without restriction (`--allow-all`), whatever `--allow-read` says.
 */
export class StatsPermissionError extends StatsFileError {
  /**
   * @param file absolute path of the file
   * @param cause Deno's NotCapable error
   */
  constructor(file: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(
      file,
      `Deno refused the read (${detail}); reads under /proc and /sys need the process ` +
        "to run with --allow-all (-A): --allow-read alone is not enough",
      { cause },
    );
    this.name = "StatsPermissionError";
  }
}

/** The cgroup directory does not exist (the container is gone or never had one here). */
export class CgroupNotFoundError extends StatsFileError {
  /** @param dir the missing cgroup directory */
  constructor(dir: string, options?: ErrorOptions) {
    super(dir, "cgroup does not exist", options);
    this.name = "CgroupNotFoundError";
  }
}

/**
 * Tells whether `err` means the cgroup is gone, so housekeeping can drop the
 * container quietly instead of logging an error every tick.
 * @param err any thrown value
 * @returns true for {@link CgroupNotFoundError}
 */
export function isCgroupNotFound(err: unknown): err is CgroupNotFoundError {
  return err instanceof CgroupNotFoundError;
}
