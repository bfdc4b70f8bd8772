/**
 * A memory cgroup of the test's own whose usage the test moves by exact amounts: a
 * `cat` moved into the cgroup appends what the test sends it to a file on a tmpfs the
 * test mounted, so every byte is charged to the cgroup (tmpfs pages are not reclaimed
 * without swap) and a truncate uncharges it. Used by the threshold notifier's
 * integration test and its benchmark; nothing outside the cgroup `/denolet-memcg-*`
 * and the temporary directory is touched, and {@link TestMemcg.close} removes both.
 *
 * @module
 */

import { detectCgroupLayout } from "../../lib/cgroup/mod.ts";
import { requireRoot } from "../harness/mod.ts";
import { createCgroupParent, removeCgroupParent } from "../harness/mounts.ts";
import { waitFor } from "../kit/mod.ts";

/** A test memory cgroup with one process that holds what it is given. */
export interface TestMemcg {
  /** The cgroup's name under each hierarchy root, e.g. `/denolet-memcg-1a2b3c`. */
  name: string;
  /** Its directory in the memory hierarchy. */
  dir: string;
  /** The cgroup's usage now (memory.usage_in_bytes or memory.current). */
  usage(): number;
  /**
   * Charges `bytes` more to the cgroup; resolves once `cat` has written them.
   * @param bytes how much, rounded up to 64 KiB
   */
  grow(bytes: number): Promise<void>;
  /** Uncharges everything {@link grow} charged. */
  shrink(): Promise<void>;
  /** Stops the process, unmounts, removes the cgroup and the directory. */
  close(): Promise<void>;
}

const CHUNK = 64 * 1024;

/**
 * Makes the cgroup, the tmpfs and the process.
 * @param tmpfsBytes the tmpfs's size: the most {@link TestMemcg.grow} can add in all
 * @returns the cgroup
 * @throws when not root, or the memory controller is missing
 */
export async function createTestMemcg(tmpfsBytes = 256 * 1024 * 1024): Promise<TestMemcg> {
  requireRoot();
  const layout = detectCgroupLayout();
  const mount = layout.v1.memory ?? layout.unified;
  if (mount === undefined) throw new Error("no memory cgroup hierarchy");
  const name = `/denolet-memcg-${crypto.randomUUID().slice(0, 8)}`;
  const dir = `${mount}${name}`;
  const scratch = await Deno.makeTempDir({ prefix: "denolet-memcg-" });
  const file = `${scratch}/held`;
  const undo: (() => Promise<void>)[] = [
    () => Deno.remove(scratch, { recursive: true }),
  ];
  const close = async () => {
    for (const step of undo.reverse().splice(0)) {
      await step().catch((err) => console.error("memcg cleanup:", err));
    }
  };
  try {
    await run("mount", ["-t", "tmpfs", "-o", `size=${tmpfsBytes}`, "tmpfs", scratch]);
    undo.push(() => run("umount", ["-l", scratch]));
    createCgroupParent(name);
    undo.push(() => removeCgroupParent(name));
    const child = new Deno.Command("sh", {
      args: ["-c", `echo $$ > ${dir}/cgroup.procs && exec cat >> ${file}`],
      stdin: "piped",
      stdout: "null",
      stderr: "inherit",
    }).spawn();
    const writer = child.stdin.getWriter();
    undo.push(async () => {
      await writer.close().catch(() => {});
      await child.status;
    });
    await waitFor(`pid ${child.pid} in ${dir}`, async () => {
      const procs = await Deno.readTextFile(`${dir}/cgroup.procs`);
      return procs.split("\n").includes(String(child.pid));
    }, { timeoutMs: 5_000, intervalMs: 20 });
    const usageFile = layout.v1.memory !== undefined ? "memory.usage_in_bytes" : "memory.current";
    const fileSize = () => Deno.statSync(file).size;
    let sent = 0;
    const zeros = new Uint8Array(CHUNK);
    return {
      name,
      dir,
      usage: () => Number(Deno.readTextFileSync(`${dir}/${usageFile}`).trim()),
      async grow(bytes: number) {
        for (let done = 0; done < bytes; done += CHUNK) await writer.write(zeros);
        sent += Math.ceil(bytes / CHUNK) * CHUNK;
        await waitFor("cat to write what it was sent", () => fileSize() >= sent, {
          timeoutMs: 10_000,
          intervalMs: 2,
        });
      },
      async shrink() {
        // cat appends (O_APPEND), so it goes on at the new end of the file.
        await Deno.truncate(file, 0);
        sent = 0;
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

async function run(cmd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
}
