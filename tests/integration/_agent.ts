/**
 * Runs denolet as a real subprocess, exactly as `deno task run` does (the
 * task's permission set and runtime flags, from tools/run_task.ts), against a
 * test runtime, and reads its `/pods`.
 *
 * @module
 */

import type { Pod } from "../../lib/api/types.ts";
import type { TestRuntime } from "../harness/mod.ts";
import { unmountUnder } from "../harness/mounts.ts";
import { runTaskOptions } from "../../tools/run_task.ts";
import { freePort, waitFor } from "../kit/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** A running agent. */
export interface AgentProcess {
  /** The agent's PID (for RSS/CPU readings). */
  pid: number;
  manifestDir: string;
  rootDir: string;
  readOnlyPort: number;
  healthzPort: number;
  /** The secure port (`--port`), TLS; its self-signed certificate is under `<rootDir>/pki`. */
  port: number;
  /** Everything the agent logged so far. */
  log(): string;
  /** How the agent exited ("exited with code 1"), or undefined while it runs. */
  exited(): string | undefined;
  /** GET /pods. */
  pods(): Promise<Pod[]>;
  /** GET /healthz → [status, body]. */
  healthz(): Promise<[number, string]>;
  /** Sends a signal and waits for exit. */
  stop(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
  /**
   * Unmounts what the agent left mounted under its dirs (pod volumes stay mounted when an
   * agent exits, as upstream's do) and removes the manifest and root dirs (after the runtime
   * is stopped).
   */
  removeDirs(): Promise<void>;
}

/** Options for {@link startAgent}. */
export interface StartAgentOptions {
  runtime: TestRuntime;
  /** Reuse dirs (for restarts); fresh temp dirs otherwise. */
  manifestDir?: string;
  rootDir?: string;
  extraArgs?: string[];
  /** More `deno run` options, after the task's own (e.g. `--inspect=…` for a heap snapshot). */
  runtimeArgs?: string[];
  /** The program `deno run` runs: main.ts by default, or the bundle (tools/bundle.ts). */
  program?: string;
}

/**
 * Starts the agent with the project's permission set.
 * @param opts the runtime and dirs
 * @returns the process handle once /healthz answers
 */
export async function startAgent(opts: StartAgentOptions): Promise<AgentProcess> {
  const manifestDir = opts.manifestDir ?? await Deno.makeTempDir({ prefix: "denolet-manifests-" });
  const rootDir = opts.rootDir ?? await Deno.makeTempDir({ prefix: "denolet-root-" });
  const readOnlyPort = freePort();
  const healthzPort = freePort();
  // Never the host's 10250 or /var/lib/kubelet/pki: agents of several tests run at once.
  const port = freePort();
  const args = [
    "run",
    ...runTaskOptions(),
    ...(opts.runtimeArgs ?? []),
    "--quiet",
    opts.program ?? `${ROOT}main.ts`,
    `--pod-manifest-path=${manifestDir}`,
    `--container-runtime-endpoint=${opts.runtime.endpoint}`,
    `--root-dir=${rootDir}`,
    `--pod-logs-dir=${rootDir}/logs`,
    `--cgroup-root=${opts.runtime.cgroupParent}`,
    "--hostname-override=testnode",
    "--address=127.0.0.1",
    `--read-only-port=${readOnlyPort}`,
    `--healthz-port=${healthzPort}`,
    `--port=${port}`,
    `--cert-dir=${rootDir}/pki`,
    "--file-check-frequency=2s",
    "--housekeeping-interval=1s",
    "--v=4",
    ...(opts.extraArgs ?? []),
  ];
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  let output = "";
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) output += decoder.decode(chunk, { stream: true });
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  let exited: string | undefined;
  child.status.then((status) => (exited = `exited with code ${status.code}`));

  const base = `http://127.0.0.1:${readOnlyPort}`;
  const agent: AgentProcess = {
    pid: child.pid,
    manifestDir,
    rootDir,
    readOnlyPort,
    healthzPort,
    port,
    log: () => output,
    exited: () => exited,
    async pods() {
      const resp = await fetch(`${base}/pods`);
      if (!resp.ok) throw new Error(`/pods answered ${resp.status}`);
      return (await resp.json()).items as Pod[];
    },
    async healthz() {
      const resp = await fetch(`http://127.0.0.1:${healthzPort}/healthz`);
      return [resp.status, await resp.text()];
    },
    async stop(signal: Deno.Signal = "SIGTERM") {
      try {
        child.kill(signal);
      } catch {
        // already exited
      }
      const status = await child.status;
      await pumps;
      return status;
    },
    async removeDirs() {
      for (const d of [manifestDir, rootDir]) {
        await unmountUnder(d);
        await Deno.remove(d, { recursive: true }).catch(() => {});
      }
    },
  };
  try {
    await waitFor("the agent answering GET /pods", () => agent.pods(), {
      timeoutMs: 60_000,
      intervalMs: 200,
      giveUp: () => exited,
      log: () => output,
    });
  } catch (err) {
    await agent.stop("SIGKILL");
    // The dirs made here go with it; the caller's own are the caller's.
    for (const [given, made] of [[opts.manifestDir, manifestDir], [opts.rootDir, rootDir]]) {
      if (given === undefined) {
        await unmountUnder(made!);
        await Deno.remove(made!, { recursive: true }).catch(() => {});
      }
    }
    throw new Error(`agent did not come up: ${(err as Error).message}`, { cause: err });
  }
  return agent;
}

/** A static pod manifest (YAML) for a busybox pod. */
export function podManifest(opts: {
  name: string;
  image: string;
  command: string[];
  restartPolicy?: "Always" | "OnFailure" | "Never";
  grace?: number;
  hostNetwork?: boolean;
  containers?: { name: string; command: string[] }[];
}): string {
  const containers = opts.containers ?? [{ name: "main", command: opts.command }];
  return JSON.stringify(
    {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: opts.name, namespace: "default" },
      spec: {
        hostNetwork: opts.hostNetwork ?? true,
        restartPolicy: opts.restartPolicy ?? "Always",
        terminationGracePeriodSeconds: opts.grace ?? 5,
        containers: containers.map((c) => ({
          name: c.name,
          image: opts.image,
          imagePullPolicy: "Never",
          command: c.command,
        })),
      },
    },
    null,
    2,
  );
}

/** The pod named `name` (static pods are suffixed with the node name). */
export function findPod(pods: Pod[], name: string): Pod | undefined {
  return pods.find((p) => p.metadata.name === `${name}-testnode`);
}
