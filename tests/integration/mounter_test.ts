/**
 * The node's mounter on the real mount(8) and umount(8): many tmpfs volumes set up and torn
 * down at once (as a burst of pods does) all land, a few commands at a time
 * (`MOUNT_COMMANDS_IN_FLIGHT`; the bound itself is unit-tested on a fake command), and a
 * refused unmount names its dir and umount(8)'s reason. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import { hostMounter, MOUNT_COMMANDS_IN_FLIGHT } from "../../lib/volumes/mod.ts";
import { requireRoot } from "../harness/mod.ts";
import { readMounts, unmountUnder } from "../harness/mounts.ts";

Deno.test("hostMounter mounts and unmounts many tmpfs at once through a few mount(8)/umount(8)", async () => {
  requireRoot();
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "denolet-mounter-" }));
  try {
    const n = MOUNT_COMMANDS_IN_FLIGHT * 4;
    const dirs = Array.from({ length: n }, (_, i) => `${dir}/v${i}`);
    for (const d of dirs) await Deno.mkdir(d);
    await Promise.all(dirs.map((d) => hostMounter.mountTmpfs(d, 1 << 20)));
    const mounted = (await hostMounter.mounts()).filter((m) => m.mountPoint.startsWith(`${dir}/`));
    assert.deepEqual(mounted.map((m) => m.mountPoint).sort(), [...dirs].sort());
    assert.ok(mounted.every((m) => m.fsType === "tmpfs"));
    await Promise.all(dirs.map((d) => hostMounter.unmount(d)));
    assert.deepEqual(readMounts().filter((m) => m.mountPoint.startsWith(`${dir}/`)), []);
    await assert.rejects(
      hostMounter.unmount(dirs[0]!),
      (err: Error) =>
        err.message.startsWith(`failed to unmount "${dirs[0]}": umount ${dirs[0]} exited with `),
    );
  } finally {
    await unmountUnder(dir);
    await Deno.remove(dir, { recursive: true });
  }
});
