/**
 * client-go's certificate manager, as the kubelet runs one for its client
 * certificate (`rotateCertificates`) and one for its serving certificate
 * (`serverTLSBootstrap`): it keeps the current pair from the file store,
 * requests a new one through a CertificateSigningRequest when there is none,
 * when the pair no longer covers the template (names, IPs, organizations), or
 * at the rotation deadline — a jittered 70–90% of the certificate's lifetime —
 * and retries a failed request with backoff (2 s doubling five times, then
 * every 32 s), each time with a fresh ECDSA P-256 key.
 *
 * @module
 */

import { X509Certificate } from "node:crypto";
import {
  type CertificateFileStore,
  certificateInfo,
  type CsrTemplate,
  generateEcKeyPem,
  makeCsrPem,
  parsePair,
  pemBlocks,
  type StoredPair,
} from "../certs/mod.ts";
import { ApiError, type KubeClient } from "../kubeapi/mod.ts";
import { type Clock, realClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { requestCertificate, waitForCertificate } from "./csr_client.ts";

/** How long one request waits for its certificate (client-go's certificateWaitTimeout). */
export const CERTIFICATE_WAIT_TIMEOUT_MS = 15 * 60_000;
/** The first retry delay after a failed rotation; it doubles for {@link ROTATION_BACKOFF_STEPS}. */
export const ROTATION_BACKOFF_INITIAL_MS = 2_000;
/** How many backoff steps before retrying at {@link ROTATION_RETRY_MS}. */
export const ROTATION_BACKOFF_STEPS = 5;
/** The retry period after the backoff steps are spent (client-go's 32 s poll). */
export const ROTATION_RETRY_MS = 32_000;

/**
 * When a certificate valid from `notBefore` to `notAfter` is renewed:
 * `notBefore` plus 70–90% of its lifetime, as client-go's
 * `wait.Jitter(total, 0.2) - 0.3 total`.
 * @param random a number in [0, 1)
 */
export function rotationDeadline(notBefore: number, notAfter: number, random: number): number {
  const total = notAfter - notBefore;
  return notBefore + total * (1 + 0.2 * random) - total * 0.3;
}

/**
 * Whether a certificate covers the template: the same CommonName, and every
 * requested DNS name, IP and organization (extra ones do not matter).
 */
export function certSatisfiesTemplate(certPem: string, template: CsrTemplate): boolean {
  const der = pemBlocks(certPem)[0];
  if (!der) return false;
  const info = certificateInfo(der);
  if (info.commonName !== template.subject.commonName) return false;
  if ((template.subject.organizations ?? []).some((o) => !info.organizations.includes(o))) {
    return false;
  }
  const sans = (new X509Certificate(der).subjectAltName ?? "").split(", ");
  const has = (kind: string, v: string) => sans.includes(`${kind}:${v}`);
  return (template.dnsNames ?? []).every((d) => has("DNS", d)) &&
    (template.ipAddresses ?? []).every((ip) =>
      has("IP Address", ip.toUpperCase()) || has("IP Address", ip)
    );
}

/** Options for {@link CertificateManager}. */
export interface CertificateManagerOptions {
  /** What the manager is for, in logs: "client" or "serving". */
  kind: string;
  store: CertificateFileStore;
  signerName: string;
  /** The key usages to request (for an ECDSA key). */
  usages: string[];
  /** What to request; undefined while unknown (a serving certificate before the node's addresses). */
  template: () => CsrTemplate | undefined;
  /** The client to request with, given whether a current pair exists (bootstrap credentials without one). */
  client: (haveCert: boolean) => KubeClient;
  /** `spec.expirationSeconds` to ask for, if any. */
  expirationSeconds?: number;
  /** A pair to start from when the store has none (the kubeconfig's own certificate). */
  initial?: { cert: string; key: string };
  clock?: Clock;
  logger: Logger;
  /** Random numbers in [0, 1) for the jitter. */
  random?: () => number;
}

/** Keeps one certificate current. */
export class CertificateManager {
  readonly #o: CertificateManagerOptions;
  readonly #clock: Clock;
  readonly #random: () => number;
  #current: StoredPair | undefined;
  #listeners = new Set<(pair: StoredPair) => void>();
  #stop = new AbortController();
  #wake: (() => void) | undefined;
  #running: Promise<void> | undefined;
  #lastError: string | undefined;
  #templateTimer: { cancel(): void } | undefined;
  #serverHealthy = false;
  #forceRotation = false;
  #waitingForDeadline = false;

  constructor(opts: CertificateManagerOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? realClock;
    this.#random = opts.random ?? Math.random;
  }

  /**
   * Loads the current pair as client-go's getCurrentCertificateOrBootstrap:
   * the store's while it is unexpired; else the initial pair (the
   * kubeconfig's own certificate), written to the store and rotated at once.
   * @throws Error when the store or the initial pair holds a broken pair
   */
  async load(): Promise<void> {
    const stored = await this.#o.store.current();
    if (stored && this.#clock.now() < stored.notAfter) {
      this.#current = stored;
      return;
    }
    this.#current = undefined;
    const initial = this.#o.initial;
    if (!initial) return;
    this.#current = parsePair(
      initial.cert,
      initial.key,
      `the ${this.#o.kind} certificate given at start-up`,
    );
    this.#forceRotation = true;
    try {
      this.#current = await this.#o.store.update(initial.cert, initial.key, this.#clock.now());
    } catch (err) {
      this.#o.logger.error("Unable to set the cert/key pair to the bootstrap certificate", err, {
        kind: this.#o.kind,
      });
    }
  }

  /** The pair in use, if any. */
  current(): StoredPair | undefined {
    return this.#current;
  }

  /**
   * Whether the apiserver answered the last refused CSR creation as a working
   * one would (401, 403 or 404; client-go's ServerHealthy): a node without a
   * valid certificate then gives up rather than wait.
   */
  serverHealthy(): boolean {
    return this.#serverHealthy;
  }

  /** Why the last request failed, until one succeeds. */
  lastError(): string | undefined {
    return this.#lastError;
  }

  /**
   * Calls `fn` with each new pair.
   * @returns a function that removes `fn`
   */
  onChange(fn: (pair: StoredPair) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** Starts the rotation loop (call {@link CertificateManager.load} first). */
  start(): void {
    // As client-go, the template is checked every second: a pair that no longer
    // covers it (the Node's addresses changed) is replaced without waiting for the deadline.
    this.#templateTimer ??= this.#clock.setInterval(() => {
      const cur = this.#current;
      const template = this.#o.template();
      if (
        this.#waitingForDeadline && cur && template && !certSatisfiesTemplate(cur.cert, template)
      ) {
        this.#o.logger.v(2).info("Certificate template changed, rotating", { kind: this.#o.kind });
        this.#wake?.();
      }
    }, 1000);
    this.#running ??= this.#run().catch((err) => {
      if (!this.#stop.signal.aborted) {
        this.#o.logger.error("Certificate manager stopped", err, { kind: this.#o.kind });
      }
    });
  }

  /** Re-evaluates the template now (the node's addresses changed). */
  templateChanged(): void {
    this.#wake?.();
  }

  /**
   * Resolves with the first pair the manager holds.
   * @throws the signal's reason when aborted first
   */
  async waitForCertificate(signal: AbortSignal): Promise<StoredPair> {
    if (this.#current) return this.#current;
    return await new Promise<StoredPair>((resolve, reject) => {
      const off = this.onChange((pair) => {
        off();
        resolve(pair);
      });
      signal.addEventListener("abort", () => {
        off();
        reject(signal.reason);
      }, { once: true });
    });
  }

  /** Stops the loop and any request in flight. */
  async stop(): Promise<void> {
    this.#stop.abort(new Error("certificate manager stopped"));
    this.#templateTimer?.cancel();
    this.#wake?.();
    await this.#running;
  }

  /** When the current pair should be replaced; now when there is none or it misses the template. */
  nextRotationDeadline(): number {
    if (this.#forceRotation) {
      this.#forceRotation = false;
      return this.#clock.now();
    }
    const cur = this.#current;
    const template = this.#o.template();
    if (!cur || (template && !certSatisfiesTemplate(cur.cert, template))) return this.#clock.now();
    return rotationDeadline(cur.notBefore, cur.notAfter, this.#random());
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      const deadline = this.nextRotationDeadline();
      const wait = deadline - this.#clock.now();
      if (wait > 0) {
        this.#o.logger.v(2).info("Waiting for next certificate rotation", {
          kind: this.#o.kind,
          deadline: new Date(deadline).toISOString(),
          sleepMs: Math.round(wait),
        });
        this.#waitingForDeadline = true;
        const woken = await this.#sleep(wait);
        this.#waitingForDeadline = false;
        if (woken) continue; // the template changed, or stop()
      }
      if (signal.aborted) return;
      if (this.#o.template() === undefined) {
        await this.#sleep(1000);
        continue;
      }
      for (let attempt = 0; !signal.aborted; attempt++) {
        if (await this.rotate()) break;
        const delay = attempt < ROTATION_BACKOFF_STEPS
          ? ROTATION_BACKOFF_INITIAL_MS * 2 ** attempt * (1 + 0.1 * this.#random())
          : ROTATION_RETRY_MS;
        if (attempt === ROTATION_BACKOFF_STEPS - 1) {
          this.#o.logger.error(
            "Reached backoff limit, still unable to rotate certs",
            new Error(this.#lastError ?? "unknown"),
            { kind: this.#o.kind },
          );
        }
        this.#checkExpiry();
        await this.#sleep(delay);
      }
    }
  }

  /** Sleeps `ms` or until woken or stopped; true when woken early. */
  #sleep(ms: number): Promise<boolean> {
    const stop = this.#stop.signal;
    if (stop.aborted) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (woken: boolean) => {
        timer.cancel();
        stop.removeEventListener("abort", onStop);
        this.#wake = undefined;
        resolve(woken);
      };
      const onStop = () => done(true);
      const timer = this.#clock.setTimeout(() => done(false), ms);
      this.#wake = () => done(true);
      stop.addEventListener("abort", onStop, { once: true });
    });
  }

  #checkExpiry(): void {
    const cur = this.#current;
    if (cur && this.#clock.now() > cur.notAfter) {
      this.#o.logger.error(
        `The currently active ${this.#o.kind} certificate has expired`,
        new Error(`expired at ${new Date(cur.notAfter).toISOString()}`),
        { kind: this.#o.kind, path: cur.path },
      );
    }
  }

  /**
   * A health check's answer: why the certificate is unusable (expired, or
   * none yet with the last request's error), undefined while it is valid.
   */
  problem(): string | undefined {
    const cur = this.#current;
    if (!cur) {
      return `no ${this.#o.kind} certificate yet${this.#lastError ? `: ${this.#lastError}` : ""}`;
    }
    if (this.#clock.now() > cur.notAfter) {
      return `${this.#o.kind} certificate expired at ${new Date(cur.notAfter).toISOString()}` +
        (this.#lastError ? `; renewal failing: ${this.#lastError}` : "");
    }
    return undefined;
  }

  /**
   * One rotation: a new key, a request, a wait for its certificate, the store updated.
   * @returns whether a new pair is in use; a failure is logged and kept in {@link lastError}
   */
  async rotate(): Promise<boolean> {
    const { kind, logger, store } = this.#o;
    const template = this.#o.template();
    if (!template) return false;
    logger.v(2).info("Rotating certificates", { kind });
    const signal = AbortSignal.any([
      this.#stop.signal,
      AbortSignal.timeout(CERTIFICATE_WAIT_TIMEOUT_MS),
    ]);
    let step = "Unable to generate a certificate signing request";
    try {
      const keyPem = generateEcKeyPem();
      const csrPem = makeCsrPem(keyPem, template);
      const client = this.#o.client(this.#current !== undefined);
      step = "Failed while requesting a signed certificate from the control plane";
      let req;
      try {
        req = await requestCertificate(client, {
          csrPem,
          signerName: this.#o.signerName,
          usages: this.#o.usages,
          ...(this.#o.expirationSeconds ? { expirationSeconds: this.#o.expirationSeconds } : {}),
        }, logger);
      } catch (err) {
        const status = err instanceof ApiError ? err.status : 0;
        this.#serverHealthy = status === 401 || status === 403 || status === 404;
        throw err;
      }
      step = "Certificate request was not signed";
      const certPem = await waitForCertificate(client, req, { signal, logger, clock: this.#clock });
      step = "Unable to store the new cert/key pair";
      const pair = await store.update(certPem, keyPem, this.#clock.now());
      this.#install(pair);
      return true;
    } catch (err) {
      if (this.#stop.signal.aborted) return false;
      this.#lastError = `${step}: ${(err as Error).message ?? err}`;
      logger.error(step, err, { kind });
      return false;
    }
  }

  #install(pair: StoredPair): void {
    this.#current = pair;
    this.#lastError = undefined;
    this.#o.logger.info("Certificate rotation: new certificate in use", {
      kind: this.#o.kind,
      serial: pair.serial,
      notAfter: new Date(pair.notAfter).toISOString(),
    });
    for (const fn of this.#listeners) {
      try {
        fn(pair);
      } catch (err) {
        this.#o.logger.error("Certificate listener failed", err, { kind: this.#o.kind });
      }
    }
  }
}
