/**
 * TLS bootstrap and certificate rotation: CertificateSigningRequests for the
 * kubelet's client certificate (from `--bootstrap-kubeconfig`, then renewed
 * with `rotateCertificates`) and its serving certificate
 * (`serverTLSBootstrap`), kept under `--cert-dir` as upstream's file store.
 *
 * ```ts
 * import { setupClientCertificate } from "./lib/bootstrap/mod.ts";
 * const { credentials, manager } = await setupClientCertificate({
 *   kubeconfig: "/var/lib/kubelet/kubeconfig", bootstrapKubeconfig: "/etc/kubernetes/bootstrap-kubelet.conf",
 *   certDir: "/var/lib/kubelet/pki", nodeName: "node-1", rotateCertificates: true,
 *   signal: AbortSignal.timeout(3_600_000), logger,
 * });
 * ```
 *
 * @module
 */

export {
  CERTIFICATE_WAIT_TIMEOUT_MS,
  CertificateManager,
  type CertificateManagerOptions,
  certSatisfiesTemplate,
  ROTATION_BACKOFF_INITIAL_MS,
  ROTATION_BACKOFF_STEPS,
  ROTATION_RETRY_MS,
  rotationDeadline,
} from "./cert_manager.ts";
export {
  BOOTSTRAP_TMP_KEY_FILE,
  BOOTSTRAP_WAIT_MS,
  CERT_CHECK_PERIOD_MS,
  CLIENT_CERT_PREFIX,
  CLIENT_USAGES,
  type ClientCertificateOptions,
  type ClientCertificateSetup,
  clientSubject,
  kubeconfigStillValid,
  ManagedCertificateCredentials,
  NO_CERT_EXIT_AFTER_MS,
  setupClientCertificate,
  waitForFirstCertificate,
  watchClientCertificate,
  writeKubeconfigFromBootstrapping,
} from "./client_cert.ts";
export {
  type CertificateSigningRequest,
  CsrRejectedError,
  type CsrRequest,
  issuedCertificate,
  KUBELET_CLIENT_SIGNER,
  KUBELET_SERVING_SIGNER,
  requestCertificate,
  waitForCertificate,
} from "./csr_client.ts";
export {
  NEVER_ISSUED,
  type RequestedServing,
  requestServingCertificate,
  SERVING_CERT_PREFIX,
  SERVING_USAGES,
  type ServingCertificateOptions,
  servingTemplate,
} from "./serving_cert.ts";
