/**
 * The integration tier's preconditions: root and the host tools the harness drives.
 * A missing precondition is a failure, never a skip, so CI cannot go green on a machine
 * that ran nothing.
 *
 * @module
 */

import { isExecutable, which } from "./_exec.ts";

export { which };

/** Executables the harness runs, each with the Debian package that ships it. */
const TOOLS: ReadonlyArray<readonly [string, string]> = [
  ["containerd", "containerd"],
  ["containerd-shim-runc-v2", "containerd"],
  ["ctr", "containerd"],
  ["runc", "runc"],
  ["busybox", "busybox-static"],
  ["tar", "tar"],
  ["gzip", "gzip"],
  ["ip", "iproute2"],
  ["mount", "mount"],
  ["umount", "mount"],
];

/** The CNI plugins the harness's conflist (and containerd's own loopback setup) need. */
export const CNI_BIN_DIR = "/usr/lib/cni";
const CNI_PLUGINS = ["bridge", "host-local", "loopback"];

/**
 * Throws unless the process runs as root on Linux with every tool the harness uses.
 *
 * @throws Error listing each missing precondition and how to provide it (`.ci/run` installs all)
 */
export function requireRoot(): void {
  const problems: string[] = [];
  if (Deno.build.os !== "linux") problems.push(`Linux is required (this is ${Deno.build.os})`);
  else if (Deno.uid() !== 0) problems.push(`root is required (uid ${Deno.uid()})`);
  const packages = new Set<string>();
  for (const [tool, pkg] of TOOLS) {
    if (which(tool) === undefined) {
      problems.push(`${tool} not found`);
      packages.add(pkg);
    }
  }
  for (const plugin of CNI_PLUGINS) {
    if (!isExecutable(`${CNI_BIN_DIR}/${plugin}`)) {
      problems.push(`CNI plugin ${CNI_BIN_DIR}/${plugin} not found`);
      packages.add("containernetworking-plugins");
    }
  }
  if (problems.length === 0) return;
  const hint = packages.size > 0
    ? ` (apt-get install ${[...packages].join(" ")}, or run .ci/run)`
    : "";
  throw new Error(
    `integration tests cannot run here: ${problems.join("; ")}${hint}. ` +
      "They need root, containerd and runc; they fail instead of skipping.",
  );
}
