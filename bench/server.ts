/**
 * The secure port's benchmark (issue 13's performance targets), in one run:
 *
 * 1. `/containerLogs/...?follow=true` of a container that wrote 100 MiB to
 *    stdout through containerd (its CRI log file is larger: each line gets a
 *    timestamp, stream and tag), read over TLS with a client certificate;
 *    throughput and the agent's RSS growth while it streams.
 *    Target ≥ 100 MB/s, RSS growth ≤ 10 MB.
 * 2. 20 concurrent exec sessions each echoing 1 MiB through `cat`, through the
 *    agent's `/exec` and straight to containerd's streaming server (the URL of
 *    CRI Exec), with the same WebSocket client (bench/_ws_channel.ts), rounds
 *    alternating; the agent's RSS before, at its peak and after.
 * 3. The authn/authz caches (bench/_auth_cache.ts).
 *
 * The agent authenticates the bench as the apiserver would reach it: a client
 * certificate of a CA made here (`authentication.x509.clientCAFile`; anonymous
 * and webhook off) and `authorization.mode: AlwaysAllow`. Upstream's flag
 * defaults (anonymous, AlwaysAllow) would serve too; the certificate keeps the
 * TLS client authentication in the measured path.
 *
 * `deno run -A bench/server.ts` prints the markdown lines (needs root and, for
 * part 3, the binaries of tools/e2e/build.sh); bench/mod.ts calls
 * {@link runServerBench}.
 *
 * @module
 */

import { join } from "node:path";
import { createRuntimeService, type RuntimeService } from "../lib/cri/mod.ts";
import { startTestRuntime } from "../tests/harness/mod.ts";
import { findPod, podManifest, startAgent } from "../tests/integration/_agent.ts";
import { makeCert, writeCa } from "../tests/e2e/_pki.ts";
import { delay, waitFor } from "../tests/kit/mod.ts";
import { runAuthCacheBench } from "./_auth_cache.ts";
import { percentile } from "./_percentile.ts";
import { procReading, rssMb, sampleRss } from "./_proc.ts";
import { ChannelSocket, type ClientTls } from "./_ws_channel.ts";

const MiB = 1048576;
/** What the logging container writes: 100 MiB of 100-byte lines. */
const LOG_CONTENT_BYTES = 100 * MiB;
const LOG_RUNS = 3;
const EXEC_SESSIONS = 20;
const EXEC_BYTES = MiB;
const EXEC_ROUNDS = 3;
/** Sessions per path run one at a time after the concurrent rounds. */
const ALONE_SESSIONS = 5;
/** kubectl's stdin copy buffer is 32 KiB. */
const STDIN_CHUNK = 32 * 1024;
const STDIN = 0, STDOUT = 1;

/** The line the logging container ends its output with. */
const LOG_END = "log-bench-done\n";

function mb(bytes: number): string {
  return (bytes / 1e6).toFixed(1);
}

/** Runs parts 1 and 2 on one agent and runtime. */
async function runStreamingParts(): Promise<string[]> {
  const scratch = await Deno.makeTempDir({ prefix: "denolet-bench-server-" });
  const pki = join(scratch, "pki");
  await Deno.mkdir(pki);
  await writeCa(pki);
  await makeCert(pki, "serving", {
    subject: "/CN=testnode",
    usage: "serverAuth",
    sans: ["IP:127.0.0.1"],
  });
  await makeCert(pki, "client", { subject: "/O=system:masters/CN=kube-apiserver-kubelet-client" });
  const tls: ClientTls = {
    caCert: await Deno.readTextFile(join(pki, "ca.crt")),
    cert: await Deno.readTextFile(join(pki, "client.crt")),
    key: await Deno.readTextFile(join(pki, "client.key")),
  };
  const config = join(scratch, "kubelet.json");
  await Deno.writeTextFile(
    config,
    JSON.stringify({
      apiVersion: "kubelet.config.k8s.io/v1beta1",
      kind: "KubeletConfiguration",
      tlsCertFile: join(pki, "serving.crt"),
      tlsPrivateKeyFile: join(pki, "serving.key"),
      authentication: {
        x509: { clientCAFile: join(pki, "ca.crt") },
        anonymous: { enabled: false },
        webhook: { enabled: false },
      },
      authorization: { mode: "AlwaysAllow" },
      // One file for the whole log: rotation is not what this measures.
      containerLogMaxSize: "1Gi",
    }),
  );
  const rt = await startTestRuntime({ name: "bench-server" });
  const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 60_000 });
  const agent = await startAgent({
    runtime: rt,
    extraArgs: [`--config=${config}`, "--v=0", "--file-check-frequency=20s"],
  });
  const lines: string[] = [];
  try {
    const line = "x".repeat(99);
    const pods = {
      logger: [
        "sh",
        "-c",
        `yes ${line} | head -c ${LOG_CONTENT_BYTES}; printf '${LOG_END}'; exec sleep 3600`,
      ],
      sink: ["sleep", "3600"],
    };
    for (const [name, command] of Object.entries(pods)) {
      await Deno.writeTextFile(
        join(agent.manifestDir, `${name}.json`),
        podManifest({ name, image: rt.images.busybox, command, grace: 1 }),
      );
    }
    const ids = await waitFor("both pods running", async () => {
      const all = await agent.pods();
      const running = Object.keys(pods).map((n) => {
        const cs = findPod(all, n)?.status?.containerStatuses?.[0];
        return cs?.state.running ? cs.containerID?.replace(/^[^:]*:\/\//, "") : undefined;
      });
      return running.every((x) => x) ? running as string[] : undefined;
    }, { timeoutMs: 60_000, log: agent.log });
    const [loggerId, sinkId] = ids as [string, string];
    const logPath = (await cri.containerStatus(loggerId)).status.logPath;
    const logBytes = await waitFor("the 100 MiB log written", async () => {
      const st = await Deno.stat(logPath);
      const f = await Deno.open(logPath);
      try {
        const tail = new Uint8Array(64);
        await f.seek(-tail.length, Deno.SeekMode.End);
        await f.read(tail);
        return new TextDecoder().decode(tail).endsWith(LOG_END) ? st.size : undefined;
      } finally {
        f.close();
      }
    }, { timeoutMs: 180_000, intervalMs: 500 });
    lines.push(...await followBench(agent.port, agent.pid, tls, logBytes));
    lines.push(...await execBench(agent.port, agent.pid, tls, cri, sinkId));
  } finally {
    await agent.stop("SIGTERM");
    cri.close();
    await rt.stop();
    await agent.removeDirs();
    await Deno.remove(scratch, { recursive: true }).catch(() => {});
  }
  return lines;
}

