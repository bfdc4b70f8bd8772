/**
 * The cgroup file cache against the kernel's own cgroupfs: a cgroup removed
 * while its files are held open must read as gone (ENODEV), not as stale data.
 * The cgroup is made under the test runtime's own cgroup parent.
 */

import assert from "node:assert/strict";
import { startTestRuntime } from "../harness/mod.ts";
import { CgroupFileCache } from "../../lib/cgroup/mod.ts";

Deno.test({
  name: "CgroupFileCache notices a removed kernfs cgroup through its open handles",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const rt = await startTestRuntime({ name: "kernfs" });
    const mount = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"].find((m) => {
      try {
        return Deno.statSync(`${m}${rt.cgroupParent}/cgroup.procs`).isFile;
      } catch {
        return false;
      }
    });
    const cache = new CgroupFileCache();
    const dir = `${mount}${rt.cgroupParent}/cache-test`;
    try {
      assert.ok(mount, `no cgroup2 mount holds the test cgroup parent ${rt.cgroupParent}`);
      Deno.mkdirSync(dir);
      const owner = {};
      assert.match(cache.read(`${dir}/cpu.stat`, owner)!, /^usage_usec \d+/);
      Deno.removeSync(dir); // rmdir succeeds with the file held open
      assert.equal(cache.read(`${dir}/cpu.stat`, owner), undefined);
      assert.equal(cache.lost, 1);
      assert.equal(cache.size, 0);
    } finally {
      cache.closeAll();
      try {
        Deno.removeSync(dir);
      } catch {
        // already removed by the test
      }
      await rt.stop();
    }
  },
});
