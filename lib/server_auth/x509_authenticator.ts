/**
 * Client-certificate authentication as the apiserver's x509 authenticator
 * does it for the kubelet (`authentication.x509.clientCAFile`): the client's
 * chain must lead to a CA of the bundle through CA certificates, every
 * certificate must be within its validity, and extended key usages, where a
 * certificate lists them, must allow client auth. The user is the leaf's
 * CommonName, its groups the leaf's Organizations. The bundle file is re-read
 * when it changes (upstream's dynamic CA content).
 *
 * Deno's TLS layer does not verify client certificates against a `ca`
 * option, so this is the only check they get.
 *
 * @module
 */

import { X509Certificate } from "node:crypto";
import { certificateInfo, pemBlocks } from "../certs/mod.ts";
import { type Clock, realClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import type { AuthenticationResult, Authenticator, RequestCredentials } from "./types.ts";

const EKU_CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";
const EKU_ANY = "2.5.29.37.0";
/** How many certificates a chain may hold, leaf and root included. */
const MAX_CHAIN = 10;

/** Options for {@link X509Authenticator.create}. */
export interface X509AuthenticatorOptions {
  /** `authentication.x509.clientCAFile`: PEM CA certificates. */
  clientCAFile: string;
  clock?: Clock;
  logger?: Logger;
  /** How often the bundle file's modification time is looked at; default 60 s. */
  recheckMs?: number;
}

interface Bundle {
  text: string;
  roots: X509Certificate[];
}

function parseBundle(path: string, text: string): Bundle {
  const roots = pemBlocks(text).map((der) => new X509Certificate(der));
  if (roots.length === 0) throw new Error(`${path} holds no PEM certificate`);
  return { text, roots };
}

/** Authenticates requests by their client certificate. */
export class X509Authenticator implements Authenticator {
  readonly clientCAFile: string;
  #bundle: Bundle;
  #clock: Clock;
  #logger: Logger | undefined;
  #recheckMs: number;
  #lastCheck: number;
  #mtime: number | null;

  private constructor(opts: X509AuthenticatorOptions, bundle: Bundle, mtime: number | null) {
    this.clientCAFile = opts.clientCAFile;
    this.#bundle = bundle;
    this.#clock = opts.clock ?? realClock;
    this.#logger = opts.logger;
    this.#recheckMs = opts.recheckMs ?? 60_000;
    this.#lastCheck = this.#clock.now();
    this.#mtime = mtime;
  }

  /**
   * Reads the CA bundle.
   * @throws Error naming the file when it is unreadable or holds no certificate
   */
  static async create(opts: X509AuthenticatorOptions): Promise<X509Authenticator> {
    const path = opts.clientCAFile;
    let text: string;
    let mtime: number | null;
    try {
      text = await Deno.readTextFile(path);
      mtime = (await Deno.stat(path)).mtime?.getTime() ?? null;
    } catch (err) {
      throw new Error(`unable to load client CA file ${path}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    let bundle: Bundle;
    try {
      bundle = parseBundle(path, text);
    } catch (err) {
      throw new Error(`unable to load client CA file ${path}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    return new X509Authenticator(opts, bundle, mtime);
  }

  async #maybeReload(): Promise<void> {
    const now = this.#clock.now();
    if (now - this.#lastCheck < this.#recheckMs) return;
    this.#lastCheck = now;
    try {
      const mtime = (await Deno.stat(this.clientCAFile)).mtime?.getTime() ?? null;
      if (mtime === this.#mtime && mtime !== null) return;
      const text = await Deno.readTextFile(this.clientCAFile);
      this.#mtime = mtime;
      if (text === this.#bundle.text) return;
      this.#bundle = parseBundle(this.clientCAFile, text);
      this.#logger?.info("Loaded a new client CA bundle", { clientCAFile: this.clientCAFile });
    } catch (err) {
      // Keep the last good bundle, as upstream does when a reload fails.
      this.#logger?.error("Client CA bundle not reloaded", err, {
        clientCAFile: this.clientCAFile,
      });
    }
  }

  /** Re-reads the bundle now if it changed (tests; otherwise done lazily). */
  async reload(): Promise<void> {
    this.#lastCheck = -Infinity;
    await this.#maybeReload();
  }

  async authenticate(req: RequestCredentials): Promise<AuthenticationResult> {
    const [leafDer, ...intermediateDers] = req.peerCertificates;
    if (!leafDer) return {};
    await this.#maybeReload();
    let subject = "";
    try {
      const leaf = new X509Certificate(leafDer);
      subject = leaf.subject.replaceAll("\n", ",");
      const chain = this.#verify(leaf, intermediateDers.map((d) => new X509Certificate(d)));
      for (const cert of chain) {
        const eku = certificateInfo(new Uint8Array(cert.raw)).extKeyUsage;
        if (eku && !eku.includes(EKU_CLIENT_AUTH) && !eku.includes(EKU_ANY)) {
          throw new Error("x509: certificate specifies an incompatible key usage");
        }
      }
    } catch (err) {
      return {
        error: new Error(`verifying certificate ${subject} failed: ${(err as Error).message}`),
      };
    }
    const info = certificateInfo(leafDer);
    // Upstream's CommonNameUserConversion: no CommonName, no user (and no error).
    if (!info.commonName) return {};
    return { user: { name: info.commonName, groups: info.organizations } };
  }

  #verify(leaf: X509Certificate, intermediates: X509Certificate[]): X509Certificate[] {
    const now = this.#clock.now();
    const checkTime = (c: X509Certificate) => {
      if (new Date(c.validFrom).getTime() > now || new Date(c.validTo).getTime() < now) {
        throw new Error(
          `x509: certificate has expired or is not yet valid: current time ${
            new Date(now).toISOString()
          } is outside ${c.validFrom} - ${c.validTo}`,
        );
      }
    };
    const signs = (issuer: X509Certificate, c: X509Certificate) =>
      c.checkIssued(issuer) && c.verify(issuer.publicKey);
    const chain = [leaf];
    let current = leaf;
    checkTime(leaf);
    while (chain.length < MAX_CHAIN) {
      // As Go's Verify: a bundle certificate is trusted as is; only intermediates must be CAs.
      const root = this.#bundle.roots.find((r) => signs(r, current));
      if (root) {
        checkTime(root);
        chain.push(root);
        return chain;
      }
      const next = intermediates.find((i) => i.ca && !chain.includes(i) && signs(i, current));
      if (!next) break;
      checkTime(next);
      chain.push(next);
      current = next;
    }
    throw new Error("x509: certificate signed by unknown authority");
  }
}
