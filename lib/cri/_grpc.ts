/**
 * gRPC over HTTP/2, the part of it the agent speaks (grpc/doc/PROTOCOL-HTTP2.md): one
 * request message, then one response message (unary) or any number of them (a server
 * stream), the status in the trailers (or in the headers of a trailers-only answer), no
 * compression.
 *
 * A {@link GrpcChannel} holds one HTTP/2 connection (node:http2) to one server. It dials
 * on the first call, keeps the connection for the calls after it, and dials again on the
 * next call once the connection closed or the server sent GOAWAY. After a failed dial,
 * calls fail at once with Unavailable until a backoff has passed (grpc's
 * TRANSIENT_FAILURE for fail-fast calls), then the next call dials again.
 *
 * Each call's deadline covers the dial and the call, is sent as `grpc-timeout`, and
 * cancels the stream when it passes; an abort signal cancels it too.
 *
 * @module
 */

import http2 from "node:http2";
import type net from "node:net";
import { errorText } from "../util/log.ts";
import { GrpcCode } from "./errors.ts";

const { NGHTTP2_CANCEL, NGHTTP2_REFUSED_STREAM, NGHTTP2_ENHANCE_YOUR_CALM } = http2.constants;

/** A call that ended without a response: the gRPC status code and its message. */
export class GrpcStatusError extends Error {
  /**
   * @param code the gRPC status code
   * @param details the status message
   * @param options the cause, when there is one
   */
  constructor(readonly code: number, readonly details: string, options?: ErrorOptions) {
    super(details, options);
    this.name = "GrpcStatusError";
  }
}

/** How a {@link GrpcChannel} reaches its server. */
export interface GrpcChannelOptions {
  /** Opens the connection's socket (`net.connect({ path })`, `net.connect({ host, port })`). */
  dial: () => net.Socket;
  /** The server's address as errors name it: the socket path or host:port. */
  address: string;
  /** The `:authority` of every call (host:port, or `localhost` for a unix socket). */
  authority: string;
  /** The `user-agent` header of every call. */
  userAgent: string;
  /** The largest message sent or received (grpc's max send/receive message length). */
  maxMessageBytes: number;
  /** Backoff after a failed dial, growing 1.6 times a failure with ±20% jitter, as grpc's. */
  backoff: { initialMs: number; maxMs: number };
}

/** Options for one call. */
export interface GrpcCallOptions {
  /** When the call fails with DeadlineExceeded, in `performance.now()` ms; none when undefined. */
  deadline: number | undefined;
  /** Cancels the call (Cancelled, the signal's reason as the cause). */
  signal: AbortSignal | undefined;
}

/** The largest receive buffer a channel keeps between calls; a larger response gets its own. */
const RECEIVE_BUFFER_MAX_BYTES = 1024 * 1024;

const BACKOFF_MULTIPLIER = 1.6;
const BACKOFF_JITTER = 0.2;

/** The gRPC status code for an HTTP status other than 200 (grpc/doc/http-grpc-status-mapping.md). */
function httpStatusCode(status: number): number {
  switch (status) {
    case 400:
      return GrpcCode.INTERNAL;
    case 401:
      return GrpcCode.UNAUTHENTICATED;
    case 403:
      return GrpcCode.PERMISSION_DENIED;
    case 404:
      return GrpcCode.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GrpcCode.UNAVAILABLE;
    default:
      return GrpcCode.UNKNOWN;
  }
}

/** The gRPC status code for a stream the server reset (PROTOCOL-HTTP2.md, "Errors"). */
function resetCode(rstCode: number): number {
  switch (rstCode) {
    case NGHTTP2_REFUSED_STREAM:
      return GrpcCode.UNAVAILABLE;
    case NGHTTP2_CANCEL:
      return GrpcCode.CANCELLED;
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return GrpcCode.RESOURCE_EXHAUSTED;
    default:
      return GrpcCode.INTERNAL;
  }
}

