/**
 * The kubelet's serving certificate from the cluster (`serverTLSBootstrap`),
 * as upstream's NewKubeletServerCertificateManager: a `kubernetes.io/kubelet-serving`
 * CSR for `system:node:<name>` in `system:nodes`, naming the Node's addresses
 * (Hostname and *DNS as DNS names, *IP as IPs; none is requested until the
 * Node has an IP address), approved by an operator or an approver, stored as
 * `<cert-dir>/kubelet-server-current.pem` and renewed like the client
 * certificate — and again when the Node's addresses change.
 *
 * @module
 */

import {
  type CertificateFileStore,
  type CsrTemplate,
  ipBytes,
  type ServingCertSource,
} from "../certs/mod.ts";
import type { NodeAddress } from "../api/cluster_types.ts";
import type { KubeClient } from "../kubeapi/mod.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { CertificateManager } from "./cert_manager.ts";
import { clientSubject } from "./client_cert.ts";
import { KUBELET_SERVING_SIGNER } from "./csr_client.ts";

/** The serving pair's file prefix under `--cert-dir`. */
export const SERVING_CERT_PREFIX = "kubelet-server";
/** The usages of an ECDSA serving key: upstream adds key encipherment only for RSA. */
export const SERVING_USAGES = ["digital signature", "server auth"];

function isIP(s: string): boolean {
  try {
    ipBytes(s);
    return true;
  } catch {
    return false;
  }
}

/**
 * What a serving CSR asks for, from the Node's addresses: undefined while
 * they hold no IP (upstream requires one; DNS-only CSRs are behind a
 * deprecated gate that is off).
 */
export function servingTemplate(
  nodeName: string,
  addresses: readonly NodeAddress[] | undefined,
): CsrTemplate | undefined {
  const dns = new Set<string>();
  const ips = new Set<string>();
  for (const a of addresses ?? []) {
    if (!a.address) continue;
    if (a.type === "Hostname") (isIP(a.address) ? ips : dns).add(a.address);
    else if (a.type === "InternalIP" || a.type === "ExternalIP") {
      if (isIP(a.address)) ips.add(a.address);
    } else if (a.type === "InternalDNS" || a.type === "ExternalDNS") dns.add(a.address);
  }
  if (ips.size === 0) return undefined;
  return {
    subject: clientSubject(nodeName),
    dnsNames: [...dns].sort(),
    ipAddresses: [...ips].sort(),
  };
}

/** The serving certificate of a node that cannot request one (no apiserver): never issued. */
export const NEVER_ISSUED: Pick<RequestedServing, "ready" | "keyType"> = {
  keyType: "ec",
  ready: (signal) =>
    new Promise((_, reject) => {
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    }),
};

/** Options for {@link requestServingCertificate}. */
export interface ServingCertificateOptions {
  client: KubeClient;
  store: CertificateFileStore;
  nodeName: string;
  /** The Node's addresses as last observed (its status), undefined before registration. */
  addresses: () => readonly NodeAddress[] | undefined;
  /** `tlsCertFile`/`tlsPrivateKeyFile` contents, the starting pair when the store is empty. */
  initial?: { cert: string; key: string };
  clock?: Clock;
  logger: Logger;
}

/** A running serving certificate manager and the secure server's view of it. */
export interface RequestedServing {
  manager: CertificateManager;
  /** For the secure server: resolves once a certificate is issued. */
  ready(signal: AbortSignal): Promise<ServingCertSource>;
  keyType: string;
}

/**
 * Loads the stored serving pair and starts the manager that requests and
 * renews it.
 * @throws Error when the store holds a broken pair
 */
export async function requestServingCertificate(
  o: ServingCertificateOptions,
): Promise<RequestedServing> {
  const manager = new CertificateManager({
    kind: "serving",
    store: o.store,
    signerName: KUBELET_SERVING_SIGNER,
    usages: SERVING_USAGES,
    template: () => servingTemplate(o.nodeName, o.addresses()),
    client: () => o.client,
    ...(o.initial ? { initial: o.initial } : {}),
    ...(o.clock ? { clock: o.clock } : {}),
    logger: o.logger,
  });
  await manager.load();
  manager.start();
  const source: ServingCertSource = {
    current: () => {
      const cur = manager.current();
      if (!cur) throw new Error("no serving certificate issued yet");
      return { cert: cur.cert, key: cur.key };
    },
    onChange: (fn) => manager.onChange((pair) => fn({ cert: pair.cert, key: pair.key })),
  };
  return {
    manager,
    keyType: "ec",
    ready: async (signal) => {
      await manager.waitForCertificate(signal);
      return source;
    },
  };
}
