/**
 * `denolet explain <namespace>/<name>`: reads a running agent's sync trace
 * (`/debug/pods/{namespace}/{name}/syncs`) and the last log line of each
 * container that is not running (`/containerLogs/…?tailLines=1`), and prints
 * the answer first, then the timeline (render.ts).
 *
 * Where from: the read-only port on 127.0.0.1 by default
 * (`--read-only-port`, `--address`), or `--server https://host:10250` with
 * `--token`/`--token-file` and `--certificate-authority` (or
 * `--insecure-skip-tls-verify`). The read-only port does not serve container
 * logs (upstream's debugging handlers are off there): the answer then says so.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { realClock } from "../util/clock.ts";
import { errorText } from "../util/log.ts";
import { renderExplanation } from "./render.ts";
import type { PodSyncTrace } from "./types.ts";

/** Usage text of the subcommand. */
export const EXPLAIN_USAGE = `Usage: denolet explain <namespace>/<name> [flags]

Prints why a pod is (not) running, then its last syncs, from a running agent.

Flags:
  --address string               the agent's address (default "127.0.0.1")
  --read-only-port int           the agent's read-only port (default 10255)
  --server string                the agent's secure URL instead, e.g. https://127.0.0.1:10250
  --token string                 bearer token for --server
  --token-file string            file holding the bearer token for --server
  --certificate-authority string CA file to verify --server (e.g. <cert-dir>/kubelet.crt)
  --insecure-skip-tls-verify     do not verify --server's certificate
  --json                         print the trace as JSON instead
  -h, --help                     this help
`;

/** Where and how to reach the agent. */
export interface ExplainTarget {
  /** Base URL without a trailing slash. */
  base: string;
  token?: string;
  caCert?: string;
  insecureSkipVerify?: boolean;
}

/** What the command line asked for. */
export interface ExplainArgs {
  namespace: string;
  name: string;
  target: ExplainTarget;
  json: boolean;
}

/**
 * Parses the subcommand's arguments (those after `explain`).
 * @param argv the arguments
 * @returns the request, or "help"
 * @throws Error naming the bad argument
 */
export async function parseExplainArgs(argv: string[]): Promise<ExplainArgs | "help"> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      address: { type: "string", default: "127.0.0.1" },
      "read-only-port": { type: "string", default: "10255" },
      server: { type: "string" },
      token: { type: "string" },
      "token-file": { type: "string" },
      "certificate-authority": { type: "string" },
      "insecure-skip-tls-verify": { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) return "help";
  const [pod, ...extra] = positionals;
  if (pod === undefined || extra.length > 0) {
    throw new Error("explain takes exactly one pod, as <namespace>/<name>");
  }
  const slash = pod.indexOf("/");
  const namespace = slash > 0 ? pod.slice(0, slash) : "";
  const name = pod.slice(slash + 1);
  if (!namespace || !name || name.includes("/")) {
    throw new Error(`pod "${pod}" is not <namespace>/<name>`);
  }
  let target: ExplainTarget;
  if (values.server) {
    target = { base: values.server.replace(/\/+$/, "") };
    const token = values.token ??
      (values["token-file"] ? (await Deno.readTextFile(values["token-file"])).trim() : undefined);
    if (token) target.token = token;
    if (values["certificate-authority"]) {
      target.caCert = await Deno.readTextFile(values["certificate-authority"]);
    }
    if (values["insecure-skip-tls-verify"]) target.insecureSkipVerify = true;
  } else {
    const port = Number(values["read-only-port"]);
    if (!Number.isInteger(port) || port <= 0 || port > 65535) {
      throw new Error(`--read-only-port=${values["read-only-port"]}: not a port`);
    }
    const host = values.address.includes(":") ? `[${values.address}]` : values.address;
    target = { base: `http://${host}:${port}` };
  }
  return { namespace, name, target, json: values.json };
}

