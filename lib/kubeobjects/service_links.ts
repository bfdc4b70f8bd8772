/**
 * Service-link environment variables, as upstream's pkg/kubelet/envvars and
 * getServiceEnvVarMap: for each Service with a cluster IP, `<NAME>_SERVICE_HOST`,
 * `<NAME>_SERVICE_PORT`, `<NAME>_SERVICE_PORT_<PORTNAME>` and the Docker-link
 * style `<NAME>_PORT`, `<NAME>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]`. The
 * `kubernetes` Service of the default namespace is always included; the
 * pod's own namespace only when `enableServiceLinks` is not false, and its
 * Service of the same name wins over the default namespace's.
 *
 * @module
 */

import type { Service } from "../api/cluster_types.ts";
import { isStaticPod } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import type { PodObjects } from "./types.ts";
import { joinHostPort } from "../util/net.ts";

/** The namespace of the master services (upstream's metav1.NamespaceDefault). */
const MASTER_NAMESPACE = "default";

/** Services of the default namespace every pod gets variables for (upstream's masterServices). */
const MASTER_SERVICES = new Set(["kubernetes"]);

function envName(serviceOrPort: string): string {
  return serviceOrPort.replaceAll("-", "_").toUpperCase();
}

function hasClusterIP(s: Service): boolean {
  const ip = s.spec?.clusterIP ?? "";
  return ip !== "" && ip !== "None";
}

/**
 * The variables for a set of services (upstream's envvars.FromServices).
 * @param services services with a cluster IP (others are skipped)
 * @returns name/value pairs in upstream's order
 */
export function serviceEnvVars(services: readonly Service[]): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  for (const svc of services) {
    const ports = svc.spec?.ports ?? [];
    if (!hasClusterIP(svc) || ports.length === 0) continue;
    const ip = svc.spec.clusterIP!;
    const prefix = envName(svc.metadata.name ?? "");
    out.push({ name: `${prefix}_SERVICE_HOST`, value: ip });
    out.push({ name: `${prefix}_SERVICE_PORT`, value: String(ports[0]!.port) });
    for (const p of ports) {
      if (p.name) {
        out.push({ name: `${prefix}_SERVICE_PORT_${envName(p.name)}`, value: String(p.port) });
      }
    }
    ports.forEach((p, i) => {
      const proto = p.protocol || "TCP";
      const url = `${proto.toLowerCase()}://${joinHostPort(ip, p.port)}`;
      // Docker special-cases the first port.
      if (i === 0) out.push({ name: `${prefix}_PORT`, value: url });
      const portPrefix = `${prefix}_PORT_${p.port}_${proto.toUpperCase()}`;
      out.push(
        { name: portPrefix, value: url },
        { name: `${portPrefix}_PROTO`, value: proto.toLowerCase() },
        { name: `${portPrefix}_PORT`, value: String(p.port) },
        { name: `${portPrefix}_ADDR`, value: ip },
      );
    });
  }
  return out;
}

/**
 * Chooses the services a pod gets variables for, as upstream's
 * getServiceEnvVarMap: `kubernetes` from the default namespace always, plus
 * (with service links) every service of the pod's namespace, a same-named one
 * of the pod's namespace winning. Services without a cluster IP are skipped.
 * @param namespace the pod's namespace
 * @param enableServiceLinks the pod's setting (default true)
 * @param services the services of every namespace
 * @returns the services, ordered by name
 */
export function servicesForPod(
  namespace: string,
  enableServiceLinks: boolean,
  services: readonly Service[],
): Service[] {
  const byName = new Map<string, Service>();
  for (const s of services) {
    if (!hasClusterIP(s)) continue;
    const name = s.metadata.name ?? "";
    const ns = s.metadata.namespace ?? "";
    if (ns === MASTER_NAMESPACE && MASTER_SERVICES.has(name)) {
      if (!byName.has(name)) byName.set(name, s);
    } else if (ns === namespace && enableServiceLinks) {
      byName.set(name, s);
    }
  }
  return [...byName.keys()].sort().map((k) => byName.get(k)!);
}

/** Upstream's refusal to build an API pod's env before the Services were listed once. */
export const SERVICES_NOT_SYNCED =
  "services have not yet been read at least once, cannot construct envvars";

/**
 * The service-link variables of a pod, from the Services `objects` has
 * watched. A static pod does not wait for the first list (it may run before
 * the apiserver answers); an API pod does.
 * @param objects the object source
 * @param pod the pod
 * @returns name → value
 * @throws {Error} with upstream's message ({@link SERVICES_NOT_SYNCED}) when
 *   an API pod asks before the Services were listed once
 */
export function serviceEnvMap(objects: PodObjects, pod: Pod): Map<string, string> {
  if (!isStaticPod(pod) && !objects.servicesSynced()) throw new Error(SERVICES_NOT_SYNCED);
  const services = servicesForPod(
    pod.metadata.namespace ?? "default",
    pod.spec.enableServiceLinks !== false,
    objects.listServices(),
  );
  return new Map(serviceEnvVars(services).map((e) => [e.name, e.value]));
}
