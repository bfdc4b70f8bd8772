/**
 * Why the plan is what it is, in words, for the sync trace. Pure, like the
 * planner it explains: it reads the planner's input and its plan and adds
 * nothing to either, so `computePodActions` and its table tests stay as they
 * are and the words cost nothing when tracing is off.
 *
 * @module
 */

import { restartPolicyOf } from "../api/pod.ts";
import type { Container } from "../api/types.ts";
import type { PlanRecord } from "../trace/mod.ts";
import type { ComputePodActionsInput } from "./compute_pod_actions.ts";
import { currentInstance, isInitContainerFailed, podSandboxChanged } from "./container_status.ts";
import type { PodActions, RuntimePodStatus } from "./types.ts";

/**
 * Why one container is started by the plan.
 * @param spec the container
 * @param status what the runtime holds
 * @param killed the plan's kill reason for its running instance, if any
 * @returns e.g. `exited with code 1 (Error), restart 3`
 */
function startReason(spec: Container, status: RuntimePodStatus, killed?: string): string {
  if (killed !== undefined) return `restarted after kill (${killed})`;
  const current = currentInstance(status, spec.name);
  if (current === undefined) return "never started in this sandbox";
  switch (current.state) {
    case "exited":
      return `exited with code ${current.exitCode}${
        current.reason ? ` (${current.reason})` : ""
      }, restart ${current.restartCount + 1}`;
    case "created":
      return "created but never started: starting it again";
    case "unknown":
      return `state unknown: killed first`;
    default:
      return "running";
  }
}

/**
 * Explains a plan.
 * @param input what the planner was given
 * @param actions what it returned
 * @returns one line per decision, the pod's first
 */
export function planReasons(input: ComputePodActionsInput, actions: PodActions): string[] {
  const { pod, status } = input;
  const reasons: string[] = [];
  const policy = restartPolicyOf(pod);
  const sandbox = podSandboxChanged(pod, status);
  if (sandbox.changed) {
    if (actions.createSandbox) {
      reasons.push(
        `${
          status.sandboxes.length > 0 ? "kill pod and " : ""
        }create sandbox (attempt ${actions.attempt}): ${sandbox.reason}`,
      );
    } else {
      reasons.push(
        `sandbox not recreated (${sandbox.reason}): containers are done and restartPolicy ${policy}`,
      );
    }
  } else if (actions.killPod) {
    const failedInit = (pod.spec.initContainers ?? []).find((c) => {
      const current = currentInstance(status, c.name);
      return current !== undefined && current.state === "exited" && isInitContainerFailed(current);
    });
    reasons.push(
      failedInit && policy === "Never"
        ? `kill pod: init container ${failedInit.name} failed and restartPolicy is Never`
        : `kill pod: no container runs or will run (restartPolicy ${policy})`,
    );
  }
  const killedBy = new Map(actions.containersToKill.map((k) => [k.name, k.reason]));
  for (const k of actions.containersToKill) {
    reasons.push(`kill ${k.name}: ${k.reason}: ${k.message}`);
  }
  const starts: [string, Container | undefined][] = [
    ...actions.ephemeralContainersToStart.map((i): [string, Container | undefined] => [
      "ephemeral container",
      pod.spec.ephemeralContainers?.[i] as Container | undefined,
    ]),
    ...actions.initContainersToStart.map((i): [string, Container | undefined] => [
      "init container",
      pod.spec.initContainers?.[i],
    ]),
    ...actions.containersToStart.map((i): [string, Container | undefined] => [
      "container",
      pod.spec.containers[i],
    ]),
  ];
  for (const [kind, spec] of starts) {
    if (spec) {
      reasons.push(
        `start ${kind} ${spec.name}: ${startReason(spec, status, killedBy.get(spec.name))}`,
      );
    }
  }
  for (const held of actions.inBackoff) {
    const current = currentInstance(status, held.name);
    const exit = current?.state === "exited" ? `, exit code ${current.exitCode}` : "";
    reasons.push(
      `hold ${held.name}: ${held.reason} for ${
        Math.max(0, Math.ceil((held.until - input.now) / 1000))
      }s${exit} (${held.message})`,
    );
  }
  const update = actions.containersToUpdate;
  for (const u of [...(update?.memory ?? []), ...(update?.cpu ?? [])]) {
    reasons.push(`resize ${u.name} in place`);
  }
  if (reasons.length === 0) reasons.push("nothing to do: the pod runs as specified");
  return reasons;
}

/**
 * The plan as the trace records it: containers by name, and the reasons.
 * @param input what the planner was given
 * @param actions what it returned
 * @returns the trace's plan record
 */
export function planRecord(input: ComputePodActionsInput, actions: PodActions): PlanRecord {
  const { spec } = input.pod;
  const names = (list: readonly { name: string }[] | undefined, idx: number[]) =>
    idx.map((i) => list?.[i]?.name ?? `#${i}`);
  const update = actions.containersToUpdate;
  return {
    killPod: actions.killPod,
    createSandbox: actions.createSandbox,
    start: [
      ...names(spec.ephemeralContainers, actions.ephemeralContainersToStart),
      ...names(spec.initContainers, actions.initContainersToStart),
      ...names(spec.containers, actions.containersToStart),
    ],
    kill: actions.containersToKill.map((k) => ({
      name: k.name,
      reason: k.reason,
      message: k.message,
    })),
    backoff: actions.inBackoff.map((b) => ({ ...b })),
    update: [...new Set([...(update?.memory ?? []), ...(update?.cpu ?? [])].map((u) => u.name))],
    reasons: planReasons(input, actions),
  };
}
