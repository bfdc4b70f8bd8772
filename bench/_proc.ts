/**
 * The benchmarks' readings of a process from /proc: resident memory and CPU
 * time, as every RSS and CPU figure in docs/benchmarks.md is taken.
 *
 * @module
 */

/**
 * The process's /proc/PID/status, read once, as a lookup of its "Key:  N kB" fields.
 * @returns a function giving a field's number (kB for the memory fields), 0 when absent
 */
function statusFields(pid: number): (key: string) => number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return (key) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? "0");
}

/** A process's resident memory and CPU time, from /proc. */
export interface ProcReading {
  /** VmRSS. */
  rssBytes: number;
  /** RssAnon: heap, malloc, stacks: what only swap could take back. */
  anonBytes: number;
  /** RssFile: pages of mapped files (the executable's own), which the kernel can drop. */
  fileBytes: number;
  /** utime + stime so far. */
  cpuSeconds: number;
}

/**
 * The process's RSS and its CPU time so far.
 * @param pid the process
 * @returns the reading
 */
export function procReading(pid: number): ProcReading {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime
  const kib = statusFields(pid);
  return {
    rssBytes: kib("VmRSS") * 1024,
    anonBytes: kib("RssAnon") * 1024,
    fileBytes: kib("RssFile") * 1024,
    cpuSeconds: ticks / 100,
  };
}

/**
 * The process's resident memory.
 * @param pid the process
 * @returns VmRSS in MiB
 */
export function rssMb(pid: number): number {
  return statusFields(pid)("VmRSS") / 1024;
}

/**
 * Samples a process's RSS every `intervalMs` until stopped.
 * @returns `stop()`, which ends the sampling and gives the highest reading in MiB
 */
export function sampleRss(pid: number, intervalMs = 20): { stop(): number } {
  let peak = rssMb(pid);
  const id = setInterval(() => {
    try {
      peak = Math.max(peak, rssMb(pid));
    } catch { /* the process is gone */ }
  }, intervalMs);
  return {
    stop() {
      clearInterval(id);
      return Math.max(peak, rssMb(pid));
    },
  };
}

/** A process's memory as V8 and the kernel see it, in MiB. */
export interface MemoryReading {
  /** VmRSS. */
  rss: number;
  /** RssAnon: heap pages, malloc, stacks. */
  anon: number;
  /** RssFile: mapped files (the deno binary's pages). */
  file: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  /** V8's old space: pages held, and bytes of objects in them. */
  oldSpace: number;
  oldSpaceUsed: number;
}

/**
 * Reads a Deno process's own memory (call it in that process).
 * @param pid the process (`Deno.pid`)
 * @param usage `Deno.memoryUsage()`
 * @param oldSpace node:v8's old_space size and used bytes
 * @returns the reading in MiB
 */
export function memoryReading(
  pid: number,
  usage: Deno.MemoryUsage,
  oldSpace: { size: number; used: number },
): MemoryReading {
  const kb = statusFields(pid);
  const mb = (bytes: number) => bytes / 1048576;
  return {
    rss: kb("VmRSS") / 1024,
    anon: kb("RssAnon") / 1024,
    file: kb("RssFile") / 1024,
    heapTotal: mb(usage.heapTotal),
    heapUsed: mb(usage.heapUsed),
    external: mb(usage.external),
    oldSpace: mb(oldSpace.size),
    oldSpaceUsed: mb(oldSpace.used),
  };
}
