/**
 * A TLS-terminating proxy between the agent and kube-apiserver that misbehaves on
 * purpose: with seeded randomness it answers some requests itself with 409 Conflict
 * (status and Lease writes), 429 Too Many Requests (`Retry-After: 1`) or 500, and cuts
 * watch streams mid-stream, cleanly or with a reset. What it picks per request is
 * ./_api_faults.ts.
 *
 * It serves a certificate of the cluster CA for 127.0.0.1 (the agent's kubeconfig
 * trusts that CA already) and forwards as the node: its own client certificate with
 * the node's identity (CN=system:node:<node>, O=system:nodes), so the Node authorizer
 * and NodeRestriction judge every forwarded request as they would the agent's. The
 * agent's own client certificate is not checked; the proxy listens on loopback only.
 *
 * {@link ApiProxy.pause} stops listening and closes every connection, so while the test
 * has the apiserver stopped the agent meets a refused port, as it would without the
 * proxy; {@link ApiProxy.resume} listens again on the same port.
 *
 * The draws follow the order requests arrive in, which the agent's timing decides:
 * a seed fixes the rates and the sequence of choices, not which request gets which.
 *
 * ```ts
 * const proxy = await startApiProxyFor(cluster, NODE, seededRandom(seed));
 * // point the agent's kubeconfig at proxy.url, then:
 * proxy.setFaults({ ...NO_FAULTS, tooMany: 0.05, watchCut: 0.5 });
 * ```
 *
 * @module
 */

import { freePort } from "../kit/mod.ts";
import type { Cluster } from "../e2e/_cluster.ts";
import { makeCert } from "../e2e/_pki.ts";
import {
  chooseFault,
  classifyRequest,
  type CuttableStream,
  cuttableStream,
  type FaultRates,
  NO_FAULTS,
  statusBody,
} from "./_api_faults.ts";

/** How many requests the proxy saw and what it did to them. */
export interface ProxyCounts {
  requests: number;
  watches: number;
  conflicts: number;
  tooMany: number;
  serverErrors: number;
  /** 500s answered after the request had reached the apiserver. */
  serverErrorsAfterForward: number;
  watchCuts: number;
  /** Requests the apiserver could not be reached for (answered 502). */
  upstreamErrors: number;
}

/** Options of {@link startApiProxy}. */
export interface ApiProxyOptions {
  /** The apiserver, `https://127.0.0.1:<port>`. */
  upstream: string;
  /** PEM: the CA the apiserver's certificate is checked against. */
  caCert: string;
  /** PEM certificate and key the proxy serves. */
  serverCert: string;
  serverKey: string;
  /** PEM certificate and key the proxy forwards with. */
  clientCert: string;
  clientKey: string;
  /** The seeded source of every choice. */
  random: () => number;
  /** The rates to start with (default {@link NO_FAULTS}). */
  faults?: FaultRates;
}

/** A running proxy. */
export interface ApiProxy {
  /** `https://127.0.0.1:<port>`: what the agent's kubeconfig names. */
  readonly url: string;
  /**
   * Cuts every watch stream open now, each cleanly or abruptly by a seeded draw.
   * @returns how many were cut
   */
  cutWatches(): number;
  /** Replaces the fault rates for the requests that come next. */
  setFaults(rates: FaultRates): void;
  /** A copy of the counts so far. */
  counts(): ProxyCounts;
  /** Stops listening and closes every connection and upstream request; idempotent. */
  pause(): Promise<void>;
  /** Listens again on the same port. */
  resume(): void;
  /** Pauses for good and closes the upstream client. */
  stop(): Promise<void>;
}

// Hop-by-hop headers, and those fetch has already acted on (it decompresses bodies).
const DROPPED_HEADERS = [
  "connection",
  "keep-alive",
  "transfer-encoding",
  "content-length",
  "content-encoding",
  "host",
  "accept-encoding",
];

/**
 * Starts the proxy on a free loopback port.
 * @param opts upstream, certificates, randomness and first rates
 * @returns the running proxy
 */
