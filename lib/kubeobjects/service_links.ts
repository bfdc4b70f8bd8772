/**
 * Service-link environment variables, as upstream's pkg/kubelet/envvars and
 * getServiceEnvVarMap: for each Service with a cluster IP, `<NAME>_SERVICE_HOST`,
 * `<NAME>_SERVICE_PORT`, `<NAME>_SERVICE_PORT_<PORTNAME>` and the Docker-link
 * style `<NAME>_PORT`, `<NAME>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]`. The
 * `kubernetes` Service of the default namespace is always included; the
 * pod's own namespace only when `enableServiceLinks` is not false.
 *
 * @module
 */

import type { Service } from "../api/cluster_types.ts";
import type { PodObjects } from "./types.ts";

/** Services of the default namespace every pod gets variables for (upstream's masterServices). */
const MASTER_SERVICES = new Set(["kubernetes"]);

function envName(serviceOrPort: string): string {
  return serviceOrPort.replaceAll("-", "_").toUpperCase();
}

function hasClusterIP(s: Service): boolean {
  const ip = s.spec?.clusterIP ?? "";
  return ip !== "" && ip !== "None";
}

function joinHostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
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
 * Chooses the services a pod gets variables for: `kubernetes` from the
 * default namespace, plus (with service links) every service of the pod's
 * namespace, a same-named one of the pod's namespace winning.
 * @param namespace the pod's namespace
 * @param enableServiceLinks the pod's setting (default true)
 * @param inNamespace the services of `namespace`
 * @param inDefault the services of the default namespace
 * @returns the services, ordered by name
 */
export function servicesForPod(
  namespace: string,
  enableServiceLinks: boolean,
  inNamespace: readonly Service[],
  inDefault: readonly Service[],
): Service[] {
  const byName = new Map<string, Service>();
  for (const s of inDefault) {
    const name = s.metadata.name ?? "";
    if (hasClusterIP(s) && MASTER_SERVICES.has(name)) byName.set(name, s);
  }
  if (enableServiceLinks) {
    for (const s of inNamespace) {
      if (hasClusterIP(s) && (s.metadata.namespace ?? namespace) === namespace) {
        byName.set(s.metadata.name ?? "", s);
      }
    }
  }
  return [...byName.keys()].sort().map((k) => byName.get(k)!);
}

/**
 * The service-link variables of a pod, read through `objects`.
 * @param objects the object source
 * @param namespace the pod's namespace
 * @param enableServiceLinks `spec.enableServiceLinks` (undefined means true)
 * @param signal cancels the reads
 * @returns name → value
 * @throws {Error} when services cannot be listed
 */
export async function serviceEnvMap(
  objects: PodObjects,
  namespace: string,
  enableServiceLinks: boolean | undefined,
  signal?: AbortSignal,
): Promise<Map<string, string>> {
  const links = enableServiceLinks !== false;
  const opts = signal ? { signal } : {};
  const inDefault = await objects.listServices("default", opts);
  const inNamespace = !links
    ? []
    : namespace === "default"
    ? inDefault
    : await objects.listServices(namespace, opts);
  const services = servicesForPod(namespace, links, inNamespace, inDefault);
  return new Map(serviceEnvVars(services).map((e) => [e.name, e.value]));
}
