/**
 * certificates.k8s.io/v1 CertificateSigningRequests as client-go's
 * `util/certificate/csr` uses them: create one (or, under a fixed name that
 * already exists, reuse it when it asks for the same thing), then watch it
 * until it is approved and carries a certificate, or is denied, fails or is
 * deleted.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { ApiError, isAlreadyExists, type KubeClient } from "../kubeapi/mod.ts";
import { type Clock, realClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";

const CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

/** The signer of the kubelet's client certificate. */
export const KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet";
/** The signer of the kubelet's serving certificate. */
export const KUBELET_SERVING_SIGNER = "kubernetes.io/kubelet-serving";

/** The parts of a CertificateSigningRequest read here. */
export interface CertificateSigningRequest {
  metadata: { name?: string; generateName?: string; uid?: string; resourceVersion?: string };
  spec: {
    request: string;
    signerName: string;
    usages: string[];
    expirationSeconds?: number;
  };
  status?: {
    conditions?: { type: string; status?: string; reason?: string; message?: string }[];
    certificate?: string;
  };
}

/** What to request. */
export interface CsrRequest {
  /** The PKCS#10 request, PEM. */
  csrPem: string;
  /** A fixed object name; `csr-` plus a generated suffix when absent. */
  name?: string;
  signerName: string;
  usages: string[];
  expirationSeconds?: number;
}

/** Why a request ended without a certificate (denied, failed, deleted, replaced). */
export class CsrRejectedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CsrRejectedError";
  }
}

/**
 * Creates the CertificateSigningRequest.
 * @returns its name and UID
 * @throws CsrRejectedError when a same-named request asks for something else;
 *   the client's ApiError (401 for a rejected token, 403 for missing RBAC) otherwise
 */
export async function requestCertificate(
  client: KubeClient,
  req: CsrRequest,
  logger?: Logger,
): Promise<{ name: string; uid: string }> {
  const request = Buffer.from(req.csrPem).toString("base64");
  const body: CertificateSigningRequest & { apiVersion: string; kind: string } = {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: req.name ? { name: req.name } : { generateName: "csr-" },
    spec: { request, signerName: req.signerName, usages: req.usages },
  };
  if (req.expirationSeconds !== undefined) body.spec.expirationSeconds = req.expirationSeconds;
  try {
    const made = await client.create<CertificateSigningRequest>(CSR_PATH, body);
    logger?.v(2).info("Certificate signing request created", { csr: made.metadata.name });
    return { name: made.metadata.name ?? "", uid: made.metadata.uid ?? "" };
  } catch (err) {
    if (!(req.name && isAlreadyExists(err))) {
      throw wrap(`cannot create certificate signing request`, err);
    }
  }
  logger?.info("csr for this node already exists, reusing", { csr: req.name });
  let existing: CertificateSigningRequest;
  try {
    existing = await client.get<CertificateSigningRequest>(`${CSR_PATH}/${req.name}`);
  } catch (err) {
    throw wrap("cannot retrieve certificate signing request", err);
  }
  // As client-go's ensureCompatible: same request, signer and usages.
  const same = existing.spec.request === request && existing.spec.signerName === req.signerName &&
    JSON.stringify(existing.spec.usages ?? []) === JSON.stringify(req.usages);
  if (!same) {
    throw new CsrRejectedError(
      `retrieved csr ${req.name} is not compatible: it asks for a different request, signer or usages`,
    );
  }
  return { name: req.name, uid: existing.metadata.uid ?? "" };
}

function wrap(what: string, err: unknown): Error {
  const msg = `${what}: ${(err as Error).message ?? err}`;
  if (err instanceof ApiError) return new ApiError(msg, err.status, err.reason, { cause: err });
  return new Error(msg, { cause: err });
}

/**
 * Whether a request is settled: the certificate PEM once approved and issued,
 * undefined while pending.
 * @throws CsrRejectedError when denied or failed, or when its UID changed
 */
export function issuedCertificate(csr: CertificateSigningRequest, uid: string): string | undefined {
  const name = csr.metadata.name ?? "";
  if (uid && csr.metadata.uid !== uid) throw new CsrRejectedError(`csr "${name}" changed UIDs`);
  let approved = false;
  for (const c of csr.status?.conditions ?? []) {
    if (c.type === "Denied") {
      throw new CsrRejectedError(
        `certificate signing request ${name} is denied, reason: ${c.reason ?? ""}, message: ${
          c.message ?? ""
        }`,
      );
    }
    if (c.type === "Failed") {
      throw new CsrRejectedError(
        `certificate signing request ${name} failed, reason: ${c.reason ?? ""}, message: ${
          c.message ?? ""
        }`,
      );
    }
    if (c.type === "Approved") approved = true;
  }
  if (!approved || !csr.status?.certificate) return undefined;
  return Buffer.from(csr.status.certificate, "base64").toString("utf8");
}

/**
 * Waits for the request to be issued: a list, then a watch from its
 * resourceVersion, re-listed when the watch ends, until settled or aborted.
 * @returns the issued certificate chain, PEM
 * @throws CsrRejectedError when denied, failed or deleted; the signal's reason when aborted
 */
export async function waitForCertificate(
  client: KubeClient,
  csr: { name: string; uid: string },
  opts: { signal: AbortSignal; logger?: Logger; clock?: Clock },
): Promise<string> {
  const { name, uid } = csr;
  const { signal, logger } = opts;
  const clock = opts.clock ?? realClock;
  const fieldSelector = `metadata.name=${name}`;
  for (;;) {
    signal.throwIfAborted();
    let rv: string | undefined;
    try {
      const list = await client.list<CertificateSigningRequest>(CSR_PATH, {
        query: { fieldSelector },
        signal,
      });
      const csr = list.items[0];
      if (!csr) throw new CsrRejectedError(`csr "${name}" was deleted`);
      const pem = issuedCertificate(csr, uid);
      if (pem) return pem;
      rv = list.metadata.resourceVersion;
    } catch (err) {
      if (err instanceof CsrRejectedError || signal.aborted) throw err;
      logger?.v(2).info("Error fetching certificate signing request", { csr: name, err: `${err}` });
      await clock.sleep(1000, signal);
      continue;
    }
    let result: { pem?: string; error?: Error } = {};
    const done = new AbortController();
    try {
      await client.watch<CertificateSigningRequest>(CSR_PATH, (ev) => {
        if (ev.type === "DELETED") {
          result = { error: new CsrRejectedError(`csr "${name}" was deleted`) };
        } else if (ev.type === "ADDED" || ev.type === "MODIFIED") {
          try {
            const pem = issuedCertificate(ev.object, uid);
            if (pem) result = { pem };
            else if (isApproved(ev.object)) {
              logger?.v(2).info("Certificate signing request is approved, waiting to be issued", {
                csr: name,
              });
            }
          } catch (err) {
            result = { error: err as Error };
          }
        } else return;
        if (result.pem || result.error) done.abort();
      }, {
        query: {
          fieldSelector,
          ...(rv ? { resourceVersion: rv } : {}),
          allowWatchBookmarks: "true",
          timeoutSeconds: "300",
        },
        signal: AbortSignal.any([signal, done.signal]),
      });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      logger?.v(2).info("Certificate signing request watch ended", { csr: name, err: `${err}` });
    }
    if (result.error) throw result.error;
    if (result.pem) return result.pem;
    signal.throwIfAborted();
  }
}

function isApproved(csr: CertificateSigningRequest): boolean {
  return (csr.status?.conditions ?? []).some((c) => c.type === "Approved");
}