export function startApiProxy(opts: ApiProxyOptions): ApiProxy {
  const port = freePort();
  const client = Deno.createHttpClient({
    caCerts: [opts.caCert],
    cert: opts.clientCert,
    key: opts.clientKey,
  });
  let rates = opts.faults ?? NO_FAULTS;
  const counts: ProxyCounts = {
    requests: 0,
    watches: 0,
    conflicts: 0,
    tooMany: 0,
    serverErrors: 0,
    serverErrorsAfterForward: 0,
    watchCuts: 0,
    upstreamErrors: 0,
  };
  const inflight = new Set<AbortController>();
  const watches = new Set<CuttableStream>();
  let stopped = false;

  const forward = async (req: Request, url: URL, signal: AbortSignal): Promise<Response> => {
    const headers = new Headers(req.headers);
    for (const h of DROPPED_HEADERS) headers.delete(h);
    const body = req.method === "GET" || req.method === "HEAD"
      ? undefined
      : await req.arrayBuffer();
    const res = await fetch(`${opts.upstream}${url.pathname}${url.search}`, {
      method: req.method,
      headers,
      redirect: "manual",
      signal,
      client,
      ...(body === undefined ? {} : { body }),
    });
    const out = new Headers(res.headers);
    for (const h of DROPPED_HEADERS) out.delete(h);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers: out });
  };

  const handle = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const kind = classifyRequest(req.method, url);
    const fault = chooseFault(kind, req.method, rates, opts.random);
    counts.requests++;
    if (kind === "watch") counts.watches++;
    const what = `${req.method} ${url.pathname}`;
    const ended = new AbortController();
    inflight.add(ended);
    // Not req.signal: Deno.serve aborts it once a response is returned, while a watch's
    // body still streams. A client that goes away cancels the body, which cancels upstream.
    const signal = ended.signal;
    const release = () => inflight.delete(ended);
    try {
      if (fault.kind === "status") {
        if (fault.afterForward) {
          const res = await forward(req, url, signal);
          await res.body?.cancel();
          counts.serverErrorsAfterForward++;
        }
        if (fault.status === 409) counts.conflicts++;
        else if (fault.status === 429) counts.tooMany++;
        else counts.serverErrors++;
        release();
        return new Response(statusBody(fault.status, what), {
          status: fault.status,
          headers: {
            "Content-Type": "application/json",
            ...(fault.status === 429 ? { "Retry-After": "1" } : {}),
          },
        });
      }
      const res = await forward(req, url, signal);
      if (res.body === null) {
        release();
        return res;
      }
      if (kind !== "watch") return new Response(releasing(res.body, release), res);
      const watch = cuttableStream(res.body);
      watches.add(watch);
      let timer: ReturnType<typeof setTimeout> | undefined;
      if (fault.kind === "cut") {
        timer = setTimeout(() => {
          if (watch.cut(fault.abrupt)) counts.watchCuts++;
        }, fault.afterMs);
      }
      watch.over.then(() => {
        clearTimeout(timer);
        watches.delete(watch);
      });
      return new Response(releasing(watch.stream, release), res);
    } catch (err) {
      release();
      counts.upstreamErrors++;
      return new Response(`fault proxy: ${what}: ${err}`, { status: 502 });
    }
  };

  // The TLS server listens on a port of its own; the agent's port is a plain TCP relay
  // in front of it, so a pause can close every connection at once (Deno.serve's own
  // shutdown waits for clients to hang up, and the agent's client keeps its connection).
  const innerPort = freePort();
  const inner = Deno.serve({
    hostname: "127.0.0.1",
    port: innerPort,
    cert: opts.serverCert,
    key: opts.serverKey,
    onListen: () => {},
    onError: (err) => new Response(`fault proxy: ${err}`, { status: 502 }),
  }, handle);
  let listener: Deno.Listener | undefined;
  const conns = new Set<Deno.Conn>();
  const close = (conn: Deno.Conn) => {
    conns.delete(conn);
    try {
      conn.close();
    } catch {
      // Already closed by the other direction.
    }
  };
  const relay = async (conn: Deno.Conn) => {
    conns.add(conn);
    let up: Deno.Conn | undefined;
    try {
      up = await Deno.connect({ hostname: "127.0.0.1", port: innerPort });
      conns.add(up);
      await Promise.all([
        conn.readable.pipeTo(up.writable),
        up.readable.pipeTo(conn.writable),
      ]);
    } catch {
      // A reset or a pause: the connection is over either way.
    } finally {
      close(conn);
      if (up !== undefined) close(up);
    }
  };
  const listen = () => {
    const l = Deno.listen({ hostname: "127.0.0.1", port });
    listener = l;
    (async () => {
      try {
        for await (const conn of l) relay(conn);
      } catch {
        // The listener was closed by a pause.
      }
    })();
  };
  listen();

  const pause = () => {
    try {
      listener?.close();
    } catch {
      // Already closed.
    }
    listener = undefined;
    for (const conn of [...conns]) close(conn);
    for (const c of inflight) c.abort(new Error("fault proxy paused"));
    inflight.clear();
    return Promise.resolve();
  };

  return {
    url: `https://127.0.0.1:${port}`,
    setFaults(next) {
      rates = next;
    },
    counts: () => ({ ...counts }),
    cutWatches() {
      let cut = 0;
      for (const watch of [...watches]) {
        if (watch.cut(opts.random() < 0.5)) cut++;
      }
      counts.watchCuts += cut;
      return cut;
    },
    pause,
    resume() {
      if (stopped) throw new Error("fault proxy: resume after stop");
      if (listener === undefined) listen();
    },
    async stop() {
      stopped = true;
      await pause();
      await inner.shutdown();
      client.close();
    },
  };
}

/** `body`, calling `release` once it ends, fails or is cancelled. */
function releasing(
  body: ReadableStream<Uint8Array>,
  release: () => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          release();
          controller.close();
        } else controller.enqueue(value);
      } catch (err) {
        release();
        controller.error(err);
      }
    },
    cancel(reason) {
      release();
      return reader.cancel(reason);
    },
  });
}

/**
 * A proxy in front of `cluster`'s apiserver, forwarding as node `node`: makes its
 * serving certificate (127.0.0.1) and its client certificate with the cluster CA.
 * @param cluster the running control plane
 * @param node the node whose identity the proxy forwards with
 * @param random the seeded source of every choice
 * @returns the running proxy, with no faults on yet
 */
export async function startApiProxyFor(
  cluster: Cluster,
  node: string,
  random: () => number,
): Promise<ApiProxy> {
  const pki = `${cluster.dir}/pki`;
  await makeCert(pki, "fault-proxy", {
    subject: "/CN=denolet-fault-proxy",
    usage: "serverAuth",
    sans: ["IP:127.0.0.1"],
  });
  await makeCert(pki, "fault-proxy-client", {
    subject: `/O=system:nodes/CN=system:node:${node}`,
  });
  const read = (f: string) => Deno.readTextFile(`${pki}/${f}`);
  return startApiProxy({
    upstream: cluster.apiserverUrl,
    caCert: await read("ca.crt"),
    serverCert: await read("fault-proxy.crt"),
    serverKey: await read("fault-proxy.key"),
    clientCert: await read("fault-proxy-client.crt"),
    clientKey: await read("fault-proxy-client.key"),
    random,
  });
}
