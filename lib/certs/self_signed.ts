/**
 * The kubelet's self-signed serving certificate, as upstream's InitializeTLS
 * makes it when neither `tlsCertFile` nor `tlsPrivateKeyFile` is set: a CA
 * and a leaf it signs (client-go `GenerateSelfSignedCertKey`), written once to
 * `<cert-dir>/kubelet.crt` (leaf then CA) and `<cert-dir>/kubelet.key`
 * (PKCS#1), and reused while both files are readable.
 *
 * @module
 */

import {
  EXT_KEY_USAGE,
  generateRsaKeyPair,
  ipBytes,
  issueCertificate,
  KEY_USAGE,
  rsaPrivateKeyPkcs1,
  toPem,
} from "./x509.ts";

/** Upstream's file names under `--cert-dir`. */
export const SELF_SIGNED_CERT_FILE = "kubelet.crt";
/** Upstream's file names under `--cert-dir`. */
export const SELF_SIGNED_KEY_FILE = "kubelet.key";

const HOUR_MS = 3_600_000;
/** One year, as client-go's self-signed certificates. */
export const SELF_SIGNED_VALIDITY_MS = 365 * 24 * HOUR_MS;

/** Options for {@link generateSelfSignedCertKey}. */
export interface SelfSignedOptions {
  /** The hostname (or an IP); it names both certificates and is the first SAN. */
  host: string;
  /** More IP SANs (the node's IPs). */
  ips?: string[];
  /** More DNS SANs. */
  dnsNames?: string[];
  /** Epoch ms; default `Date.now()`. */
  now?: number;
}

/** PEM text of a certificate chain and its key. */
export interface CertKeyPem {
  /** The leaf, then the CA that signed it. */
  cert: string;
  /** The leaf's key, `RSA PRIVATE KEY` (PKCS#1). */
  key: string;
}

function isIP(s: string): boolean {
  try {
    ipBytes(s);
    return true;
  } catch {
    return false;
  }
}

/**
 * Generates a CA and a serving certificate it signs, upstream's shape:
 * valid from an hour ago for a year; CA `<host>-ca@<unix>`, serial 1, usages
 * certSign/digitalSignature/keyEncipherment; leaf `<host>@<unix>`, serial 2,
 * digitalSignature/keyEncipherment, extended usage serverAuth; the host as a
 * DNS or IP SAN, then `ips` and `dnsNames`.
 */
export async function generateSelfSignedCertKey(opts: SelfSignedOptions): Promise<CertKeyPem> {
  const now = opts.now ?? Date.now();
  const unix = Math.floor(now / 1000);
  const notBefore = now - HOUR_MS;
  const notAfter = notBefore + SELF_SIGNED_VALIDITY_MS;
  const caKeys = await generateRsaKeyPair();
  const caName = { commonName: `${opts.host}-ca@${unix}` };
  const caDer = await issueCertificate({
    serial: 1,
    subject: caName,
    notBefore,
    notAfter,
    keyUsage: [KEY_USAGE.digitalSignature, KEY_USAGE.keyEncipherment, KEY_USAGE.keyCertSign],
    isCA: true,
  }, caKeys);
  const keys = await generateRsaKeyPair();
  const hostIsIP = isIP(opts.host);
  const leafDer = await issueCertificate(
    {
      serial: 2,
      subject: { commonName: `${opts.host}@${unix}` },
      notBefore,
      notAfter,
      keyUsage: [KEY_USAGE.digitalSignature, KEY_USAGE.keyEncipherment],
      extKeyUsage: [EXT_KEY_USAGE.serverAuth],
      isCA: false,
      dnsNames: [...(hostIsIP ? [] : [opts.host]), ...(opts.dnsNames ?? [])],
      ipAddresses: [...(hostIsIP ? [opts.host] : []), ...(opts.ips ?? [])],
    },
    keys,
    { name: caName, keys: caKeys },
  );
  return {
    cert: toPem("CERTIFICATE", leafDer) + toPem("CERTIFICATE", caDer),
    key: toPem("RSA PRIVATE KEY", await rsaPrivateKeyPkcs1(keys.privateKey)),
  };
}

/** Options for {@link ensureSelfSignedCert}. */
export interface EnsureSelfSignedOptions extends SelfSignedOptions {
  /** `--cert-dir`. */
  certDir: string;
}

/** Where the serving certificate lives and whether this call made it. */
export interface ServingCertFiles {
  certFile: string;
  keyFile: string;
  generated: boolean;
}

async function readable(path: string): Promise<boolean> {
  try {
    (await Deno.open(path, { read: true })).close();
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw new Error(`cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Returns `<certDir>/kubelet.crt` and `kubelet.key`, generating them first
 * unless both are readable (upstream's CanReadCertAndKey). The key is written
 * 0600 and both through a rename, so a crash leaves no half-written file.
 */
export async function ensureSelfSignedCert(
  opts: EnsureSelfSignedOptions,
): Promise<ServingCertFiles> {
  const certFile = `${opts.certDir}/${SELF_SIGNED_CERT_FILE}`;
  const keyFile = `${opts.certDir}/${SELF_SIGNED_KEY_FILE}`;
  const [haveCert, haveKey] = await Promise.all([readable(certFile), readable(keyFile)]);
  if (haveCert && haveKey) return { certFile, keyFile, generated: false };
  const pem = await generateSelfSignedCertKey(opts);
  await Deno.mkdir(opts.certDir, { recursive: true, mode: 0o755 });
  await writeAtomic(keyFile, pem.key, 0o600);
  await writeAtomic(certFile, pem.cert, 0o644);
  return { certFile, keyFile, generated: true };
}

async function writeAtomic(path: string, text: string, mode: number): Promise<void> {
  const tmp = `${path}.tmp-${crypto.randomUUID()}`;
  try {
    await Deno.writeTextFile(tmp, text, { mode });
    await Deno.chmod(tmp, mode);
    await Deno.rename(tmp, path);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw new Error(`cannot write ${path}: ${(err as Error).message}`, { cause: err });
  }
}

/** Options for {@link resolveServingCertFiles}. */
export interface ResolveServingCertOptions extends SelfSignedOptions {
  /** `tlsCertFile`; empty when unset. */
  tlsCertFile: string;
  /** `tlsPrivateKeyFile`; empty when unset. */
  tlsPrivateKeyFile: string;
  /** `--cert-dir`. */
  certDir: string;
}

/**
 * The serving certificate files to load: the configured pair when both are
 * set, else the self-signed pair under `--cert-dir` (made on first use).
 * @throws Error when only one of the two files is configured
 */
export async function resolveServingCertFiles(
  opts: ResolveServingCertOptions,
): Promise<ServingCertFiles> {
  const { tlsCertFile, tlsPrivateKeyFile, certDir, ...selfSigned } = opts;
  if (tlsCertFile && tlsPrivateKeyFile) {
    return { certFile: tlsCertFile, keyFile: tlsPrivateKeyFile, generated: false };
  }
  if (tlsCertFile || tlsPrivateKeyFile) {
    throw new Error(
      `tlsCertFile (${JSON.stringify(tlsCertFile)}) and tlsPrivateKeyFile (${
        JSON.stringify(tlsPrivateKeyFile)
      }) must be set together`,
    );
  }
  return await ensureSelfSignedCert({ certDir, ...selfSigned });
}
