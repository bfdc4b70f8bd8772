/**
 * Helpers of the probe benchmark (bench/probes.ts): the probed servers, run
 * in a child process so their CPU is not counted as the agent's; the bench
 * pods and the runtime status the sync loop would pass; a clock that knows
 * which timer tick is running, so a probe can be timed from the moment it was
 * due.
 *
 * Run as a script (`deno run --allow-net=127.0.0.1 bench/_probes_fixture.ts`)
 * it is the server: one HTTP port and two TCP ports on 127.0.0.1, announced
 * as a JSON line on stdout; it exits when its stdin closes or on SIGTERM.
 *
 * @module
 */

import type { Pod } from "../lib/api/types.ts";
import type { RuntimePodStatus } from "../lib/kuberuntime/types.ts";
import { type Clock, realClock, type Timer } from "../lib/util/clock.ts";

/** The ports the server child listens on. */
export interface ServerPorts {
  http: number;
  tcp: [number, number];
}

/**
 * Prefix of the HTTP server's response body; the rest is its own time in µs,
 * from the request head being read to the response being ready.
 */
export const SERVER_TIME_PREFIX = "server-us=";

/** The probed servers, running in a child process. */
export interface ProbeServer {
  pid: number;
  ports: ServerPorts;
  /** The child's user + system CPU so far, from /proc (0 where there is none). */
  cpuSeconds(): number;
  /** Stops the child (SIGTERM to its PID) and waits for it. */
  stop(): Promise<void>;
}

/**
 * Starts the servers in a child `deno run` of this file and waits until
 * they listen.
 * @returns the child and its ports
 * @throws {Error} when the child exits or says nothing within 30 s
 */
export async function startProbeServer(): Promise<ProbeServer> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-config", "--allow-net=127.0.0.1", import.meta.filename!],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const timeout = setTimeout(() => child.kill("SIGKILL"), 30_000);
  try {
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`probe server (pid ${child.pid}) exited before it listened`);
      text += value;
    }
  } catch (err) {
    await child.stdin.close().catch(() => {});
    await child.status;
    throw new Error(`probe server (pid ${child.pid}) did not start`, { cause: err });
  } finally {
    clearTimeout(timeout);
  }
  // Keep draining so the child never blocks on a full pipe.
  (async () => {
    while (!(await reader.read().catch(() => ({ done: true }))).done) { /* drain */ }
  })();
  const ports = JSON.parse(text.slice(0, text.indexOf("\n"))) as ServerPorts;
  return {
    pid: child.pid,
    ports,
    cpuSeconds: () => procCpuSeconds(child.pid),
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await child.stdin.close().catch(() => {});
      await child.status;
    },
  };
}

/**
 * A process's user + system CPU from /proc/<pid>/stat.
 * @param pid the process
 * @returns seconds; 0 when /proc cannot be read
 */
export function procCpuSeconds(pid: number): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime in USER_HZ
  } catch {
    return 0;
  }
}

/**
 * How long this process's threads were runnable but waiting for a CPU
 * (/proc/self/task/<tid>/schedstat, second field): the machine's share of a
 * latency, not the agent's.
 * @returns ms so far; 0 where /proc has no schedstat
 */
export function runQueueWaitMs(): number {
  let ns = 0;
  try {
    for (const t of Deno.readDirSync("/proc/self/task")) {
      try {
        ns += Number(Deno.readTextFileSync(`/proc/self/task/${t.name}/schedstat`).split(" ")[1]);
      } catch { /* the thread ended */ }
    }
  } catch {
    return 0;
  }
  return ns / 1e6;
}

/**
 * The machine's CPU pressure: total µs during which some task waited for a
 * CPU (/proc/pressure/cpu, PSI).
 * @returns µs so far; undefined without PSI
 */
