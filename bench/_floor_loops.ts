/**
 * The per-pod RSS floor's program (bench/_side_by_side.ts `runFloorSession`): the two
 * loops every node agent runs for each pod, and nothing else, built from the agent's
 * own parts and run at the agent's periods:
 *
 * - the PLEG (lib/pleg `GenericPleg` over the runtime manager's `listPods` and
 *   `getPodStatus`): relists the runtime every second on the agent's tick grid and
 *   keeps each pod's status; its events are read and dropped, as a sync loop would
 *   read them;
 * - the stats provider (lib/stats `StatsProvider`): after each relist, housekeeping
 *   reconciled with the pods the runtime runs, each pod and container cgroup read
 *   every 10 s into its 2-minute ring, the runtime's filesystem figures on their
 *   own loop.
 *
 * And, as in the agent, glibc's free memory returned every 10 s (lib/util/heap_trim.ts).
 *
 * The pods' specs are held too (read from a file the bench writes, as a source
 * would hand them over). Left out: pod workers and the sync loop, the status
 * manager, probes, the HTTP server, the manifest source's checks, log rotation.
 *
 * @module
 */

import type { Pod } from "../lib/api/types.ts";
import { createRuntimeService } from "../lib/cri/mod.ts";
import { KubeRuntimeManager } from "../lib/kuberuntime/mod.ts";
import { readLogTail } from "../lib/logs/mod.ts";
import { GenericPleg } from "../lib/pleg/mod.ts";
import { readMachineInfo, StatsProvider } from "../lib/stats/mod.ts";
import { realClock } from "../lib/util/clock.ts";
import { HeapTrimmer } from "../lib/util/heap_trim.ts";
import { silentLogger } from "../lib/util/log.ts";
import { TICK_GRID_MS } from "../lib/util/tick.ts";

/** Where the loops find the runtime and the pods. */
export interface FloorLoopsConfig {
  /** The runtime's CRI socket. */
  endpoint: string;
  /** A directory of the bench's runtime for the manager's and provider's files. */
  dir: string;
  /** `--cgroup-root` (the harness's cgroup parent). */
  cgroupRoot: string;
  /** A JSON file of the pods (Pod[]) the bench has started; re-read when it changes. */
  podsFile: string;
}

/**
 * Starts the loops; they run until the process is killed.
 * @param config the runtime and the pods' file
 */
export async function startFloorLoops(config: FloorLoopsConfig): Promise<void> {
  const clock = realClock;
  const logger = silentLogger;
  const cri = createRuntimeService({ endpoint: config.endpoint });
  const machine = await readMachineInfo({ rootDir: config.dir });
  const manager = new KubeRuntimeManager({
    runtime: cri,
    clock,
    logger,
    rootDir: `${config.dir}/floor-kubelet`,
    podLogsDir: `${config.dir}/raw-logs`,
    containerLogsDir: `${config.dir}/floor-containers`,
    cgroupRoot: config.cgroupRoot,
    nodeName: "testnode",
    hostIPs: ["127.0.0.1"],
    memoryCapacity: machine.memoryCapacityBytes,
    nodeAllocatable: {
      cpu: String(machine.numCores),
      memory: String(machine.memoryCapacityBytes),
      "ephemeral-storage": "10Gi",
    },
    readLogTail,
  });
  const stats = new StatsProvider({
    clock,
    runtime: cri,
    nodeName: "testnode",
    rootDir: config.dir,
    podLogsDir: `${config.dir}/raw-logs`,
    podCgroupRoot: config.cgroupRoot,
    machine,
    housekeeping: { intervalMs: 10_000, tickGridMs: TICK_GRID_MS },
    logger,
  });
  let pods: Pod[] = [];
  let podsSize = -1;
  const reconcile = () => {
    const size = Deno.statSync(config.podsFile).size;
    if (size !== podsSize) {
      pods = JSON.parse(Deno.readTextFileSync(config.podsFile));
      podsSize = size;
    }
    const observed = [];
    for (const pod of pods) {
      const runtime = pleg.getPodStatus(pod.metadata.uid!).status;
      if (runtime !== undefined) observed.push({ pod, runtime });
    }
    stats.reconcile(observed);
  };
  const pleg = new GenericPleg({
    listPods: (signal) => manager.listPods(signal),
    getPodStatus: (uid, signal) => manager.getPodStatus(uid, signal),
    clock,
    logger,
    onRelistDuration: reconcile,
    tickGridMs: TICK_GRID_MS,
  });
  pleg.start();
  new HeapTrimmer({ clock, logger, tickGridMs: TICK_GRID_MS }).start();
  const events = pleg.events();
  for (;;) {
    const next = await events.next();
    if (next.done) return;
  }
}

if (import.meta.main) await startFloorLoops(JSON.parse(Deno.args[0]!));
