/**
 * What the fault proxy (./_api_proxy.ts) does to one request, decided without I/O so it
 * can be unit-tested: which kind of request it is, which fault (if any) a seeded draw
 * picks for it, the metav1.Status body an injected error carries, and the wrapper
 * that lets it cut a watch's stream.
 *
 * @module
 */

/** How the proxy sees a request. */
export type RequestKind =
  /** `watch=true`: a stream the proxy may cut. */
  | "watch"
  /**
   * A PUT or PATCH of a `/status` subresource or of a Lease: the writes a real apiserver
   * answers 409 Conflict when another writer got there first.
   */
  | "statusWrite"
  /** Any other request. */
  | "other";

/** Probabilities in [0, 1] per request; their sum per kind must not exceed 1. */
export interface FaultRates {
  /** 409 Conflict, on status writes only. */
  conflict: number;
  /** 429 Too Many Requests with `Retry-After: 1` (the client waits and retries). */
  tooMany: number;
  /** 500 Internal Error without Retry-After (the caller sees the error). */
  serverError: number;
  /** A watch stream cut after a random time in `cutMs`. */
  watchCut: number;
  /** The range a cut's moment is drawn from, in ms after the response started. */
  cutMs: readonly [number, number];
}

/** No faults: the proxy only forwards. */
export const NO_FAULTS: FaultRates = {
  conflict: 0,
  tooMany: 0,
  serverError: 0,
  watchCut: 0,
  cutMs: [1_000, 10_000],
};

/** What the proxy does with one request. */
export type Fault =
  | { kind: "pass" }
  /**
   * Answer `status` instead of the apiserver. `afterForward`: the request is forwarded
   * first and its answer dropped, so the write happened but the client is told it failed
   * (a 500 on a mutating request only).
   */
  | { kind: "status"; status: 409 | 429 | 500; afterForward: boolean }
  /** Forward, then end the stream after `afterMs`: cleanly, or `abrupt`ly (a reset). */
  | { kind: "cut"; afterMs: number; abrupt: boolean };

/**
 * Classifies a request by method and URL.
 * @param method the HTTP method
 * @param url the request's URL (path and query are read)
 * @returns its {@link RequestKind}
 */
export function classifyRequest(method: string, url: URL): RequestKind {
  const watch = url.searchParams.get("watch");
  if (method === "GET" && (watch === "true" || watch === "1")) return "watch";
  if (method !== "PUT" && method !== "PATCH") return "other";
  const path = url.pathname;
  if (path.endsWith("/status")) return "statusWrite";
  if (/^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/[^/]+\/leases\/[^/]+$/.test(path)) {
    return "statusWrite";
  }
  return "other";
}

/**
 * Draws the fault for one request. Each request takes the same number of draws
 * whatever it gets, so one seed gives one sequence of choices for one sequence of
 * requests.
 * @param kind from {@link classifyRequest}
 * @param method the HTTP method (a 500 on a mutating request may come after forwarding)
 * @param rates the probabilities
 * @param random a seeded source in [0, 1)
 * @returns the fault, or `pass`
 */
export function chooseFault(
  kind: RequestKind,
  method: string,
  rates: FaultRates,
  random: () => number,
): Fault {
  const [r, r2, r3] = [random(), random(), random()];
  let edge = 0;
  if (kind === "statusWrite") {
    edge += rates.conflict;
    if (r < edge) return { kind: "status", status: 409, afterForward: false };
  }
  edge += rates.tooMany;
  if (r < edge) return { kind: "status", status: 429, afterForward: false };
  edge += rates.serverError;
  if (r < edge) {
    const mutating = method !== "GET" && method !== "HEAD";
    return { kind: "status", status: 500, afterForward: mutating && r2 < 0.5 };
  }
  if (kind === "watch") {
    edge += rates.watchCut;
    if (r < edge) {
      const [lo, hi] = rates.cutMs;
      return { kind: "cut", afterMs: Math.round(lo + (hi - lo) * r2), abrupt: r3 < 0.5 };
    }
  }
  return { kind: "pass" };
}

const REASONS = { 409: "Conflict", 429: "TooManyRequests", 500: "InternalError" } as const;

/**
 * The metav1.Status an injected error carries, as the apiserver writes one.
 * @param status the HTTP status
 * @param what the request, for the message ("PATCH /api/v1/...")
 * @returns the JSON body
 */
export function statusBody(status: 409 | 429 | 500, what: string): string {
  const message = status === 409
    ? `Operation cannot be fulfilled on ${what}: the object has been modified (fault proxy)`
    : status === 429
    ? `too many requests for ${what} (fault proxy)`
    : `an error on the server for ${what} (fault proxy)`;
  return JSON.stringify({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason: REASONS[status],
    code: status,
  });
}

/** A stream that can be cut: {@link cuttableStream}. */
export interface CuttableStream {
  /** What the client reads. */
  stream: ReadableStream<Uint8Array>;
  /**
   * Ends the stream now, cleanly or with an error (`abrupt`: a reset on the wire), and
   * cancels the source.
   * @returns false when the stream had already ended
   */
  cut(abrupt: boolean): boolean;
  /** Resolves once the stream is over: ended, failed, cancelled or cut. */
  over: Promise<void>;
}

/**
 * Wraps a watch's body so the proxy can cut it mid-stream.
 * @param body the apiserver's stream
 * @returns the stream to answer with and the means to cut it
 */
export function cuttableStream(body: ReadableStream<Uint8Array>): CuttableStream {
  const reader = body.getReader();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let ended = false;
  let markOver!: () => void;
  const over = new Promise<void>((resolve) => (markOver = resolve));
  const end = () => {
    ended = true;
    markOver();
  };
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    async pull(c) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (ended) return;
        end();
        c.error(err);
        return;
      }
      if (ended) return;
      if (chunk.done) {
        end();
        c.close();
      } else c.enqueue(chunk.value);
    },
    cancel(reason) {
      end();
      return reader.cancel(reason);
    },
  });
  return {
    stream,
    over,
    cut(abrupt) {
      if (ended) return false;
      end();
      reader.cancel().catch(() => {});
      if (abrupt) controller.error(new Error("watch cut by the fault proxy"));
      else controller.close();
      return true;
    },
  };
}