/** Part 1: follows the log from its start until its last line arrives, {@link LOG_RUNS} times. */
async function followBench(
  port: number,
  pid: number,
  tls: ClientTls,
  logBytes: number,
): Promise<string[]> {
  const client = Deno.createHttpClient({ caCerts: [tls.caCert], cert: tls.cert, key: tls.key });
  const url = `https://127.0.0.1:${port}/containerLogs/default/logger-testnode/main?follow=true`;
  const want = LOG_CONTENT_BYTES + LOG_END.length;
  const rows: string[] = [];
  let met = true;
  try {
    for (let run = 1; run <= LOG_RUNS; run++) {
      await delay(3000); // let the previous run's garbage go, so the baseline is a resting one
      const before = rssMb(pid);
      const cpu0 = procReading(pid).cpuSeconds;
      const sampler = sampleRss(pid);
      const t0 = performance.now();
      const resp = await fetch(url, { client });
      if (resp.status !== 200) throw new Error(`${url}: ${resp.status} ${await resp.text()}`);
      const reader = resp.body!.getReader();
      let got = 0;
      while (got < want) {
        const { done, value } = await reader.read();
        if (done) break;
        got += value.length;
      }
      const seconds = (performance.now() - t0) / 1000;
      const cpu = procReading(pid).cpuSeconds - cpu0;
      const peak = sampler.stop();
      await reader.cancel();
      if (got < want) throw new Error(`the follow ended after ${got} of ${want} bytes`);
      const rate = got / 1e6 / seconds;
      const growth = peak - before;
      met &&= rate >= 100 && growth <= 10;
      rows.push(
        `| ${run} | ${seconds.toFixed(2)} s | ${rate.toFixed(0)} MB/s | ${
          (logBytes / 1e6 / seconds).toFixed(0)
        } MB/s | ${cpu.toFixed(2)} s (${(got / 1e6 / cpu).toFixed(0)} MB/s) | ${
          before.toFixed(1)
        } MB | ${peak.toFixed(1)} MB | ${growth.toFixed(1)} MB |`,
      );
    }
  } finally {
    client.close();
  }
  return [
    `### /containerLogs?follow=true of a ${mb(logBytes)} MB CRI log file (${
      mb(want)
    } MB of content), over TLS with a client certificate`,
    "",
    "| run | time to the last line | content rate | file rate | agent CPU (content per CPU-second) | agent RSS before | peak | growth |",
    "|---|---|---|---|---|---|---|---|",
    ...rows,
    "",
    `Target ≥ 100 MB/s (content delivered) with RSS growth ≤ 10 MB: ${
      met ? "met in every run" : "missed"
    }.`,
    "",
  ];
}

/**
 * One exec session: connects, sends {@link EXEC_BYTES} through `cat` and
 * waits until all of it came back.
 * @returns ms from the connect (the CRI Exec call included, for the direct path) to the last byte
 */
