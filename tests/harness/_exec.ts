/**
 * Subprocess and /proc helpers shared by the harness modules.
 *
 * @module
 */

import { waitFor, WaitTimeoutError } from "../kit/mod.ts";

/** What a finished command printed and how it exited. */
export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options for {@link exec}. */
export interface ExecOptions {
  /** Return a non-zero exit instead of throwing. */
  allowFailure?: boolean;
  /** Working directory. */
  cwd?: string;
  /** Variables added to (or overriding) the inherited environment. */
  env?: Record<string, string>;
  /** Text written to the command's stdin, which is closed after it (default: no stdin). */
  stdin?: string;
}

const decoder = new TextDecoder();

/**
 * Whether `path` is an executable regular file.
 *
 * @param path a file path
 */
export function isExecutable(path: string): boolean {
  try {
    const info = Deno.statSync(path);
    return info.isFile && ((info.mode ?? 0) & 0o111) !== 0;
  } catch {
    return false;
  }
}

/**
 * Quotes `s` as one word for a POSIX shell.
 * @param s any text
 * @returns `s` in single quotes, its own single quotes escaped
 */
export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/**
 * Finds `name` on PATH plus the sbin directories, which a non-login root environment
 * (CI runners, sudo) may lack although Debian keeps runc and ip there.
 *
 * @param name an executable's file name
 * @returns its absolute path, or undefined
 */
export function which(name: string): string | undefined {
  for (const dir of searchPath().split(":")) {
    if (isExecutable(`${dir}/${name}`)) return `${dir}/${name}`;
  }
  return undefined;
}

/** PATH with the standard system directories appended where missing. */
export function searchPath(): string {
  const dirs = (Deno.env.get("PATH") ?? "").split(":").filter((dir) => dir !== "");
  for (
    const dir of ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
  ) {
    if (!dirs.includes(dir)) dirs.push(dir);
  }
  return dirs.join(":");
}

/**
 * Runs `cmd args…` to completion.
 *
 * @returns the exit code and the decoded output
 * @throws Error naming the command and carrying its stderr when it fails to start, or when it
 *   exits non-zero and `allowFailure` is not set
 */
export async function exec(
  cmd: string,
  args: readonly string[],
  opts: ExecOptions = {},
): Promise<ExecResult> {
  const command = new Deno.Command(cmd.includes("/") ? cmd : which(cmd) ?? cmd, {
    args: [...args],
    stdin: opts.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }),
    ...(opts.env === undefined ? {} : { env: opts.env }),
  });
  let out: Deno.CommandOutput;
  try {
    if (opts.stdin === undefined) {
      out = await command.output();
    } else {
      const child = command.spawn();
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode(opts.stdin));
      await writer.close();
      out = await child.output();
    }
  } catch (cause) {
    throw new Error(`harness: cannot run ${cmd}`, { cause });
  }
  const result = {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
  if (result.code !== 0 && !opts.allowFailure) {
    throw new Error(
      `harness: "${[cmd, ...args].join(" ")}" exited with ${result.code}: ${
        result.stderr.trim() || result.stdout.trim()
      }`,
    );
  }
  return result;
}

/**
 * Whether `pid` is a live process: it exists and is not a zombie waiting to be reaped.
 *
 * @param pid the process id
 */
export function isAlive(pid: number): boolean {
  let stat: string;
  try {
    stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  } catch {
    return false;
  }
  // The state follows the parenthesised command name, which may itself hold ") ".
  const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  return state !== "Z" && state !== "X";
}

/**
 * The argv of `pid`, or undefined when it is gone or unreadable.
 *
 * @param pid the process id
 */
export function processArgs(pid: number): string[] | undefined {
  try {
    const raw = Deno.readTextFileSync(`/proc/${pid}/cmdline`);
    return raw.split("\0").filter((arg) => arg !== "");
  } catch {
    return undefined;
  }
}

/** The ids of every process visible in /proc. */
export function listPids(): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (entry.isDirectory && /^\d+$/.test(entry.name)) pids.push(Number(entry.name));
  }
  return pids;
}

/**
 * Sends `signal` to `pid`, ignoring a process that is already gone.
 *
 * @param pid the process id
 * @param signal the signal name
 */
export function signalPid(pid: number, signal: Deno.Signal): void {
  try {
    Deno.kill(pid, signal);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound) && isAlive(pid)) throw err;
  }
}

/**
 * Waits until none of `pids` is alive.
 *
 * @param pids the processes to wait for
 * @param timeoutMs how long to wait
 * @returns true when all exited in time
 */
export async function waitGone(pids: readonly number[], timeoutMs: number): Promise<boolean> {
  try {
    await waitFor(`pids ${pids.join(", ")} to exit`, () => !pids.some(isAlive), {
      timeoutMs,
      intervalMs: 50,
    });
    return true;
  } catch (err) {
    if (err instanceof WaitTimeoutError) return false;
    throw err;
  }
}

/**
 * The last `lines` lines of a text file, for error messages; empty when it cannot be read.
 *
 * @param path the file
 * @param lines how many lines to keep
 */
export function tail(path: string, lines = 40): string {
  try {
    return Deno.readTextFileSync(path).trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}
