/**
 * The benchmarks' readings of a process from /proc: resident memory and CPU
 * time, as every RSS and CPU figure in docs/benchmarks.md is taken.
 *
 * @module
 */

/**
 * The process's RSS and its CPU time so far.
 * @param pid the process
 * @returns VmRSS in bytes and utime + stime in seconds
 */
export function procReading(pid: number): { rssBytes: number; cpuSeconds: number } {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime
  return { rssBytes: rssMb(pid) * 1048576, cpuSeconds: ticks / 100 };
}

/**
 * The process's resident memory.
 * @param pid the process
 * @returns VmRSS in MiB
 */
export function rssMb(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? "0") / 1024;
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