async function echoSession(open: () => Promise<URL>, tls: ClientTls | undefined): Promise<number> {
  const t0 = performance.now();
  const url = await open();
  let back = 0;
  let resolveAll!: () => void;
  const all = new Promise<void>((r) => (resolveAll = r));
  const socket = await ChannelSocket.open({
    url,
    protocols: ["v5.channel.k8s.io", "v4.channel.k8s.io"],
    ...(tls ? { tls } : {}),
    onMessage: (channel, payload) => {
      if (channel !== STDOUT) return;
      back += payload.length;
      if (back >= EXEC_BYTES) resolveAll();
    },
  });
  const data = crypto.getRandomValues(new Uint8Array(STDIN_CHUNK));
  const sends: Promise<void>[] = [];
  for (let sent = 0; sent < EXEC_BYTES; sent += STDIN_CHUNK) {
    sends.push(socket.send(STDIN, data.subarray(0, Math.min(STDIN_CHUNK, EXEC_BYTES - sent))));
  }
  await Promise.race([
    all,
    // A failed write ends the session with its error.
    Promise.all(sends).then(() => all),
    socket.done.then(() => {
      throw new Error(`${url.pathname}: closed after ${back} of ${EXEC_BYTES} bytes`);
    }),
  ]);
  const ms = performance.now() - t0;
  await socket.close();
  return ms;
}

/** Part 2: rounds of {@link EXEC_SESSIONS} concurrent sessions, direct and through the agent. */
async function execBench(
  port: number,
  pid: number,
  tls: ClientTls,
  cri: RuntimeService,
  containerId: string,
): Promise<string[]> {
  const direct = () =>
    cri.exec(containerId, { cmd: ["cat"], tty: false, stdin: true, stdout: true, stderr: false })
      .then((u) => new URL(u));
  const viaAgent = () =>
    Promise.resolve(
      new URL(
        `https://127.0.0.1:${port}/exec/default/sink-testnode/main?command=cat&input=1&output=1`,
      ),
    );
  const round = (open: () => Promise<URL>, withTls: boolean) =>
    Promise.all(
      Array.from({ length: EXEC_SESSIONS }, () => echoSession(open, withTls ? tls : undefined)),
    );
  // Warm both paths once (containerd's first exec, the agent's TLS), untimed.
  await round(direct, false);
  await round(viaAgent, true);
  await delay(10_000);
  const before = rssMb(pid);
  const fdsBefore = openFds(pid);
  const directMs: number[] = [];
  const agentMs: number[] = [];
  let peak = before;
  for (let r = 0; r < EXEC_ROUNDS; r++) {
    directMs.push(...await round(direct, false));
    const sampler = sampleRss(pid);
    agentMs.push(...await round(viaAgent, true));
    peak = Math.max(peak, sampler.stop());
  }
  // The agent's runtime flags start V8's memory reducer 2 s after a burst, and
  // it trims malloc's free memory every 10 s: read RSS 10 s and 30 s after.
  await delay(10_000);
  const after = rssMb(pid);
  await delay(20_000);
  const later = rssMb(pid);
  const fdsAfter = openFds(pid);
  // For scale: one session at a time, what each path costs without the crowd.
  const aloneDirect: number[] = [];
  const aloneAgent: number[] = [];
  for (let i = 0; i < ALONE_SESSIONS; i++) {
    aloneDirect.push(await echoSession(direct, undefined));
    aloneAgent.push(await echoSession(viaAgent, tls));
  }
  const row = (name: string, ms: number[]) =>
    `| ${name} | ${percentile(ms, 50).toFixed(0)} ms | ${percentile(ms, 95).toFixed(0)} ms |`;
  const added = (p: number) => (percentile(agentMs, p) - percentile(directMs, p)).toFixed(0);
  return [
    `### ${EXEC_SESSIONS} concurrent exec sessions echoing ${
      EXEC_BYTES / MiB
    } MiB each through \`cat\` (${EXEC_ROUNDS} rounds per path, alternating; ${
      EXEC_SESSIONS * EXEC_ROUNDS
    } sessions each)`,
    "",
    "Per session: connect (for the direct path, the CRI Exec call first) → the last echoed byte.",
    "",
    "| path | p50 | p95 |",
    "|---|---|---|",
    row("containerd's streaming server, straight (plain HTTP, URL from CRI Exec)", directMs),
    row("denolet's /exec on the secure port (TLS, client certificate, proxied)", agentMs),
    `| added by the agent | ${added(50)} ms | ${added(95)} ms |`,
    "",
    `One session at a time (${ALONE_SESSIONS} per path, alternating), p50: straight ${
      percentile(aloneDirect, 50).toFixed(0)
    } ms, through the agent ${percentile(aloneAgent, 50).toFixed(0)} ms.`,
    "",
    `Agent RSS: ${before.toFixed(1)} MB before, ${peak.toFixed(1)} MB at the peak, ${
      after.toFixed(1)
    } MB 10 s and ${later.toFixed(1)} MB 30 s after the last concurrent session (${
      (later - before).toFixed(1)
    } MB from before); open file descriptors ${fdsBefore} before, ${fdsAfter} after.`,
    "",
  ];
}

function openFds(pid: number): number {
  return [...Deno.readDirSync(`/proc/${pid}/fd`)].length;
}

/**
 * Runs the benchmark.
 * @returns markdown lines for docs/benchmarks.md
 */
export async function runServerBench(): Promise<string[]> {
  return [...await runStreamingParts(), ...await runAuthCacheBench()];
}

if (import.meta.main) {
  console.log((await runServerBench()).join("\n"));
}
