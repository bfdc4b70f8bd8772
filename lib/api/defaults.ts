/**
 * The defaults the apiserver would apply to a pod (upstream
 * pkg/apis/core/v1/defaults.go), applied by the kubelet to pods that never went
 * through an apiserver: static pods from files and URLs.
 *
 * Only defaults that change what the node does are applied; purely
 * scheduler- or apiserver-side ones (schedulerName, priority) are left out.
 *
 * @module
 */

import type { Container, Pod, PodSpec, Probe, PullPolicy, Volume } from "./types.ts";

/** `terminationMessagePath` when a container does not set one. */
export const DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log";

/** `terminationGracePeriodSeconds` when a pod does not set one. */
export const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30;

/**
 * Upstream's pull-policy default: `Always` when the image has no tag or the
 * `latest` tag, `IfNotPresent` otherwise (a digest counts as pinned).
 * @param image the image reference
 * @returns the default pull policy
 */
export function defaultPullPolicy(image: string | undefined): PullPolicy {
  if (!image) return "Always";
  if (image.includes("@")) return "IfNotPresent";
  // A ':' after the last '/' is a tag; one before it belongs to a registry port.
  const lastSlash = image.lastIndexOf("/");
  const colon = image.indexOf(":", lastSlash + 1);
  if (colon < 0) return "Always";
  return image.slice(colon + 1) === "latest" ? "Always" : "IfNotPresent";
}

function defaultProbe(probe: Probe | undefined): Probe | undefined {
  if (!probe) return undefined;
  const out: Probe = {
    ...probe,
    timeoutSeconds: probe.timeoutSeconds ?? 1,
    periodSeconds: probe.periodSeconds ?? 10,
    successThreshold: probe.successThreshold ?? 1,
    failureThreshold: probe.failureThreshold ?? 3,
  };
  if (probe.httpGet) {
    out.httpGet = {
      ...probe.httpGet,
      path: probe.httpGet.path ?? "/",
      scheme: probe.httpGet.scheme ?? "HTTP",
    };
  }
  return out;
}

function defaultContainer(c: Container, hostNetwork: boolean): Container {
  const out: Container = {
    ...c,
    imagePullPolicy: c.imagePullPolicy ?? defaultPullPolicy(c.image),
    terminationMessagePath: c.terminationMessagePath ?? DEFAULT_TERMINATION_MESSAGE_PATH,
    terminationMessagePolicy: c.terminationMessagePolicy ?? "File",
  };
  if (c.ports) {
    out.ports = c.ports.map((p) => ({
      ...p,
      protocol: p.protocol ?? "TCP",
      // With the node's network the container port is the host port (upstream SetDefaults_Pod).
      ...(hostNetwork && !p.hostPort ? { hostPort: p.containerPort } : {}),
    }));
  }
  if (c.env) {
    out.env = c.env.map((e) =>
      e.valueFrom?.fieldRef
        ? {
          ...e,
          valueFrom: {
            ...e.valueFrom,
            fieldRef: {
              ...e.valueFrom.fieldRef,
              apiVersion: e.valueFrom.fieldRef.apiVersion ?? "v1",
            },
          },
        }
        : e
    );
  }
  // Requests default to limits for every resource that has a limit but no request.
  const limits = c.resources?.limits;
  if (limits && Object.keys(limits).length > 0) {
    out.resources = { ...c.resources, requests: { ...limits, ...c.resources?.requests } };
  }
  for (const key of ["livenessProbe", "readinessProbe", "startupProbe"] as const) {
    const probe = defaultProbe(c[key]);
    if (probe) out[key] = probe;
  }
  return out;
}

function defaultVolume(v: Volume): Volume {
  const sources = Object.keys(v).filter((k) => k !== "name");
  // A volume with no source is an emptyDir, as upstream's SetDefaults_Volume decides.
  if (sources.length === 0) return { ...v, emptyDir: {} };
  if (v.hostPath && v.hostPath.type === undefined) {
    return { ...v, hostPath: { ...v.hostPath, type: "" } };
  }
  return v;
}

/**
 * Returns a copy of `pod` with upstream's defaults filled in: restartPolicy
 * Always, terminationGracePeriodSeconds 30, dnsPolicy ClusterFirst,
 * enableServiceLinks true, schedulerName default-scheduler, namespace "default", per-container pull
 * policy, termination message path/policy, port protocol TCP, probe timings,
 * requests from limits, and emptyDir for source-less volumes.
 * @param pod the pod as decoded; not modified
 * @returns a new, defaulted pod
 */
export function applyPodDefaults(pod: Pod): Pod {
  const copy = structuredClone(pod);
  const spec: PodSpec = copy.spec ?? { containers: [] };
  const hostNetwork = spec.hostNetwork === true;
  const outSpec: PodSpec = {
    ...spec,
    containers: (spec.containers ?? []).map((c) => defaultContainer(c, hostNetwork)),
    restartPolicy: spec.restartPolicy ?? "Always",
    terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds ??
      DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
    dnsPolicy: spec.dnsPolicy ?? "ClusterFirst",
    enableServiceLinks: spec.enableServiceLinks ?? true,
    securityContext: spec.securityContext ?? {},
    schedulerName: spec.schedulerName || "default-scheduler",
  };
  if (spec.initContainers) {
    outSpec.initContainers = spec.initContainers.map((c) => defaultContainer(c, hostNetwork));
  }
  if (spec.volumes) outSpec.volumes = spec.volumes.map(defaultVolume);
  return {
    ...copy,
    apiVersion: copy.apiVersion ?? "v1",
    kind: copy.kind ?? "Pod",
    metadata: { ...copy.metadata, namespace: copy.metadata?.namespace || "default" },
    spec: outSpec,
  };
}
