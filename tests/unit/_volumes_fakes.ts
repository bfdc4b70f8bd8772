/**
 * Fakes and fixtures shared by the volumes unit tests: an in-memory object
 * source, a mounter that records instead of mounting, a temp dir and a pod.
 *
 * @module
 */

import type { ConfigMap, Secret, Service } from "../../lib/api/cluster_types.ts";
import type { Pod } from "../../lib/api/types.ts";
import {
  ObjectNotFoundError,
  type PodObjects,
  type ServiceAccountTokenRequest,
} from "../../lib/kubeobjects/mod.ts";
import { type Mounter, type MountInfo, tmpfsMountArgs } from "../../lib/volumes/mod.ts";
import { testPod } from "../kit/mod.ts";

/** An in-memory object source that records token requests. */
export class FakeObjects implements PodObjects {
  configMaps = new Map<string, ConfigMap>();
  secrets = new Map<string, Secret>();
  tokenRequests: { ns: string; sa: string; req: ServiceAccountTokenRequest }[] = [];
  token = "token-1";
  forgotten: string[] = [];
  getConfigMap(ns: string, name: string): Promise<ConfigMap> {
    const cm = this.configMaps.get(`${ns}/${name}`);
    return cm
      ? Promise.resolve(cm)
      : Promise.reject(new ObjectNotFoundError("configmap", ns, name));
  }
  getSecret(ns: string, name: string): Promise<Secret> {
    const s = this.secrets.get(`${ns}/${name}`);
    return s ? Promise.resolve(s) : Promise.reject(new ObjectNotFoundError("secret", ns, name));
  }
  getServiceAccountToken(ns: string, sa: string, req: ServiceAccountTokenRequest) {
    this.tokenRequests.push({ ns, sa, req });
    return Promise.resolve({ token: this.token, expirationTimestamp: "2030-01-01T00:00:00Z" });
  }
  listServices(): Promise<Service[]> {
    return Promise.resolve([]);
  }
  forgetPod(uid: string): void {
    this.forgotten.push(uid);
  }
}

/** Records mounts instead of making them. */
export class FakeMounter implements Mounter {
  calls: string[] = [];
  table: MountInfo[] = [];
  mountTmpfs(dir: string, size: number | undefined): Promise<void> {
    this.calls.push(`mount ${tmpfsMountArgs(dir, size).join(" ")}`);
    return Deno.realPath(dir).then((real) => {
      this.table.push({ mountPoint: real, fsType: "tmpfs", source: "tmpfs" });
    });
  }
  unmount(dir: string): Promise<void> {
    this.calls.push(`umount ${dir}`);
    this.table = this.table.filter((m) => m.mountPoint !== dir);
    return Promise.resolve();
  }
  mounts(): Promise<MountInfo[]> {
    return Promise.resolve([...this.table]);
  }
}

/** A pod "ns/web" (uid-1) with labels, annotations, a 64Mi limit and `volumes`. */
export function pod(volumes: NonNullable<Pod["spec"]["volumes"]>, mutate?: (p: Pod) => void): Pod {
  const p = testPod({
    namespace: "ns",
    uid: "uid-1",
    metadata: { labels: { app: "web", tier: 'f"e' }, annotations: { note: "line1\nline2" } },
    containers: [{ name: "app", resources: { limits: { memory: "64Mi" } } }],
    spec: { serviceAccountName: "builder", volumes },
  });
  mutate?.(p);
  return p;
}

/** Reads a file as text. */
export const read = (path: string) => Deno.readTextFile(path);
