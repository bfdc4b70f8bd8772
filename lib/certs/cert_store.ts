/**
 * client-go's certificate file store, as the kubelet keeps its client and
 * serving pairs under `--cert-dir`: each new pair goes into
 * `<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem` (certificates, then the key; mode
 * 0600) and `<prefix>-current.pem` is a symlink to the newest, switched
 * through a `<prefix>-updated.pem` symlink and a rename so a reader never
 * sees it missing.
 *
 * @module
 */

import { createPrivateKey, X509Certificate } from "node:crypto";
import { pemBlocks, toPem } from "./x509.ts";

/** A certificate chain and its key, PEM, with the leaf's validity. */
export interface StoredPair {
  /** The certificates, leaf first. */
  cert: string;
  key: string;
  /** The leaf's validity, epoch ms. */
  notBefore: number;
  notAfter: number;
  /** The leaf's serial number, upper-case hex. */
  serial: string;
  /** The file it was read from. */
  path: string;
}

/** A cert/key pair under one prefix in one directory. */
export class CertificateFileStore {
  readonly dir: string;
  readonly prefix: string;

  /**
   * @param prefix `kubelet-client` or `kubelet-server`
   * @param dir `--cert-dir`
   */
  constructor(prefix: string, dir: string) {
    this.prefix = prefix;
    this.dir = dir;
  }

  /** `<dir>/<prefix>-current.pem`, what a kubeconfig written by the bootstrap names. */
  currentPath(): string {
    return `${this.dir}/${this.prefix}-current.pem`;
  }

  /**
   * The current pair, or undefined when there is none: as upstream, a
   * current symlink left half-switched (only `-updated.pem`) is completed first.
   * @throws Error naming the file when it exists but holds no usable pair
   */
  async current(): Promise<StoredPair | undefined> {
    await this.#recover();
    const path = this.currentPath();
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      throw new Error(`cannot read ${path}: ${(err as Error).message}`, { cause: err });
    }
    return parsePair(text, text, path);
  }

  /**
   * Writes a new pair and points the current symlink at it.
   * @param certPem the issued certificate chain
   * @param keyPem its private key
   * @param now epoch ms naming the file
   * @returns the stored pair
   * @throws Error naming the directory or file that could not be written
   */
  async update(certPem: string, keyPem: string, now = Date.now()): Promise<StoredPair> {
    const certs = pemBlocks(certPem);
    if (certs.length === 0) throw new Error("invalid certificate data: no PEM certificate");
    const key = privateKeyBlock(keyPem);
    if (!key) throw new Error("invalid key data: no PEM private key");
    try {
      await Deno.mkdir(this.dir, { recursive: true, mode: 0o755 });
    } catch (err) {
      throw new Error(
        `could not create directory ${this.dir} to store certificates: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const path = `${this.dir}/${this.prefix}-${timestamp(now)}.pem`;
    const text = certs.map((c) => toPem("CERTIFICATE", c)).join("") + key;
    try {
      await Deno.writeTextFile(path, text, { mode: 0o600 });
      await Deno.chmod(path, 0o600);
    } catch (err) {
      throw new Error(`could not write ${path}: ${(err as Error).message}`, { cause: err });
    }
    const pair = parsePair(text, text, path);
    await this.#updateSymlink(path);
    return { ...pair, path: this.currentPath() };
  }

  async #recover(): Promise<void> {
    if (await lstat(this.currentPath())) return;
    const updated = `${this.dir}/${this.prefix}-updated.pem`;
    const info = await lstat(updated);
    if (!info) return;
    if (!info.isSymlink) throw new Error(`expected ${updated} to be a symlink but it is a file`);
    await Deno.rename(updated, this.currentPath());
  }

  async #updateSymlink(target: string): Promise<void> {
    const current = this.currentPath();
    const updated = `${this.dir}/${this.prefix}-updated.pem`;
    const cur = await lstat(current);
    if (cur && !cur.isSymlink) {
      throw new Error(`expected ${current} to be a symlink but it is a file`);
    }
    const upd = await lstat(updated);
    if (upd && !upd.isSymlink) {
      throw new Error(`expected ${updated} to be a symlink but it is a file`);
    }
    try {
      if (upd) await Deno.remove(updated);
      await Deno.symlink(target, updated);
      // rename(2) replaces the old link atomically.
      await Deno.rename(updated, current);
    } catch (err) {
      throw new Error(`unable to point ${current} at ${target}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
}

/** The first PEM private key block in `text`, newline-terminated. */
function privateKeyBlock(text: string): string | undefined {
  const m = /-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]*?-----END \1PRIVATE KEY-----/.exec(text);
  return m ? `${m[0]}\n` : undefined;
}

async function lstat(path: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.lstat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
}

/** Go's "2006-01-02-15-04-05" in local time, as upstream's `time.Now().Format`. */
function timestamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}-${p(d.getHours())}-${
    p(d.getMinutes())
  }-${p(d.getSeconds())}`;
}

/**
 * Parses a pair: the leaf (first certificate) and a key that belongs to it.
 * @throws Error naming `path` when either is missing or they do not match
 */
export function parsePair(certText: string, keyText: string, path: string): StoredPair {
  const first = pemBlocks(certText)[0];
  if (!first) throw new Error(`${path} holds no PEM certificate`);
  const keyPem = privateKeyBlock(keyText);
  if (!keyPem) throw new Error(`${path} holds no PEM private key`);
  let leaf: X509Certificate;
  let key;
  try {
    leaf = new X509Certificate(first);
    key = createPrivateKey(keyPem);
  } catch (err) {
    throw new Error(`could not convert data from ${path} into cert/key pair: ${err}`, {
      cause: err,
    });
  }
  if (!leaf.checkPrivateKey(key)) {
    throw new Error(`${path}: the private key does not match the certificate`);
  }
  const blocks = pemBlocks(certText).map((c) => toPem("CERTIFICATE", c)).join("");
  return {
    cert: blocks,
    key: keyPem,
    notBefore: Date.parse(leaf.validFrom),
    notAfter: Date.parse(leaf.validTo),
    serial: leaf.serialNumber.toUpperCase(),
    path,
  };
}
