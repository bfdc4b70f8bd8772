/**
 * Fakes and fixtures shared by the volumes unit tests: a mounter that records
 * instead of mounting, and a pod.
 *
 * @module
 */

import type { Pod } from "../../lib/api/types.ts";
import { type Mounter, type MountInfo, tmpfsMountArgs } from "../../lib/volumes/mod.ts";
import { testPod } from "../kit/mod.ts";

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