/** A GET against the agent: status and body. */
async function get(target: ExplainTarget, path: string): Promise<[number, string]> {
  const headers: Record<string, string> = target.token
    ? { authorization: `Bearer ${target.token}` }
    : {};
  const url = `${target.base}${path}`;
  if (url.startsWith("https:") && (target.insecureSkipVerify || target.caCert)) {
    // Deno's fetch cannot skip verification; node:https can do both.
    const https = (await import("node:https")).default;
    return await new Promise((resolve, reject) => {
      const req = https.get(url, {
        headers,
        ...(target.caCert ? { ca: target.caCert } : {}),
        rejectUnauthorized: !target.insecureSkipVerify,
      }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve([res.statusCode ?? 0, body]));
        res.on("error", reject);
      });
      req.on("error", reject);
    });
  }
  const resp = await fetch(url, { headers });
  return [resp.status, await resp.text()];
}

/**
 * Reads a pod's trace from the agent.
 * @param args the pod and the agent
 * @returns the trace
 * @throws Error with the agent's answer when it has none
 */
export async function fetchTrace(args: ExplainArgs): Promise<PodSyncTrace> {
  const path = `/debug/pods/${encodeURIComponent(args.namespace)}/${
    encodeURIComponent(args.name)
  }/syncs`;
  const [status, body] = await get(args.target, path);
  if (status !== 200) {
    throw new Error(`${args.target.base}${path} answered ${status}: ${body.trim()}`);
  }
  return JSON.parse(body) as PodSyncTrace;
}

/** The containers the answer is about: those not running in the newest status. */
function notRunning(trace: PodSyncTrace): string[] {
  for (let i = trace.syncs.length - 1; i >= 0; i--) {
    const status = trace.syncs[i]!.status;
    if (status) return status.containers.filter((c) => c.state !== "running").map((c) => c.name);
  }
  return [];
}

/**
 * The last log line of each container not running; the previous instance's
 * when the current one has not written any (a container backing off).
 */
async function lastLogLines(
  args: ExplainArgs,
  trace: PodSyncTrace,
): Promise<{ lines: Map<string, string>; problem?: string }> {
  const lines = new Map<string, string>();
  const pod = `${encodeURIComponent(args.namespace)}/${encodeURIComponent(args.name)}`;
  for (const container of notRunning(trace)) {
    for (const previous of [false, true]) {
      const path = `/containerLogs/${pod}/${encodeURIComponent(container)}?tailLines=1${
        previous ? "&previous=true" : ""
      }`;
      const [status, body] = await get(args.target, path).catch((err) =>
        [0, errorText(err)] as [number, string]
      );
      if (status === 405) {
        return { lines, problem: "not served here (read-only port; use --server)" };
      }
      if (status !== 200) continue;
      const line = body.replace(/\n$/, "").split("\n").at(-1) ?? "";
      if (line) {
        lines.set(container, line);
        break;
      }
    }
  }
  return { lines };
}

/**
 * Runs the subcommand.
 * @param argv the arguments after `explain`
 * @param out where the text goes
 * @returns the exit code
 */
export async function explainMain(
  argv: string[],
  out: (text: string) => void = (t) => Deno.stdout.writeSync(new TextEncoder().encode(t)),
): Promise<number> {
  let args;
  try {
    args = await parseExplainArgs(argv);
  } catch (err) {
    console.error(`denolet explain: ${errorText(err)}\n\n${EXPLAIN_USAGE}`);
    return 2;
  }
  if (args === "help") {
    out(EXPLAIN_USAGE);
    return 0;
  }
  try {
    const trace = await fetchTrace(args);
    if (args.json) {
      out(`${JSON.stringify(trace, null, 2)}\n`);
      return 0;
    }
    const logs = await lastLogLines(args, trace);
    out(renderExplanation(trace, {
      now: realClock.now(),
      lastLogLines: logs.lines,
      ...(logs.problem ? { logProblem: logs.problem } : {}),
    }));
    return 0;
  } catch (err) {
    console.error(`denolet explain: ${errorText(err)}`);
    return 1;
  }
}
