/**
 * hostPath volumes: the node path itself, after upstream's type check
 * (pkg/volume/hostpath): DirectoryOrCreate and FileOrCreate create what is
 * missing (0755 / 0644, parent not created for files), the other types only
 * check what is there, following symlinks.
 *
 * @module
 */

import type { HostPathType } from "../api/types.ts";
import { statOrUndefined } from "../util/fs.ts";

export type { HostPathType };

/**
 * Checks (and for the *OrCreate types, creates) a hostPath.
 * @param path the node path
 * @param type the hostPath type
 * @throws {Error} with upstream's "hostPath type check failed: …" message
 */
export async function checkHostPathType(path: string, type: HostPathType = ""): Promise<void> {
  const fail = (what: string) => new Error(`hostPath type check failed: ${path} ${what}`);
  let info = await statOrUndefined(path);
  switch (type) {
    case "":
      return;
    case "DirectoryOrCreate":
      if (!info) {
        await Deno.mkdir(path, { recursive: true, mode: 0o755 });
        return;
      }
      if (!info.isDirectory) throw fail("is not a directory");
      return;
    case "Directory":
      if (!info?.isDirectory) throw fail("is not a directory");
      return;
    case "FileOrCreate":
      if (!info) {
        // Parent directories are not created, as upstream documents.
        const f = await Deno.open(path, { create: true, write: true, mode: 0o644 });
        f.close();
        info = await Deno.stat(path);
      }
      if (!info.isFile) throw fail("is not a file");
      return;
    case "File":
      if (!info?.isFile) throw fail("is not a file");
      return;
    case "Socket":
      if (!info?.isSocket) throw fail("is not a socket file");
      return;
    case "CharDevice":
      if (!info?.isCharDevice) throw fail("is not a character device");
      return;
    case "BlockDevice":
      if (!info?.isBlockDevice) throw fail("is not a block device");
      return;
    default:
      throw new Error(`hostPath type check failed: unknown type "${type as string}" for ${path}`);
  }
}
