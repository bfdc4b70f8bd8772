/**
 * Empty cgroup mount roots in the kernel's layouts, made in a temporary
 * directory, for code that makes cgroups (lib/cm): a directory made there is
 * a plain directory and a limit written is a plain file, which is what tests
 * check. (tests/fixtures/cgroup holds populated trees for the stats reader.)
 *
 * @module
 */

/**
 * A cgroup v1 root: cpu,cpuacct (with its "cpu" and "cpuacct" aliases), memory, pids,
 * cpuset (cpus 0-1, mems 0) and name=systemd.
 * @param root an empty directory
 */
export function cgroupV1Tree(root: string): void {
  for (const dir of ["cpu,cpuacct", "memory", "pids", "cpuset", "systemd"]) {
    Deno.mkdirSync(`${root}/${dir}`);
    Deno.writeTextFileSync(`${root}/${dir}/cgroup.procs`, "");
  }
  Deno.symlinkSync(`${root}/cpu,cpuacct`, `${root}/cpu`);
  Deno.symlinkSync(`${root}/cpu,cpuacct`, `${root}/cpuacct`);
  Deno.writeTextFileSync(`${root}/cpuset/cpuset.cpus`, "0-1\n");
  Deno.writeTextFileSync(`${root}/cpuset/cpuset.mems`, "0\n");
}

/**
 * A cgroup v2 root offering cpu, memory and pids to its children.
 * @param root an empty directory
 */
export function cgroupV2Tree(root: string): void {
  Deno.writeTextFileSync(`${root}/cgroup.controllers`, "cpu memory pids\n");
  Deno.writeTextFileSync(`${root}/cgroup.procs`, "");
}
