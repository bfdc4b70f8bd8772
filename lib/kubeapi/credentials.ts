/**
 * The user half of a kubeconfig at request time: static client certificates,
 * tokens and basic auth, client certificate files re-read every five minutes
 * and after a 401 (client-go's reloading of rotated TLS files), a token file
 * re-read every minute (client-go's cached file token source), or an exec credential plugin run through
 * `@kubernetes/client-node`'s ExecAuth, whose credential is cached until its
 * `expirationTimestamp` and dropped when the apiserver answers 401.
 *
 * @module
 */

import type { ExecAuth } from "@kubernetes/client-node/dist/exec_auth.js";
import type { Clock } from "../util/clock.ts";
import { realClock } from "../util/clock.ts";

/** What a request authenticates with. */
export interface Credentials {
  /** Bearer token. */
  token?: string;
  /** PEM client certificate chain (with `key`). */
  cert?: string;
  /** PEM private key of `cert`. */
  key?: string;
  /** HTTP basic auth (kubeconfig `username`/`password`). */
  basicAuth?: { username: string; password: string };
}

/** Produces the current credentials of a kubeconfig user. */
export interface CredentialProvider {
  /**
   * The credentials to send now; may re-read a token file or run an exec
   * plugin. Concurrent calls share one refresh.
   * @throws Error naming the kubeconfig, user and plugin or file when a refresh fails
   */
  get(): Promise<Credentials>;
  /**
   * Forgets cached dynamic credentials after a 401, so the next
   * {@link CredentialProvider.get} fetches fresh ones.
   * @returns true when fresh credentials could differ (exec plugin or token file)
   */
  invalidate(): boolean;
}

/** An exec credential plugin, resolved (command path made absolute when relative). */
export interface ExecPluginSpec {
  apiVersion: "client.authentication.k8s.io/v1" | "client.authentication.k8s.io/v1beta1";
  command: string;
  args: string[];
  env: { name: string; value: string }[];
  installHint?: string;
  /** The ExecCredential `spec.cluster` to pass when `provideClusterInfo` is set. */
  cluster?: Record<string, unknown>;
}

/** Options for {@link UserCredentials}. */
export interface UserCredentialsOptions {
  /** For error messages: the kubeconfig file and user name. */
  source: string;
  /** Credentials fixed in the kubeconfig (certs, token, basic auth). */
  fixed: Credentials;
  /** An absolute token file path, re-read every {@link TOKEN_FILE_REFRESH_MS}. */
  tokenFile?: string;
  /** An exec plugin whose credential overrides fixed token and client certificate. */
  exec?: ExecPluginSpec;
  /**
   * Absolute `client-certificate`/`client-key` files, re-read every
   * {@link CERT_FILE_REFRESH_MS} and after a 401; they replace `fixed.cert`/`key`.
   */
  certFiles?: { certFile: string; keyFile: string };
  clock?: Clock;
}

/** How long a token read from `tokenFile` is used before the file is read again (client-go). */
export const TOKEN_FILE_REFRESH_MS = 60_000;

/**
 * How often client certificate files are read again (client-go's
 * CertCallbackRefreshDuration), so a pair rotated on disk by another tool is used.
 */
export const CERT_FILE_REFRESH_MS = 5 * 60_000;

/** The {@link CredentialProvider} of one kubeconfig user. */
export class UserCredentials implements CredentialProvider {
  readonly #opts: UserCredentialsOptions;
  readonly #clock: Clock;
  #fileToken: { token: string; readAt: number } | undefined;
  #exec: ExecAuth | undefined;
  #pending: Promise<Credentials> | undefined;
  #certs: { cert: string; key: string; readAt: number } | undefined;
  #certsPending: Promise<void> | undefined;

  /** @param opts the fixed parts, token file, exec plugin or certificate files */
  constructor(opts: UserCredentialsOptions) {
    this.#opts = opts;
    this.#clock = opts.clock ?? realClock;
    const { certFiles, fixed } = opts;
    // The files as loaded with the kubeconfig count as read now.
    if (certFiles && fixed.cert !== undefined && fixed.key !== undefined) {
      this.#certs = { cert: fixed.cert, key: fixed.key, readAt: this.#clock.now() };
    }
  }

