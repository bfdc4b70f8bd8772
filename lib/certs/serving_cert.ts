/**
 * The serving certificate and key as files that may change (certificate
 * rotation writes new ones): loaded and checked at start, re-read when the
 * files change (a filesystem watch, plus a periodic re-read as upstream's
 * dynamic certificate content resyncs every minute), and announced to
 * listeners so a TLS server can swap its secure context.
 *
 * @module
 */

import { createPrivateKey, X509Certificate } from "node:crypto";
import { dirname } from "node:path";
import { type Clock, realClock, type Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { pemBlocks } from "./x509.ts";

/** A certificate chain and key, PEM. */
export interface CertKey {
  cert: string;
  key: string;
}

/**
 * Where the secure server gets its certificate: the files
 * ({@link ServingCertificate}) or a certificate manager (`serverTLSBootstrap`).
 */
export interface ServingCertSource {
  /** The pair in use. */
  current(): CertKey;
  /**
   * Calls `fn` with each new pair.
   * @returns a function that removes `fn`
   */
  onChange(fn: (pair: CertKey) => void): () => void;
}

/** Options for {@link ServingCertificate.load}. */
export interface ServingCertificateOptions {
  certFile: string;
  keyFile: string;
  clock?: Clock;
  logger?: Logger;
  /** How often the files are re-read even without a watch event; default 60 s. */
  resyncMs?: number;
}

/** Default period of the unconditional re-read (upstream's one minute). */
export const SERVING_CERT_RESYNC_MS = 60_000;

/**
 * Checks that `pair` is a usable serving pair: a certificate, a key, and the
 * key belonging to the first certificate.
 * @throws Error naming the files
 */
export function validateCertKey(pair: CertKey, certFile: string, keyFile: string): void {
  const first = pemBlocks(pair.cert)[0];
  if (!first) throw new Error(`${certFile} holds no PEM certificate`);
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(first);
  } catch (err) {
    throw new Error(`${certFile}: cannot parse certificate: ${(err as Error).message}`);
  }
  let key;
  try {
    key = createPrivateKey(pair.key);
  } catch (err) {
    throw new Error(`${keyFile}: cannot parse private key: ${(err as Error).message}`);
  }
  if (!cert.checkPrivateKey(key)) {
    throw new Error(`${keyFile} is not the key of the certificate in ${certFile}`);
  }
}

/** The serving certificate files, kept current. */
export class ServingCertificate implements ServingCertSource {
  readonly certFile: string;
  readonly keyFile: string;
  #current: CertKey;
  #listeners = new Set<(pair: CertKey) => void>();
  #clock: Clock;
  #logger: Logger | undefined;
  #resyncMs: number;
  #timer: Timer | undefined;
  #watcher: Deno.FsWatcher | undefined;
  #checking: Promise<boolean> | undefined;

  private constructor(opts: ServingCertificateOptions, first: CertKey) {
    this.certFile = opts.certFile;
    this.keyFile = opts.keyFile;
    this.#current = first;
    this.#clock = opts.clock ?? realClock;
    this.#logger = opts.logger;
    this.#resyncMs = opts.resyncMs ?? SERVING_CERT_RESYNC_MS;
  }

  /**
   * Reads and checks the files.
   * @throws Error naming the file that is missing, unparsable or mismatched
   */
  static async load(opts: ServingCertificateOptions): Promise<ServingCertificate> {
    const pair = await readPair(opts.certFile, opts.keyFile);
    validateCertKey(pair, opts.certFile, opts.keyFile);
    return new ServingCertificate(opts, pair);
  }

  /** The pair in use. */
  current(): CertKey {
    return this.#current;
  }

  /** The current key's type ("rsa", "ec", ...), for resolving `tlsCipherSuites`. */
  keyType(): string {
    return createPrivateKey(this.#current.key).asymmetricKeyType ?? "";
  }

  /**
   * Calls `fn` with each new pair.
   * @returns a function that removes `fn`
   */
  onChange(fn: (pair: CertKey) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /**
   * Re-reads the files; a changed, valid pair replaces the current one and is
   * announced. A half-rotated pair (new certificate, old key) is skipped and
   * logged: the next change or resync picks up the completed rotation.
   * @returns whether the pair changed
   */
  check(): Promise<boolean> {
    // One read at a time: watch events come in bursts.
    this.#checking ??= this.#check().finally(() => (this.#checking = undefined));
    return this.#checking;
  }

  async #check(): Promise<boolean> {
    let pair: CertKey;
    try {
      pair = await readPair(this.certFile, this.keyFile);
      if (pair.cert === this.#current.cert && pair.key === this.#current.key) return false;
      validateCertKey(pair, this.certFile, this.keyFile);
    } catch (err) {
      this.#logger?.error("Serving certificate not reloaded", err, {
        certFile: this.certFile,
        keyFile: this.keyFile,
      });
      return false;
    }
    this.#current = pair;
    this.#logger?.info("Loaded a new serving certificate", { certFile: this.certFile });
    for (const fn of this.#listeners) {
      try {
        fn(pair);
      } catch (err) {
        this.#logger?.error("Serving certificate listener failed", err, {
          certFile: this.certFile,
        });
      }
    }
    return true;
  }

  /** Starts the periodic re-read and, with `watch`, the filesystem watch. */
  start(opts: { watch?: boolean } = {}): void {
    this.#timer ??= this.#clock.setInterval(() => void this.check(), this.#resyncMs);
    if (opts.watch === false || this.#watcher) return;
    const dirs = [...new Set([dirname(this.certFile), dirname(this.keyFile)])];
    const names = new Set([this.certFile, this.keyFile]);
    const watcher = Deno.watchFs(dirs, { recursive: false });
    this.#watcher = watcher;
    (async () => {
      for await (const event of watcher) {
        if (event.paths.some((p) => names.has(p))) await this.check();
      }
    })().catch((err) => {
      this.#logger?.error("Serving certificate watch ended", err, { certFile: this.certFile });
    });
  }

  /** Stops the re-read and the watch. */
  close(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    try {
      this.#watcher?.close();
    } catch {
      // Already closed.
    }
    this.#watcher = undefined;
  }
}

async function readPair(certFile: string, keyFile: string): Promise<CertKey> {
  const read = async (path: string) => {
    try {
      return await Deno.readTextFile(path);
    } catch (err) {
      throw new Error(`cannot read ${path}: ${(err as Error).message}`, { cause: err });
    }
  };
  const [cert, key] = await Promise.all([read(certFile), read(keyFile)]);
  return { cert, key };
}
