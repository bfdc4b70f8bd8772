/**
 * A private image registry on loopback: Debian's docker-registry (distribution 2.8)
 * with a config and storage of its own in a temporary directory, over plain http;
 * optionally behind htpasswd basic auth (for the imagePullSecrets tests).
 *
 * @module
 */

import { which } from "../../tests/harness/_exec.ts";
import { httpOk, type Proc, spawn, stopProc, waitReady } from "../../tests/e2e/_procs.ts";
import { freePort } from "../../tests/kit/mod.ts";

/** A running registry. */
export interface Registry {
  /** `127.0.0.1:<port>`, as image names start with it. */
  host: string;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Stops the registry and removes its storage; idempotent. */
  stop(): Promise<void>;
}

/** Options for {@link startRegistry}. */
export interface RegistryOptions {
  /**
   * The lines of an htpasswd file (`user:<bcrypt hash>`, as `htpasswd -nbB` prints
   * them): every request then needs one of these users.
   */
  htpasswd?: string;
}

/**
 * Starts docker-registry on a free loopback port and waits until it answers `/v2/`
 * (401 when it asks for credentials).
 *
 * @throws Error when docker-registry is missing, or with its log's tail when it does
 *   not come up
 */
export async function startRegistry(opts: RegistryOptions = {}): Promise<Registry> {
  const bin = which("docker-registry");
  if (bin === undefined) {
    throw new Error("conformance: docker-registry not found (apt-get install docker-registry)");
  }
  const dir = await Deno.makeTempDir({ prefix: "denolet-registry-" });
  const port = freePort();
  const host = `127.0.0.1:${port}`;
  const config = `${dir}/config.yml`;
  const auth: string[] = [];
  if (opts.htpasswd !== undefined) {
    await Deno.writeTextFile(`${dir}/htpasswd`, opts.htpasswd.trim() + "\n");
    auth.push("auth:", "  htpasswd:", "    realm: denolet-test", `    path: ${dir}/htpasswd`);
  }
  await Deno.writeTextFile(
    config,
    [
      "version: 0.1",
      "log:",
      "  level: warn",
      "storage:",
      "  filesystem:",
      `    rootdirectory: ${dir}/storage`,
      "  delete:",
      "    enabled: true",
      "http:",
      `  addr: ${host}`,
      ...auth,
    ].join("\n") + "\n",
  );
  const proc: Proc = { name: "docker-registry", bin, args: ["serve", config], log: `${dir}/log` };
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await stopProc(proc, dir, 5_000);
    await Deno.remove(dir, { recursive: true });
  };
  try {
    await spawn(proc);
    await waitReady(
      proc,
      Date.now() + 30_000,
      opts.htpasswd === undefined
        ? () => httpOk(`http://${host}/v2/`, /^\{\}$/)
        : () => answers401(`http://${host}/v2/`),
    );
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
  return { host, url: `http://${host}`, stop };
}

/** True once `url` answers 401 (a registry that wants credentials is up). */
async function answers401(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await res.body?.cancel();
    return res.status === 401;
  } catch {
    return false;
  }
}