  get(): Promise<Credentials> {
    if (
      this.#opts.certFiles &&
      (this.#certs === undefined || this.#clock.now() - this.#certs.readAt >= CERT_FILE_REFRESH_MS)
    ) {
      this.#certsPending ??= this.#readCertFiles().finally(() => (this.#certsPending = undefined));
      return this.#certsPending.then(() => this.#get());
    }
    return this.#get();
  }

  /** Re-reads the certificate files; as client-go, a failed read keeps the last good pair. */
  async #readCertFiles(): Promise<void> {
    const { certFile, keyFile } = this.#opts.certFiles!;
    try {
      const [cert, key] = await Promise.all([
        Deno.readTextFile(certFile),
        Deno.readTextFile(keyFile),
      ]);
      this.#certs = { cert, key, readAt: this.#clock.now() };
    } catch (err) {
      if (this.#certs === undefined) {
        throw new Error(
          `${this.#opts.source}: cannot read client certificate ${certFile} or key ${keyFile}: ${err}`,
          { cause: err },
        );
      }
      this.#certs.readAt = this.#clock.now();
    }
  }

  #get(): Promise<Credentials> {
    const { tokenFile, exec } = this.#opts;
    const fixed = this.#certs
      ? { ...this.#opts.fixed, cert: this.#certs.cert, key: this.#certs.key }
      : this.#opts.fixed;
    if (tokenFile === undefined && exec === undefined) return Promise.resolve(fixed);
    if (
      exec === undefined && this.#fileToken !== undefined &&
      this.#clock.now() - this.#fileToken.readAt < TOKEN_FILE_REFRESH_MS
    ) {
      return Promise.resolve({ ...fixed, token: this.#fileToken.token });
    }
    this.#pending ??= this.#refresh().finally(() => (this.#pending = undefined));
    return this.#pending;
  }

  invalidate(): boolean {
    // A 401 may mean the certificate on disk was renewed: read it again next time.
    const certs = this.#certs !== undefined;
    if (certs) this.#certs!.readAt = -Infinity;
    if (this.#opts.exec !== undefined) {
      this.#exec = undefined;
      return true;
    }
    if (this.#opts.tokenFile !== undefined) {
      if (this.#fileToken !== undefined) this.#fileToken.readAt = -Infinity;
      return true;
    }
    return certs;
  }

  async #refresh(): Promise<Credentials> {
    const { tokenFile, exec } = this.#opts;
    const fixed = this.#certs
      ? { ...this.#opts.fixed, cert: this.#certs.cert, key: this.#certs.key }
      : this.#opts.fixed;
    if (exec !== undefined) return { ...fixed, ...await this.#runExec(exec) };
    const path = tokenFile as string;
    try {
      const token = (await Deno.readTextFile(path)).trim();
      if (token === "") throw new Error("file is empty");
      this.#fileToken = { token, readAt: this.#clock.now() };
    } catch (err) {
      // As client-go: keep using the last good token while the file is unreadable.
      if (this.#fileToken === undefined) {
        throw new Error(`${this.#opts.source}: cannot read tokenFile ${path}: ${err}`, {
          cause: err,
        });
      }
      this.#fileToken.readAt = this.#clock.now();
    }
    return { ...fixed, token: this.#fileToken.token };
  }

  async #runExec(exec: ExecPluginSpec): Promise<Credentials> {
    // ExecAuth caches the credential until its expirationTimestamp; a new
    // instance (after invalidate) runs the plugin again.
    // Loaded on first use: only exec-plugin users pay for node:child_process.
    const { ExecAuth } = await import("@kubernetes/client-node/dist/exec_auth.js");
    this.#exec ??= new ExecAuth();
    const execAuth = this.#exec;
    const info: Record<string, unknown> = { interactive: false };
    if (exec.cluster !== undefined) info.cluster = exec.cluster;
    const env = [
      ...exec.env,
      {
        name: "KUBERNETES_EXEC_INFO",
        value: JSON.stringify({ apiVersion: exec.apiVersion, kind: "ExecCredential", spec: info }),
      },
    ];
    const user = { name: "exec", exec: { command: exec.command, args: exec.args, env } };
    const opts: { headers: Record<string, string>; cert?: string; key?: string } = {
      headers: {},
    };
    try {
      await execAuth.applyAuthentication(user, opts as never);
    } catch (err) {
      const hint = exec.installHint && (err as { code?: string }).code === "ENOENT"
        ? ` (${exec.installHint.trim()})`
        : "";
      throw new Error(
        `${this.#opts.source}: exec plugin ${exec.command} failed: ${
          String((err as Error).message ?? err).trim()
        }${hint}`,
        { cause: err },
      );
    }
    const creds: Credentials = {};
    const auth = opts.headers["Authorization"];
    if (auth?.startsWith("Bearer ")) creds.token = auth.slice("Bearer ".length);
    if (opts.cert !== undefined && opts.key !== undefined) {
      creds.cert = opts.cert;
      creds.key = opts.key;
    }
    if (creds.token === undefined && creds.cert === undefined) {
      throw new Error(
        `${this.#opts.source}: exec plugin ${exec.command} returned neither status.token ` +
          `nor status.clientCertificateData/clientKeyData`,
      );
    }
    return creds;
  }
}