/**
 * `grpc-timeout`: at most eight digits and a unit; whole milliseconds up to ~27 hours,
 * then seconds, rounded up so the server never ends a call before the client would.
 * @param ms the time left, in milliseconds
 * @returns the header value
 */
export function encodeGrpcTimeout(ms: number): string {
  const millis = Math.max(1, Math.ceil(ms));
  if (millis < 1e8) return `${millis}m`;
  return `${Math.min(Math.ceil(millis / 1000), 99_999_999)}S`;
}

/** `grpc-message` is percent-encoded; a malformed one is shown as it came. */
function decodeGrpcMessage(value: unknown): string {
  const raw = Array.isArray(value) ? String(value[0] ?? "") : String(value ?? "");
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** The call's Cancelled, with its signal's reason as the cause. */
function cancelled(o: GrpcCallOptions): GrpcStatusError {
  return new GrpcStatusError(GrpcCode.CANCELLED, "call cancelled", { cause: o.signal?.reason });
}

const deadlineExceeded = () =>
  new GrpcStatusError(GrpcCode.DEADLINE_EXCEEDED, "context deadline exceeded");

/**
 * Calls `fail` once the call's deadline passes or its signal aborts.
 * @returns what stops watching
 */
function watchCall(o: GrpcCallOptions, fail: (err: GrpcStatusError) => void): () => void {
  const onAbort = () => fail(cancelled(o));
  o.signal?.addEventListener("abort", onAbort, { once: true });
  const timer = o.deadline === undefined
    ? undefined
    : setTimeout(() => fail(deadlineExceeded()), Math.max(0, o.deadline - performance.now()));
  return () => {
    clearTimeout(timer);
    o.signal?.removeEventListener("abort", onAbort);
  };
}

/** What a call does with its response body: a unary call's one message, a stream's many. */
interface Receiver<T> {
  /** A chunk of the response body; an error returned ends the call with it. */
  data(chunk: Uint8Array): GrpcStatusError | undefined;
  /** The call ended with status OK: its value (throws GrpcStatusError when the body was wrong). */
  end(): T;
}

/** One connection (and its redials) to a gRPC server; see the module doc. */
export class GrpcChannel {
  readonly #opts: GrpcChannelOptions;
  #session: http2.ClientHttp2Session | undefined;
  #dialing: Promise<http2.ClientHttp2Session> | undefined;
  /** Calls in flight per session, failed when their session closes under them. */
  readonly #inFlight = new Map<http2.ClientHttp2Session, Set<(err: GrpcStatusError) => void>>();
  /** Of those, the ones that keep the process alive (unary calls): the session is ref'd for them. */
  readonly #keptAlive = new Map<http2.ClientHttp2Session, Set<(err: GrpcStatusError) => void>>();
  #retryAt = 0;
  #backoffMs: number;
  #lastDialError = "";
  #closed = false;
  /** Where a response that came in several chunks is put together, reused call after call. */
  #receive = new Uint8Array(0);

  /** @param opts where the server is and how calls look; see {@link GrpcChannelOptions} */
  constructor(opts: GrpcChannelOptions) {
    this.#opts = opts;
    this.#backoffMs = opts.backoff.initialMs;
  }

  /**
   * Makes one unary call.
   * @param path the method's path, e.g. `/runtime.v1.RuntimeService/Version`
   * @param request the encoded request message
   * @param o deadline and cancellation
   * @param decode turns the response message into its value, at once: the bytes it is
   *   given are only valid during the call (they may be the channel's receive buffer)
   * @returns the decoded response
   * @throws GrpcStatusError with the call's status (Unavailable when there is no connection;
   *   Internal when `decode` throws)
   */
  unary<T>(
    path: string,
    request: Uint8Array,
    o: GrpcCallOptions,
    decode: (message: Uint8Array) => T,
  ): Promise<T> {
    return this.#start(path, request, o, this.#unaryReceiver(decode), true);
  }

  /**
   * Makes one server-streaming call: `onMessage` is given each response message as it
   * comes, until the server ends the stream.
   *
   * Unlike a unary call, an open stream does not keep the process alive.
   * @param path the method's path, e.g. `/containerd.services.events.v1.Events/Subscribe`
   * @param request the encoded request message
   * @param o deadline and cancellation (the signal is how a subscription is ended)
   * @param onMessage takes each message at once: its bytes are only valid during the call
   *   to it; when it throws, the call ends Internal
   * @returns once the server ended the stream with status OK
   * @throws GrpcStatusError with the call's status
   */
  serverStream(
    path: string,
    request: Uint8Array,
    o: GrpcCallOptions,
    onMessage: (message: Uint8Array) => void,
  ): Promise<void> {
    return this.#start(path, request, o, this.#streamReceiver(onMessage), false);
  }

  /** Checks the request, connects when there is no connection, and makes the call. */
  async #start<T>(
    path: string,
    request: Uint8Array,
    o: GrpcCallOptions,
    receiver: Receiver<T>,
    keepAlive: boolean,
  ): Promise<T> {
    if (this.#closed) throw new GrpcStatusError(GrpcCode.CANCELLED, "the channel is closed");
    if (request.byteLength > this.#opts.maxMessageBytes) {
      throw new GrpcStatusError(
        GrpcCode.RESOURCE_EXHAUSTED,
        `trying to send message larger than max (${request.byteLength} vs. ${this.#opts.maxMessageBytes})`,
      );
    }
    const session = this.#usable(this.#session) ?? await this.connect(o);
    return this.#call(session, path, request, o, receiver, keepAlive);
  }

  /**
   * Waits for a connection, dialling when there is none.
   * @param o deadline and cancellation for the wait
   * @returns the connected session
   * @throws GrpcStatusError Unavailable when the dial fails or a backoff is running,
   *   DeadlineExceeded or Cancelled when the wait ends first
   */
  connect(o: GrpcCallOptions): Promise<http2.ClientHttp2Session> {
    if (this.#closed) {
      return Promise.reject(new GrpcStatusError(GrpcCode.CANCELLED, "the channel is closed"));
    }
    const ready = this.#usable(this.#session);
    if (ready) return Promise.resolve(ready);
    if (this.#dialing === undefined) {
      if (performance.now() < this.#retryAt) {
        return Promise.reject(
          new GrpcStatusError(GrpcCode.UNAVAILABLE, this.#lastDialError || "connection backoff"),
        );
      }
      this.#dialing = this.#dial();
    }
    return this.#bounded(this.#dialing, o);
  }

  /** When the next dial may start after a failed one, in `performance.now()` ms. */
  get retryAt(): number {
    return this.#retryAt;
  }

  /** Closes the connection; calls in flight and later fail with Cancelled. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const session = this.#session;
    this.#session = undefined;
    if (session) this.#drop(session, GrpcCode.CANCELLED, "the channel is closed");
    void this.#dialing?.then((s) => s.destroy(), () => {});
  }

  #usable(session: http2.ClientHttp2Session | undefined): http2.ClientHttp2Session | undefined {
    return session && !session.closed && !session.destroyed ? session : undefined;
  }

  #dial(): Promise<http2.ClientHttp2Session> {
    const { address, dial } = this.#opts;
    return new Promise<http2.ClientHttp2Session>((resolve, reject) => {
      let session: http2.ClientHttp2Session;
      try {
        session = http2.connect(`http://${this.#opts.authority}`, {
          createConnection: () => dial(),
          settings: { enablePush: false },
        });
      } catch (err) {
        reject(err);
        return;
      }
      let settled = false;
      const onError = (err: unknown) => {
        if (settled) return; // a destroyed session may report more; this listener stays for them
        settled = true;
        session.off("connect", onConnect);
        session.destroy();
        reject(err);
      };
      const onClose = () => onError(new Error("connection closed before it was established"));
      const onConnect = () => {
        settled = true;
        session.off("error", onError);
        session.off("close", onClose);
        resolve(session);
      };
      session.once("connect", onConnect);
      session.on("error", onError);
      session.once("close", onClose);
    }).then(
      (session) => {
        this.#dialing = undefined;
        this.#backoffMs = this.#opts.backoff.initialMs;
        this.#lastDialError = "";
        if (this.#closed) {
          session.destroy();
          throw new GrpcStatusError(GrpcCode.CANCELLED, "the channel is closed");
        }
        this.#adopt(session);
        return session;
      },
      (err: unknown) => {
        this.#dialing = undefined;
        const wait = this.#backoffMs * (1 + BACKOFF_JITTER * (2 * Math.random() - 1));
        this.#retryAt = performance.now() + wait;
        this.#backoffMs = Math.min(this.#backoffMs * BACKOFF_MULTIPLIER, this.#opts.backoff.maxMs);
        this.#lastDialError = `connection error: dial ${address}: ${errorText(err)}`;
        throw new GrpcStatusError(GrpcCode.UNAVAILABLE, this.#lastDialError, { cause: err });
      },
    );
  }

  /** Keeps a connected session for the calls to come, until it closes or is told to go away. */
  #adopt(session: http2.ClientHttp2Session): void {
    this.#session = session;
    this.#inFlight.set(session, new Set());
    this.#keptAlive.set(session, new Set());
    const forget = () => {
      if (this.#session === session) this.#session = undefined;
    };
    // An 'error' without a listener would throw out of the event loop; the calls learn of
    // it from their streams and from 'close'.
    session.on("error", forget);
    session.on("goaway", forget);
    session.once("close", () => {
      forget();
      this.#drop(session, GrpcCode.UNAVAILABLE, `connection to ${this.#opts.address} closed`);
    });
    // The connection alone does not keep the process alive; a call in flight does.
    session.unref();
  }

  /** Fails the session's calls in flight and closes it. */
  #drop(session: http2.ClientHttp2Session, code: number, details: string): void {
    const calls = this.#inFlight.get(session);
    this.#inFlight.delete(session);
    this.#keptAlive.delete(session);
    for (const fail of calls ?? []) fail(new GrpcStatusError(code, details));
    if (!session.destroyed) session.destroy();
  }

  /**
   * A response's chunks in one piece, in the receive buffer: a new array for each
   * response (a ListContainers of 110 pods is ~100 KiB) cost an allocation the size of
   * the response, mapped and zeroed, each relist. Decoding copies what it keeps, so the
   * buffer is free again once the call's decode returned.
   */
  #assemble(chunks: readonly Uint8Array[], total: number): Uint8Array {
    let out = this.#receive;
    if (total > RECEIVE_BUFFER_MAX_BYTES) out = new Uint8Array(total); // rare: not kept
    else if (out.byteLength < total) {
      out = new Uint8Array(Math.min(RECEIVE_BUFFER_MAX_BYTES, Math.max(total, 2 * out.byteLength)));
      this.#receive = out;
    }
    let at = 0;
    for (const c of chunks) {
      out.set(c, at);
      at += c.byteLength;
    }
    return out.subarray(0, total);
  }

  /** Races a promise with the call's deadline and signal. */
  #bounded<T>(promise: Promise<T>, o: GrpcCallOptions): Promise<T> {
    if (o.deadline === undefined && o.signal === undefined) return promise;
    if (o.signal?.aborted) return Promise.reject(cancelled(o));
    return new Promise<T>((resolve, reject) => {
      const end = watchCall(o, (err) => (end(), reject(err)));
      promise.then((v) => (end(), resolve(v)), (err) => (end(), reject(err)));
    });
  }

  /** A unary call's receiver: the chunks of its one message, then `decode`. */
  #unaryReceiver<T>(decode: (message: Uint8Array) => T): Receiver<T> {
    const { maxMessageBytes } = this.#opts;
    const chunks: Uint8Array[] = [];
    let received = 0;
    return {
      data: (chunk) => {
        received += chunk.byteLength;
        if (received > maxMessageBytes + 5) {
          return new GrpcStatusError(
            GrpcCode.RESOURCE_EXHAUSTED,
            `received message larger than max (${received - 5} vs. ${maxMessageBytes})`,
          );
        }
        chunks.push(chunk);
        return undefined;
      },
      end: () => {
        const body = chunks.length === 1 ? chunks[0]! : this.#assemble(chunks, received);
        if (body.byteLength < 5 || body[0] !== 0) {
          throw new GrpcStatusError(
            GrpcCode.INTERNAL,
            body.byteLength < 5
              ? "server sent no response message"
              : "server sent a compressed message",
          );
        }
        const length = new DataView(body.buffer, body.byteOffset, 5).getUint32(1);
        if (body.byteLength !== 5 + length) {
          throw new GrpcStatusError(
            GrpcCode.INTERNAL,
            `response message framing: ${body.byteLength - 5} bytes for a message of ${length}`,
          );
        }
        try {
          return decode(body.subarray(5));
        } catch (err) {
          throw new GrpcStatusError(
            GrpcCode.INTERNAL,
            `cannot decode the response: ${errorText(err)}`,
            { cause: err },
          );
        }
      },
    };
  }

  /** A server stream's receiver: each framed message to `onMessage` as soon as it is whole. */
  #streamReceiver(onMessage: (message: Uint8Array) => void): Receiver<void> {
    const { maxMessageBytes } = this.#opts;
    let pending: Uint8Array = new Uint8Array(0);
    return {
      data: (chunk) => {
        if (pending.byteLength === 0) pending = chunk;
        else {
          const joined = new Uint8Array(pending.byteLength + chunk.byteLength);
          joined.set(pending);
          joined.set(chunk, pending.byteLength);
          pending = joined;
        }
        while (pending.byteLength >= 5) {
          if (pending[0] !== 0) {
            return new GrpcStatusError(GrpcCode.INTERNAL, "server sent a compressed message");
          }
          const length = new DataView(pending.buffer, pending.byteOffset, 5).getUint32(1);
          if (length > maxMessageBytes) {
            return new GrpcStatusError(
              GrpcCode.RESOURCE_EXHAUSTED,
              `received message larger than max (${length} vs. ${maxMessageBytes})`,
            );
          }
          if (pending.byteLength < 5 + length) break;
          try {
            onMessage(pending.subarray(5, 5 + length));
          } catch (err) {
            return new GrpcStatusError(
              GrpcCode.INTERNAL,
              `cannot decode a message: ${errorText(err)}`,
              { cause: err },
            );
          }
          pending = pending.subarray(5 + length);
        }
        return undefined;
      },
      end: () => {
        if (pending.byteLength > 0) {
          throw new GrpcStatusError(
            GrpcCode.INTERNAL,
            `the stream ended inside a message (${pending.byteLength} bytes left)`,
          );
        }
      },
    };
  }

  /**
   * Starts a call on `session` and settles with what `receiver` makes of its response.
   * @param keepAlive whether the call keeps the process alive while it is in flight
   */
  #call<T>(
    session: http2.ClientHttp2Session,
    path: string,
    request: Uint8Array,
    o: GrpcCallOptions,
    receiver: Receiver<T>,
    keepAlive: boolean,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (o.signal?.aborted) {
        reject(cancelled(o));
        return;
      }
      const headers: http2.OutgoingHttpHeaders = {
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc",
        "te": "trailers",
        "user-agent": this.#opts.userAgent,
      };
      if (o.deadline !== undefined) {
        const left = o.deadline - performance.now();
        if (left <= 0) {
          reject(deadlineExceeded());
          return;
        }
        headers["grpc-timeout"] = encodeGrpcTimeout(left);
      }
      let stream: http2.ClientHttp2Stream;
      try {
        stream = session.request(headers, { endStream: false });
      } catch (err) {
        reject(
          new GrpcStatusError(GrpcCode.UNAVAILABLE, `cannot start a call: ${errorText(err)}`, {
            cause: err,
          }),
        );
        return;
      }

      const calls = this.#inFlight.get(session);
      const keptAlive = this.#keptAlive.get(session);
      let settled = false;
      let httpStatus = 0;
      let status: number | undefined;
      let details = "";
      let streamError: unknown;

      const finish = (err: GrpcStatusError | undefined, value?: T) => {
        if (settled) return;
        settled = true;
        unwatch();
        calls?.delete(fail);
        if (keepAlive) keptAlive?.delete(fail);
        if (keptAlive?.size === 0) session.unref();
        if (err) {
          if (!stream.closed) stream.close(NGHTTP2_CANCEL);
          reject(err);
        } else {
          resolve(value!);
        }
      };
      const fail = (err: GrpcStatusError) => finish(err);
      let unwatch = () => {};
      const readStatus = (h: http2.IncomingHttpHeaders) => {
        const s = h["grpc-status"];
        if (s === undefined) return;
        const n = Number(Array.isArray(s) ? s[0] : s);
        status = Number.isInteger(n) && n >= 0 && n <= 16 ? n : GrpcCode.UNKNOWN;
        details = decodeGrpcMessage(h["grpc-message"]);
      };

      stream.on("response", (h) => {
        httpStatus = Number(h[":status"]);
        readStatus(h);
      });
      stream.on("trailers", readStatus);
      stream.on("data", (chunk: Uint8Array) => {
        if (settled) return;
        const err = receiver.data(chunk);
        if (err) fail(err);
      });
      stream.on("error", (err) => (streamError = err));
      stream.on("close", () => {
        if (settled) return;
        if (status === undefined) {
          if (httpStatus !== 0 && httpStatus !== 200) {
            return fail(
              new GrpcStatusError(
                httpStatusCode(httpStatus),
                `unexpected HTTP status code received from server: ${httpStatus}`,
              ),
            );
          }
          // A connection that went away ends its calls Unavailable, as grpc's transport does.
          if (session.closed || session.destroyed) {
            return fail(
              new GrpcStatusError(
                GrpcCode.UNAVAILABLE,
                `connection to ${this.#opts.address} lost: ${errorText(streamError ?? "closed")}`,
                { cause: streamError },
              ),
            );
          }
          const rst = stream.rstCode ?? 0;
          return fail(
            rst === 0 && streamError === undefined
              ? new GrpcStatusError(
                GrpcCode.INTERNAL,
                "server closed the stream without sending trailers",
              )
              : new GrpcStatusError(
                resetCode(rst),
                `stream reset by the server (HTTP/2 error code ${rst})`,
                { cause: streamError },
              ),
          );
        }
        if (status !== GrpcCode.OK) return fail(new GrpcStatusError(status, details));
        let value: T;
        try {
          value = receiver.end();
        } catch (err) {
          return fail(
            err instanceof GrpcStatusError
              ? err
              : new GrpcStatusError(GrpcCode.INTERNAL, errorText(err), { cause: err }),
          );
        }
        finish(undefined, value);
      });

      calls?.add(fail);
      if (keepAlive) {
        keptAlive?.add(fail);
        if (keptAlive?.size === 1) session.ref();
      }
      unwatch = watchCall(o, fail);
      const frame = new Uint8Array(5 + request.byteLength);
      new DataView(frame.buffer).setUint32(1, request.byteLength);
      frame.set(request, 5);
      stream.end(frame);
    });
  }
}
