/**
 * Certificates without openssl: X.509 v3 built with a small DER encoder and
 * signed with WebCrypto, the kubelet's self-signed serving certificate under
 * `--cert-dir` (upstream's `kubelet.crt`/`kubelet.key`), and a
 * {@link ServingCertificate} that reloads the files when they change; PKCS#10
 * requests with ECDSA keys and client-go's certificate file store
 * (`kubelet-client-current.pem`), for TLS bootstrap and rotation.
 *
 * ```ts
 * import { ensureSelfSignedCert, ServingCertificate } from "./lib/certs/mod.ts";
 * const files = await ensureSelfSignedCert({ certDir: "/var/lib/kubelet/pki", host: "node-1" });
 * const serving = await ServingCertificate.load(files);
 * serving.onChange(({ cert, key }) => server.setSecureContext({ cert, key }));
 * serving.start();
 * ```
 *
 * @module
 */

export {
  type CertificateTemplate,
  type DistinguishedName,
  EXT_KEY_USAGE,
  generateRsaKeyPair,
  ipBytes,
  issueCertificate,
  type Issuer,
  KEY_USAGE,
  pemBlocks,
  type RsaKeyPair,
  rsaPrivateKeyPkcs1,
  toPem,
} from "./x509.ts";
export {
  type CertKeyPem,
  ensureSelfSignedCert,
  type EnsureSelfSignedOptions,
  generateSelfSignedCertKey,
  resolveServingCertFiles,
  type ResolveServingCertOptions,
  SELF_SIGNED_CERT_FILE,
  SELF_SIGNED_KEY_FILE,
  SELF_SIGNED_VALIDITY_MS,
  type SelfSignedOptions,
  type ServingCertFiles,
} from "./self_signed.ts";
export { type CertificateInfo, certificateInfo } from "./parse.ts";
export {
  type CsrTemplate,
  digestedCsrName,
  generateEcKeyPem,
  makeCsrPem,
  publicKeyDer,
} from "./csr.ts";
export { CertificateFileStore, parsePair, type StoredPair } from "./cert_store.ts";
export {
  type CertKey,
  SERVING_CERT_RESYNC_MS,
  ServingCertificate,
  type ServingCertificateOptions,
  type ServingCertSource,
  validateCertKey,
} from "./serving_cert.ts";
