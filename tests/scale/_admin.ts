/**
 * The scale test's way into the apiserver: HTTPS requests as the cluster admin
 * (the certificate tests/e2e/_cluster.ts made), without a kubectl process per call.
 * A poll every second of the Node, its Lease and hundreds of pods would otherwise
 * spawn kubectl several times a second on a 2-core machine and measure kubectl.
 *
 * @module
 */

import type { Cluster } from "../e2e/_cluster.ts";

/** An admin client of one cluster; `close()` releases its connections. */
export interface AdminApi {
  /**
   * GETs a path (`/api/v1/...`) and parses its JSON.
   * @throws Error naming the path and status when the answer is not 2xx
   */
  get<T>(path: string): Promise<T>;
  /**
   * POSTs a JSON body to a collection path.
   * @throws Error naming the path, status and body when the answer is not 2xx
   */
  post(path: string, body: unknown): Promise<void>;
  /**
   * DELETEs a path (an object or a collection, with its query).
   * @throws Error naming the path and status when the answer is not 2xx
   */
  delete(path: string): Promise<void>;
  close(): void;
}

/**
 * @param cluster the cluster whose admin certificate (under `<dir>/pki`) is used
 * @returns the client
 */
export async function adminApi(cluster: Cluster): Promise<AdminApi> {
  const pki = `${cluster.dir}/pki`;
  const client = Deno.createHttpClient({
    caCerts: [await Deno.readTextFile(`${pki}/ca.crt`)],
    cert: await Deno.readTextFile(`${pki}/admin.crt`),
    key: await Deno.readTextFile(`${pki}/admin.key`),
  });
  const call = async (method: string, path: string, body?: unknown) => {
    const resp = await fetch(`${cluster.apiserverUrl}${path}`, {
      method,
      client,
      signal: AbortSignal.timeout(30_000),
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
    });
    const text = await resp.text();
    if (!resp.ok) throw new Error(`${method} ${path}: ${resp.status} ${text.slice(0, 500)}`);
    return text;
  };
  return {
    async get<T>(path: string) {
      return JSON.parse(await call("GET", path)) as T;
    },
    async post(path, body) {
      await call("POST", path, body);
    },
    async delete(path) {
      await call("DELETE", path);
    },
    close: () => client.close(),
  };
}
