/**
 * The kubelet's client certificate at start-up, as upstream's
 * `buildKubeletClientConfig`:
 *
 * - `--bootstrap-kubeconfig` without `rotateCertificates` (upstream's
 *   `LoadClientCert`): when `--kubeconfig` is missing, unreadable or holds an
 *   expired certificate, request one with the bootstrap credentials
 *   (CertificateSigningRequest `node-csr-<digest>`, signer
 *   `kubernetes.io/kube-apiserver-client-kubelet`, subject
 *   `system:node:<name>` in `system:nodes`), wait up to an hour for it, store it
 *   as `<cert-dir>/kubelet-client-current.pem` and write the kubeconfig
 *   pointing at it. A failure stops the start, as upstream.
 * - `rotateCertificates` (upstream's `LoadClientConfig` and client certificate
 *   manager): the same kubeconfig is written up front when it is not usable,
 *   and a {@link CertificateManager} requests the first certificate with the
 *   bootstrap credentials (retrying with backoff), then renews it with the
 *   current one before it expires. The clients authenticate with whatever pair
 *   the manager holds, switching without a restart.
 *
 * @module
 */

import { X509Certificate } from "node:crypto";
import {
  CertificateFileStore,
  digestedCsrName,
  generateEcKeyPem,
  makeCsrPem,
  pemBlocks,
  publicKeyDer,
  type StoredPair,
} from "../certs/mod.ts";
import {
  createKubeClient,
  type CredentialProvider,
  type Credentials,
  type KubeconfigAuth,
  loadKubeconfig,
} from "../kubeapi/mod.ts";
import { type Clock, realClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { CertificateManager } from "./cert_manager.ts";
import { KUBELET_CLIENT_SIGNER, requestCertificate, waitForCertificate } from "./csr_client.ts";

/** The client pair's file prefix under `--cert-dir`. */
export const CLIENT_CERT_PREFIX = "kubelet-client";
/** The key a bootstrap request keeps across restarts until its certificate is stored. */
export const BOOTSTRAP_TMP_KEY_FILE = "kubelet-client.key.tmp";
/** How long the bootstrap without rotation waits for its certificate (upstream: 3600 s). */
export const BOOTSTRAP_WAIT_MS = 3_600_000;
/**
 * How long the agent runs without a valid client certificate before it exits,
 * when the apiserver is answering (upstream's UpdateTransport exitAfter).
 */
export const NO_CERT_EXIT_AFTER_MS = 5 * 60_000;
/** How often that is checked (upstream's 10 s period). */
export const CERT_CHECK_PERIOD_MS = 10_000;

/** The usages of an ECDSA client key: upstream adds key encipherment only for RSA. */
export const CLIENT_USAGES = ["digital signature", "client auth"];

/** The subject of the node's client certificate. */
export function clientSubject(nodeName: string) {
  return { commonName: `system:node:${nodeName}`, organizations: ["system:nodes"] };
}

/** What the cluster clients authenticate with after {@link setupClientCertificate}. */
export interface ClientCertificateSetup {
  /** Replaces the kubeconfig's credentials (rotation); undefined keeps them. */
  credentials?: CredentialProvider;
  /** The running client certificate manager (rotation). */
  manager?: CertificateManager;
}

/** Options for {@link setupClientCertificate}. */
export interface ClientCertificateOptions {
  kubeconfig: string;
  /** `--bootstrap-kubeconfig`; empty when unset. */
  bootstrapKubeconfig: string;
  certDir: string;
  nodeName: string;
  rotateCertificates: boolean;
  /** Aborts a wait for the first certificate (the agent is stopping). */
  signal: AbortSignal;
  clock?: Clock;
  logger: Logger;
  userAgent?: string;
}

/**
 * Makes sure the kubelet has a client certificate and returns how its clients
 * authenticate.
 * @throws Error naming the kubeconfig, the request or the file at fault
 *   (bootstrap without rotation), or the signal's reason
 */
export async function setupClientCertificate(
  o: ClientCertificateOptions,
): Promise<ClientCertificateSetup> {
  const { logger } = o;
  const clock = o.clock ?? realClock;
  if (!o.rotateCertificates) {
    if (o.bootstrapKubeconfig) await loadClientCert(o, clock);
    return {};
  }
  logger.info("Client certificate rotation is on", { certDir: o.certDir });
  const store = new CertificateFileStore(CLIENT_CERT_PREFIX, o.certDir);
  let certAuth: KubeconfigAuth;
  let initial: { cert: string; key: string } | undefined;
  if (!o.bootstrapKubeconfig || await kubeconfigStillValid(o.kubeconfig, logger)) {
    certAuth = await loadKubeconfig(o.kubeconfig, { clock });
    const creds = await certAuth.credentials.get();
    if (creds.cert && creds.key) initial = { cert: creds.cert, key: creds.key };
  } else {
    certAuth = await loadBootstrapKubeconfig(o.bootstrapKubeconfig, clock);
    await writeKubeconfigFromBootstrapping(certAuth, o.kubeconfig, store.currentPath());
    logger.v(2).info(
      "Use the bootstrap credentials to request a cert, and set kubeconfig to point to the certificate dir",
      { kubeconfig: o.kubeconfig, certDir: o.certDir },
    );
  }
  const manager = new CertificateManager({
    kind: "client",
    store,
    signerName: KUBELET_CLIENT_SIGNER,
    usages: CLIENT_USAGES,
    template: () => clientSubjectTemplate(o.nodeName),
    client: (haveCert) => (haveCert ? currentClient : certClient),
    ...(initial ? { initial } : {}),
    clock,
    logger,
  });
  const credentials = new ManagedCertificateCredentials(manager);
  const common = { clock, ...(o.userAgent ? { userAgent: o.userAgent } : {}) };
  const certClient = createKubeClient({ kubeconfig: certAuth, ...common });
  const currentClient = createKubeClient({ kubeconfig: { ...certAuth, credentials }, ...common });
  await manager.load();
  manager.start();
  if (!manager.current()) {
    logger.info("Waiting for the first client certificate", { certDir: o.certDir });
  }
  try {
    await waitForFirstCertificate(manager, { signal: o.signal, clock, logger });
  } catch (err) {
    await manager.stop();
    certClient.close();
    currentClient.close();
    throw err;
  }
  return { credentials, manager };
}

/**
 * Waits for the manager's first certificate. As upstream, it gives up after
 * {@link NO_CERT_EXIT_AFTER_MS} without one if the apiserver is answering (a
 * rejected token: a wrapper or new bootstrap credentials may do better), and
 * says so every check while it is not answering.
 * @throws Error saying why it gave up, or the signal's reason
 */
export async function waitForFirstCertificate(
  manager: CertificateManager,
  o: { signal: AbortSignal; clock?: Clock; logger: Logger },
): Promise<StoredPair> {
  const clock = o.clock ?? realClock;
  const { logger } = o;
  const giveUp = new AbortController();
  const started = clock.now();
  const check = clock.setInterval(() => {
    if (manager.current() || clock.now() - started < NO_CERT_EXIT_AFTER_MS) return;
    if (manager.serverHealthy()) {
      giveUp.abort(
        new Error(
          `no valid client certificate after ${NO_CERT_EXIT_AFTER_MS / 60_000} minutes and the ` +
            `server is responsive, exiting: ${manager.lastError() ?? ""}`,
        ),
      );
    } else {
      logger.error(
        "No valid client certificate is found but the server is not responsive. A restart may be necessary to retrieve new initial credentials.",
        new Error(manager.lastError() ?? "no certificate"),
      );
    }
  }, CERT_CHECK_PERIOD_MS);
  try {
    return await manager.waitForCertificate(AbortSignal.any([o.signal, giveUp.signal]));
  } finally {
    check.cancel();
  }
}

/**
 * Watches the running client certificate as upstream's transport does: once
 * it has expired, the agent exits (through `exit`) if the apiserver is
 * answering, or says so every check while it is not.
 * @returns the timer; cancel it on shutdown
 */
export function watchClientCertificate(
  manager: CertificateManager,
  o: { clock?: Clock; logger: Logger; exit: () => void },
): { cancel(): void } {
  const clock = o.clock ?? realClock;
  return clock.setInterval(() => {
    const cur = manager.current();
    if (!cur || clock.now() <= cur.notAfter) return;
    if (manager.serverHealthy()) {
      o.logger.error(
        "The currently active client certificate has expired and the server is responsive, exiting.",
        new Error(`expired at ${new Date(cur.notAfter).toISOString()}`),
      );
      o.exit();
    } else {
      o.logger.error(
        "The currently active client certificate has expired, but the server is not responsive. A restart may be necessary to retrieve new initial credentials.",
        new Error(`expired at ${new Date(cur.notAfter).toISOString()}`),
      );
    }
  }, CERT_CHECK_PERIOD_MS);
}

function clientSubjectTemplate(nodeName: string) {
  return { subject: clientSubject(nodeName) };
}

/** The client credentials of whatever pair a {@link CertificateManager} holds now. */
export class ManagedCertificateCredentials implements CredentialProvider {
  readonly #manager: CertificateManager;
  constructor(manager: CertificateManager) {
    this.#manager = manager;
  }
  get(): Promise<Credentials> {
    const cur = this.#manager.current();
    return Promise.resolve(cur ? { cert: cur.cert, key: cur.key } : {});
  }
  invalidate(): boolean {
    return false;
  }
}

/**
 * Whether `path` is a kubeconfig whose client certificates are all unexpired
 * (upstream's isClientConfigStillValid): false when it is missing or
 * unusable, which is logged.
 * @throws Error when it exists but cannot be inspected
 */
export async function kubeconfigStillValid(path: string, logger: Logger): Promise<boolean> {
  try {
    await Deno.stat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw new Error(`error reading existing bootstrap kubeconfig ${path}: ${err}`, { cause: err });
  }
  let creds: Credentials;
  try {
    creds = await (await loadKubeconfig(path)).credentials.get();
  } catch (err) {
    logger.error("Unable to read existing bootstrap client config", err, { kubeconfig: path });
    return false;
  }
  const certs = pemBlocks(creds.cert ?? "");
  if (certs.length === 0) {
    logger.error(
      "Unable to read TLS certificates from existing bootstrap client config",
      new Error("no client certificate"),
      { kubeconfig: path },
    );
    return false;
  }
  const now = Date.now();
  for (const der of certs) {
    const notAfter = Date.parse(new X509Certificate(der).validTo);
    if (now > notAfter) {
      logger.error(
        "Part of the existing bootstrap client certificate is expired",
        new Error(`expired at ${new Date(notAfter).toISOString()}`),
        { kubeconfig: path },
      );
      return false;
    }
  }
  return true;
}

async function loadBootstrapKubeconfig(path: string, clock: Clock): Promise<KubeconfigAuth> {
  try {
    return await loadKubeconfig(path, { clock });
  } catch (err) {
    throw new Error(`unable to load bootstrap kubeconfig: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/** Upstream's LoadClientCert: one bootstrap, or nothing when the kubeconfig is still valid. */
async function loadClientCert(o: ClientCertificateOptions, clock: Clock): Promise<void> {
  const { logger } = o;
  if (await kubeconfigStillValid(o.kubeconfig, logger)) {
    logger.v(2).info("Kubeconfig exists and is valid, skipping bootstrap", { path: o.kubeconfig });
    return;
  }
  logger.v(2).info(
    "Using bootstrap kubeconfig to generate TLS client cert, key and kubeconfig file",
  );
  const auth = await loadBootstrapKubeconfig(o.bootstrapKubeconfig, clock);
  const client = createKubeClient({
    kubeconfig: auth,
    clock,
    ...(o.userAgent ? { userAgent: o.userAgent } : {}),
  });
  try {
    const store = new CertificateFileStore(CLIENT_CERT_PREFIX, o.certDir);
    // Reuse the stored key, or the one a previous attempt left, so a restart finds its CSR.
    let keyPem: string | undefined;
    try {
      keyPem = (await store.current())?.key;
    } catch {
      keyPem = undefined;
    }
    const tmpKey = `${o.certDir}/${BOOTSTRAP_TMP_KEY_FILE}`;
    keyPem ??= await loadOrGenerateKey(tmpKey);
    const subject = clientSubject(o.nodeName);
    const csrPem = makeCsrPem(keyPem, { subject });
    const name = digestedCsrName(publicKeyDer(keyPem), subject, CLIENT_USAGES);
    const req = await requestCertificate(client, {
      csrPem,
      name,
      signerName: KUBELET_CLIENT_SIGNER,
      usages: CLIENT_USAGES,
    }, logger);
    logger.v(2).info("Waiting for client certificate to be issued", { csr: req.name });
    const signal = AbortSignal.any([o.signal, AbortSignal.timeout(BOOTSTRAP_WAIT_MS)]);
    const certPem = await waitForCertificate(client, req, { signal, logger, clock });
    await store.update(certPem, keyPem, clock.now());
    await Deno.remove(tmpKey).catch(() => {});
    await writeKubeconfigFromBootstrapping(auth, o.kubeconfig, store.currentPath());
  } finally {
    client.close();
  }
}

/** Upstream's keyutil.LoadOrGenerateKeyFile: the key at `path`, or a new one written there 0600. */
async function loadOrGenerateKey(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) {
      throw new Error(`error loading key from ${path}: ${err}`, { cause: err });
    }
  }
  const key = generateEcKeyPem();
  const dir = path.slice(0, path.lastIndexOf("/")) || "/";
  try {
    await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
    await Deno.writeTextFile(path, key, { mode: 0o600 });
  } catch (err) {
    throw new Error(`error writing key to ${path}: ${(err as Error).message}`, { cause: err });
  }
  return key;
}

/**
 * Writes the kubeconfig upstream writes after bootstrapping: the bootstrap
 * kubeconfig's server, CA (its file, else its data) and TLS verification, and
 * a user whose client certificate and key are both `pemPath`.
 * @throws Error naming the kubeconfig when it cannot be written
 */
export async function writeKubeconfigFromBootstrapping(
  auth: KubeconfigAuth,
  kubeconfigPath: string,
  pemPath: string,
): Promise<void> {
  const cluster: Record<string, unknown> = { server: auth.server };
  if (auth.insecureSkipTLSVerify) cluster["insecure-skip-tls-verify"] = true;
  if (auth.caFile) cluster["certificate-authority"] = auth.caFile;
  else if (auth.caCert) cluster["certificate-authority-data"] = btoa(auth.caCert);
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "default-cluster", cluster }],
    contexts: [{
      name: "default-context",
      context: { cluster: "default-cluster", namespace: "default", user: "default-auth" },
    }],
    "current-context": "default-context",
    preferences: {},
    users: [{
      name: "default-auth",
      user: { "client-certificate": pemPath, "client-key": pemPath },
    }],
  };
  const { stringify } = await import("yaml");
  const dir = kubeconfigPath.slice(0, kubeconfigPath.lastIndexOf("/")) || "/";
  const tmp = `${kubeconfigPath}.tmp-${crypto.randomUUID()}`;
  try {
    await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
    await Deno.writeTextFile(tmp, stringify(config), { mode: 0o600 });
    await Deno.rename(tmp, kubeconfigPath);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw new Error(`cannot write kubeconfig ${kubeconfigPath}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}
