import assert from "node:assert/strict";
import type { RuntimeService } from "../../lib/cri/mod.ts";
import { CriError, GrpcCode } from "../../lib/cri/mod.ts";
import {
  cleanDanglingLogSymlinks,
  containerLogsDirFor,
  logSymlinkPath,
} from "../../lib/kuberuntime/mod.ts";
import { silentLogger } from "../../lib/util/log.ts";

Deno.test("logSymlinkPath() names the link as upstream, cut to ext4's 255 bytes with .log kept", () => {
  const pod = { name: "web", namespace: "prod" };
  assert.equal(
    logSymlinkPath("/var/log/containers/", pod, "app", "abc"),
    "/var/log/containers/web_prod_app-abc.log",
  );
  const long = logSymlinkPath("/d", { name: "p".repeat(250), namespace: "ns" }, "c", "id");
  const name = long.slice("/d/".length);
  assert.equal(name.length, 255);
  assert.equal(name, `${"p".repeat(250)}_.log`);
});

Deno.test("cleanDanglingLogSymlinks() removes links whose log is gone unless the container runs", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const id = (c: string) => c.repeat(64);
    await Deno.writeTextFile(`${dir}/live.log.target`, "");
    await Deno.symlink(`${dir}/live.log.target`, `${dir}/p_ns_a-${id("a")}.log`);
    await Deno.symlink(`${dir}/missing`, `${dir}/p_ns_b-${id("b")}.log`); // exited
    await Deno.symlink(`${dir}/missing`, `${dir}/p_ns_c-${id("c")}.log`); // running (mid-rotation)
    await Deno.symlink(`${dir}/missing`, `${dir}/p_ns_d-${id("d")}.log`); // removed
    const runtime = {
      containerStatus: (cid: string) => {
        if (cid === id("d")) {
          return Promise.reject(
            new CriError({
              call: "ContainerStatus",
              object: cid,
              code: GrpcCode.NOT_FOUND,
              details: "not found",
            }),
          );
        }
        return Promise.resolve({ status: { state: cid === id("c") ? 1 : 2 }, info: {} });
      },
    } as unknown as RuntimeService;
    const removed = await cleanDanglingLogSymlinks(dir, runtime, silentLogger);
    assert.deepEqual(removed.map((p) => p.slice(dir.length + 1)).sort(), [
      `p_ns_b-${id("b")}.log`,
      `p_ns_d-${id("d")}.log`,
    ]);
    const left = (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name).sort();
    assert.deepEqual(left, ["live.log.target", `p_ns_a-${id("a")}.log`, `p_ns_c-${id("c")}.log`]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("containerLogsDirFor() is /var/log/containers beside the default pod logs dir, else the containers dir beside it", () => {
  assert.equal(containerLogsDirFor("/var/log/pods"), "/var/log/containers");
  assert.equal(containerLogsDirFor("/var/log/pods/"), "/var/log/containers");
  assert.equal(containerLogsDirFor("/tmp/agent-x/logs"), "/tmp/agent-x/containers");
  assert.equal(containerLogsDirFor("/pods"), "/containers");
});
