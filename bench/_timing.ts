/**
 * How the benchmarks time a static pod's container against the runtime's own clock:
 * when it started (CRI startedAt), and how long after it died (CRI finishedAt) an
 * agent's `/pods` showed it. Both agents are read the same way (bench/mod.ts,
 * bench/upstream.ts).
 *
 * @module
 */

import type { Pod } from "../lib/api/types.ts";
import type { RuntimeService } from "../lib/cri/types.ts";
import { findPod } from "../tests/integration/_agent.ts";
import { waitFor } from "../tests/kit/mod.ts";

/** CRI's ContainerState CONTAINER_RUNNING. */
const RUNNING = 1;

/**
 * The CRI startedAt of a pod's running container.
 * @param cri the runtime
 * @param podName the pod's name as the runtime labels it (`<name>-testnode` for a static pod)
 * @returns epoch ms, or undefined while the pod has no started running container
 */
export async function containerStartedAt(
  cri: RuntimeService,
  podName: string,
): Promise<number | undefined> {
  const cs = await cri.listContainers({
    labelSelector: { "io.kubernetes.pod.name": podName },
    state: { state: RUNNING },
  });
  if (cs.length === 0) return undefined;
  const st = await cri.containerStatus(cs[0]!.id);
  return st.status.startedAt > 0 ? st.status.startedAt / 1e6 : undefined;
}

/** Options for {@link timeDeathNoticed}. */
export interface DeathNoticedOptions {
  /** Polls of `/pods` this far apart (default 50 ms: the figure's resolution). */
  intervalMs?: number;
  /** The agent's log, quoted when it never notices. */
  log?: () => string;
  /**
   * Waits a random time in [0, phaseMs) before the stop (default 0). Deaths timed one
   * after another otherwise each come just after the relist that noticed the one before
   * (plus the time to stop the next), so every sample waits most of a relist period; a
   * random wait of one period puts them at any moment of it, as deaths come on a node.
   */
  phaseMs?: number;
  /** The source of that wait, in [0, 1) (default Math.random). */
  random?: () => number;
}

/**
 * Stops a static pod's running container out of band (CRI StopContainer, no grace) and
 * waits for the agent's `/pods` to show it: terminated, in its last state, or restarted.
 * @param cri the runtime
 * @param pods GET /pods of the agent
 * @param name the static pod's name in its manifest (the agent suffixes the node name)
 * @returns ms from the container's CRI finishedAt to the first `/pods` that showed it
 * @throws WaitTimeoutError when 30 s pass unnoticed
 */
export async function timeDeathNoticed(
  cri: RuntimeService,
  pods: () => Promise<Pod[]>,
  name: string,
  opts: DeathNoticedOptions = {},
): Promise<number> {
  const cs = await cri.listContainers({
    labelSelector: { "io.kubernetes.pod.name": `${name}-testnode` },
    state: { state: RUNNING },
  });
  const id = cs[0]?.id;
  if (id === undefined) throw new Error(`pod ${name} has no running container to stop`);
  const phase = (opts.phaseMs ?? 0) * (opts.random ?? Math.random)();
  if (phase > 0) await new Promise((resolve) => setTimeout(resolve, phase));
  await cri.stopContainer(id, 0);
  const finished = (await cri.containerStatus(id)).status.finishedAt / 1e6;
  const seen = await waitFor(`${name} death noticed`, async () => {
    const st = findPod(await pods(), name)?.status?.containerStatuses?.[0];
    const noticed = st &&
      (st.restartCount > 0 || st.state.terminated || st.lastState.terminated);
    return noticed ? Date.now() : undefined;
  }, {
    timeoutMs: 30_000,
    intervalMs: opts.intervalMs ?? 50,
    ...(opts.log ? { log: opts.log } : {}),
  });
  return seen - finished;
}
