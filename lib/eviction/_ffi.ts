/**
 * The few libc calls the cgroup v1 threshold notifier needs, through Deno's FFI:
 * raw file descriptors (Deno's own files do not expose theirs), eventfd(2), and a
 * read(2) that blocks on a worker thread instead of the event loop.
 *
 * libc is opened on first use and closed when the last user releases it, so a
 * process (or a test) that stops every notifier holds no library handle.
 *
 * @module
 */

const SYMBOLS = {
  open: { parameters: ["buffer", "i32"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
  write: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  read: { parameters: ["i32", "buffer", "usize"], result: "isize", nonblocking: true },
  eventfd: { parameters: ["u32", "i32"], result: "i32" },
  strerror: { parameters: ["i32"], result: "pointer" },
  __errno_location: { parameters: [], result: "pointer" },
} as const;

type Libc = Deno.DynamicLibrary<typeof SYMBOLS>;

/** open(2) flags and eventfd(2) flags on Linux (x86-64 and arm64 alike). */
export const O_RDONLY = 0;
export const O_WRONLY = 1;
export const O_CLOEXEC = 0o2000000;
const EFD_CLOEXEC = 0o2000000;

let lib: Libc | undefined;
let users = 0;

/** Opens libc for one more user; pair with {@link releaseLibc}. */
export function acquireLibc(): void {
  if (lib === undefined) lib = Deno.dlopen("libc.so.6", SYMBOLS);
  users++;
}

/** Drops one user; the library is closed when none is left. */
export function releaseLibc(): void {
  if (users === 0) return;
  users--;
  if (users === 0 && lib !== undefined) {
    lib.close();
    lib = undefined;
  }
}

function libc(): Libc {
  if (lib === undefined) throw new Error("libc used without acquireLibc()");
  return lib;
}

/** The calling thread's errno as "EACCES"-like text (strerror), for error messages. */
function lastError(): string {
  const where = libc().symbols.__errno_location();
  if (where === null) return "unknown error";
  const errno = new Deno.UnsafePointerView(where).getInt32();
  const text = libc().symbols.strerror(errno);
  return text === null
    ? `errno ${errno}`
    : `${Deno.UnsafePointerView.getCString(text)} (errno ${errno})`;
}

const encoder = new TextEncoder();

/**
 * open(2).
 * @param path the file
 * @param flags O_* flags
 * @returns the descriptor
 * @throws {Error} naming the file and errno's text
 */
export function openFd(path: string, flags: number): number {
  const fd = libc().symbols.open(encoder.encode(`${path}\0`), flags | O_CLOEXEC);
  if (fd < 0) throw new Error(`open ${path}: ${lastError()}`);
  return fd;
}

/** close(2), ignoring errors (teardown). */
export function closeFd(fd: number): void {
  libc().symbols.close(fd);
}

/**
 * eventfd(2) with a zero counter, close-on-exec.
 * @returns the descriptor
 * @throws {Error} with errno's text
 */
export function createEventfd(): number {
  const fd = libc().symbols.eventfd(0, EFD_CLOEXEC);
  if (fd < 0) throw new Error(`eventfd: ${lastError()}`);
  return fd;
}

/**
 * Writes `text` in one write(2) (cgroup control files take a whole line per write).
 * @param fd an open descriptor
 * @param text what to write
 * @param what the file's name, for errors
 * @throws {Error} naming `what` when the write fails or is short
 */
export function writeText(fd: number, text: string, what: string): void {
  const bytes = encoder.encode(text);
  const n = libc().symbols.write(fd, bytes, BigInt(bytes.length));
  if (Number(n) !== bytes.length) {
    throw new Error(`write ${JSON.stringify(text)} to ${what}: ${n < 0 ? lastError() : "short"}`);
  }
}

/**
 * Adds 1 to an eventfd's counter, which wakes a reader blocked on it.
 * @param fd the eventfd
 */
export function signalEventfd(fd: number): void {
  libc().symbols.write(fd, new BigUint64Array([1n]), 8n);
}

/**
 * Reads an eventfd's counter (8 bytes), blocking a worker thread until it is
 * non-zero; the event loop stays free.
 * @param fd the eventfd
 * @returns the counter, or undefined when the read failed (fd closed or bad)
 */
export async function readEventfd(fd: number): Promise<bigint | undefined> {
  const buf = new BigUint64Array(1);
  const n = await libc().symbols.read(fd, buf, 8n);
  return Number(n) === 8 ? buf[0] : undefined;
}
