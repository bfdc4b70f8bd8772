/**
 * An in-memory source of the API objects a pod refers to (config maps, secrets, service
 * account tokens, services), for the volume and env tests: the test fills its maps and
 * reads back what was asked.
 *
 * @module
 */

import type { ConfigMap, RuntimeClass, Secret, Service } from "../../lib/api/cluster_types.ts";
import {
  ObjectNotFoundError,
  type PodObjects,
  type ServiceAccountTokenRequest,
} from "../../lib/kubeobjects/mod.ts";

/** A {@link PodObjects} over maps the test fills, recording every read. */
export class FakePodObjects implements PodObjects {
  /** By `namespace/name`. */
  configMaps = new Map<string, ConfigMap>();
  /** By `namespace/name`. */
  secrets = new Map<string, Secret>();
  /** Every namespace's Services, as the watch holds them. */
  services: Service[] = [];
  /** Whether the Services were listed once (false: API pods' env is refused). */
  synced = true;
  /** By name. */
  runtimeClasses = new Map<string, RuntimeClass>();
  /**
   * Reads that fail, by their entry in {@link reads} (`cm ns/name`, `secret ns/name`,
   * `runtimeclass name`).
   */
  failures = new Map<string, Error>();
  /** Every read, in order: `cm ns/name`, `secret ns/name`, `runtimeclass name`. */
  reads: string[] = [];
  tokenRequests: { ns: string; sa: string; req: ServiceAccountTokenRequest }[] = [];
  /** The token every request gets. */
  token = "token-1";
  /** The pod uids forgotten. */
  forgotten: string[] = [];

  getConfigMap(ns: string, name: string): Promise<ConfigMap> {
    return this.#read(`cm ${ns}/${name}`, () => {
      const cm = this.configMaps.get(`${ns}/${name}`);
      if (!cm) throw new ObjectNotFoundError("configmap", ns, name);
      return cm;
    });
  }

  getSecret(ns: string, name: string): Promise<Secret> {
    return this.#read(`secret ${ns}/${name}`, () => {
      const s = this.secrets.get(`${ns}/${name}`);
      if (!s) throw new ObjectNotFoundError("secret", ns, name);
      return s;
    });
  }

  getRuntimeClass(name: string): Promise<RuntimeClass> {
    return this.#read(`runtimeclass ${name}`, () => {
      const rc = this.runtimeClasses.get(name);
      if (!rc) throw new ObjectNotFoundError("runtimeclass.node.k8s.io", "", name);
      return rc;
    });
  }

  getServiceAccountToken(ns: string, sa: string, req: ServiceAccountTokenRequest) {
    this.tokenRequests.push({ ns, sa, req });
    return Promise.resolve({ token: this.token, expirationTimestamp: "2030-01-01T00:00:00Z" });
  }

  listServices(): readonly Service[] {
    return this.services;
  }

  servicesSynced(): boolean {
    return this.synced;
  }

  forgetPod(uid: string): void {
    this.forgotten.push(uid);
  }

  #read<T>(what: string, get: () => T): Promise<T> {
    this.reads.push(what);
    const failure = this.failures.get(what);
    if (failure) return Promise.reject(failure);
    try {
      return Promise.resolve(get());
    } catch (err) {
      return Promise.reject(err);
    }
  }
}