export function cpuPressureUs(): number | undefined {
  try {
    const m = /^some .*total=(\d+)/m.exec(Deno.readTextFileSync("/proc/pressure/cpu"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A bench pod: host network, two running containers. `app` has an httpGet
 * readiness probe (by port name) and a tcpSocket liveness probe; `sidecar`
 * a tcpSocket liveness probe on the second TCP port. All at period 10 s and
 * the other defaults. (A startup probe would stop after its first success,
 * so it would not load the steady state: hence the second tcp probe.)
 * @param i the pod's index
 * @param ports the server's ports
 * @returns the pod, as the config sources would hand it over
 */
export function benchPod(i: number, ports: ServerPorts): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `probe-${i}`,
      namespace: "bench",
      uid: `00000000-0000-4000-8000-${i.toString().padStart(12, "0")}`,
    },
    spec: {
      hostNetwork: true,
      restartPolicy: "Always",
      containers: [
        {
          name: "app",
          image: "busybox",
          ports: [{ name: "http", containerPort: ports.http }],
          readinessProbe: { httpGet: { path: `/ready/${i}`, port: "http" }, periodSeconds: 10 },
          livenessProbe: { tcpSocket: { port: ports.tcp[0] }, periodSeconds: 10 },
        },
        {
          name: "sidecar",
          image: "busybox",
          livenessProbe: { tcpSocket: { port: ports.tcp[1] }, periodSeconds: 10 },
        },
      ],
    },
  };
}

/**
 * The runtime status a sync would pass for a bench pod: a ready host-network
 * sandbox and every container running, started a minute ago.
 * @param pod the pod
 * @param now epoch ms
 * @returns the status
 */
export function runningStatus(pod: Pod, now: number): RuntimePodStatus {
  const uid = pod.metadata.uid!;
  const startedAt = now - 60_000;
  return {
    uid,
    name: pod.metadata.name!,
    namespace: pod.metadata.namespace!,
    sandboxes: [{
      id: `sandbox-${uid}`,
      state: "ready",
      attempt: 0,
      createdAt: startedAt - 1000,
      ip: "",
      additionalIps: [],
      hostNetwork: true,
    }],
    containers: pod.spec.containers.map((c) => ({
      id: `${c.name}-${uid}`,
      sandboxId: `sandbox-${uid}`,
      name: c.name,
      state: "running",
      createdAt: startedAt - 100,
      startedAt,
      finishedAt: 0,
      exitCode: 0,
      reason: "",
      message: "",
      image: c.image ?? "",
      imageRef: c.image ?? "",
      restartCount: 0,
      hash: "0",
    })),
  };
}

/** One timer callback as {@link TickClock} saw it (performance.now() ms). */
export interface Tick {
  /** When it was due: the arming time plus the delay, or the previous fire plus the period. */
  due: number;
  /** When its callback began. */
  fired: number;
}

/**
 * The real clock, plus a note of which timer callback is running. A probe
 * worker calls its handler synchronously from its tick, so a handler wrapper
 * that reads {@link TickClock.current} learns when that probe was due.
 * Every timer is the runtime's setTimeout, as realClock's.
 */
export class TickClock implements Clock {
  /** The tick whose callback is running, undefined outside timer callbacks. */
  current: Tick | undefined;

  /** @returns epoch ms, as realClock */
  now(): number {
    return realClock.now();
  }

  /** @returns as realClock */
  monotonic(): number {
    return realClock.monotonic();
  }

  /**
   * @param ms the delay
   * @param signal cancels the sleep
   * @returns as realClock.sleep (not a timer tick)
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return realClock.sleep(ms, signal);
  }

  /**
   * @param fn the callback
   * @param ms the delay
   * @returns the timer
   */
  setTimeout(fn: () => void, ms: number): Timer {
    const due = performance.now() + ms;
    return realClock.setTimeout(() => this.#fire(fn, due), ms);
  }

  /**
   * An interval as chained timeouts armed for `start + k·period` (as Go's
   * ticker, and unlike the runtime's setInterval, which re-arms from each
   * fire and drifts by about a millisecond a tick), so every tick has an
   * exact due time; a tick a whole period late drops the ones it missed.
   * @param fn the callback
   * @param ms the period
   * @returns the timer
   */
  setInterval(fn: () => void, ms: number): Timer {
    let due = performance.now() + ms;
    let timer: Timer;
    const arm = () => {
      // The runtime takes whole milliseconds: rounding keeps the measured lag
      // unbiased (±0.5 ms) where rounding up would add up to 1 ms of our own.
      timer = realClock.setTimeout(() => {
        const thisDue = due;
        const now = performance.now();
        do due += ms; while (due <= now);
        arm(); // before fn: a callback that cancels the timer cancels the next tick
        this.#fire(fn, thisDue);
      }, Math.max(0, Math.round(due - performance.now())));
    };
    arm();
    return { cancel: () => timer.cancel() };
  }

  #fire(fn: () => void, due: number): void {
    this.current = { due, fired: performance.now() };
    try {
      fn();
    } finally {
      this.current = undefined;
    }
  }
}

/** The server: run by {@link startProbeServer}. */
async function serve(): Promise<void> {
  const http = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const tcp = [0, 1].map(() => Deno.listen({ hostname: "127.0.0.1", port: 0 }));
  const encoder = new TextEncoder();
  const handleHttp = async (conn: Deno.Conn) => {
    try {
      const buf = new Uint8Array(8192);
      let got = 0;
      // Read the request head; the probe sends no body.
      while (got < buf.length) {
        const n = await conn.read(buf.subarray(got));
        if (n === null) return;
        got += n;
        if (new TextDecoder().decode(buf.subarray(0, got)).includes("\r\n\r\n")) break;
      }
      const headRead = performance.now();
      // Only the answering is the server's: connect and the request in
      // flight before it are the prober's side, the write is the kernel's.
      const head = `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n`;
      const us = Math.round((performance.now() - headRead) * 1000);
      const body = `${SERVER_TIME_PREFIX}${us}`;
      const res = encoder.encode(`${head}Content-Length: ${body.length}\r\n\r\n${body}`);
      for (let w = 0; w < res.length;) w += await conn.write(res.subarray(w));
    } catch {
      /* the prober hung up: nothing to answer */
    } finally {
      try {
        conn.close();
      } catch { /* closed */ }
    }
  };
  (async () => {
    for await (const conn of http) void handleHttp(conn);
  })();
  for (const l of tcp) {
    (async () => {
      // A tcpSocket probe only needs the handshake, which the kernel completes.
      for await (const conn of l) conn.close();
    })();
  }
  const ports: ServerPorts = {
    http: (http.addr as Deno.NetAddr).port,
    tcp: [(tcp[0]!.addr as Deno.NetAddr).port, (tcp[1]!.addr as Deno.NetAddr).port],
  };
  Deno.addSignalListener("SIGTERM", () => Deno.exit(0));
  await Deno.stdout.write(encoder.encode(JSON.stringify(ports) + "\n"));
  // Exit with the parent: its end of our stdin closes when it goes away.
  for await (const _ of Deno.stdin.readable) { /* nothing is sent */ }
  Deno.exit(0);
}

if (import.meta.main) await serve();
