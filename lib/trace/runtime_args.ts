/**
 * The key arguments of a CRI call, in a few words for the sync trace:
 * container and sandbox ids (short), container names, images. Reads the
 * arguments structurally, so the trace needs nothing of lib/cri.
 *
 * @module
 */

/** Ids are 64 hex digits; 13 tell them apart, as `crictl ps` shows them. */
function shortId(value: unknown): string {
  return typeof value === "string" ? value.slice(0, 13) : "";
}

function field(value: unknown, ...path: string[]): unknown {
  let v = value;
  for (const key of path) {
    if (typeof v !== "object" || v === null) return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

/**
 * Describes a RuntimeService call's arguments.
 * @param method the RuntimeService method name
 * @param args its arguments
 * @returns e.g. `sandbox=3f2a… name=app image=busybox:latest`, "" when none matter
 */
export function describeRuntimeArgs(method: string, args: readonly unknown[]): string {
  switch (method) {
    case "runPodSandbox": {
      const attempt = field(args[0], "metadata", "attempt");
      return `attempt=${attempt ?? 0}${args[1] ? ` handler=${String(args[1])}` : ""}`;
    }
    case "createContainer":
      return `sandbox=${shortId(args[0])} name=${field(args[1], "metadata", "name") ?? ""} ` +
        `image=${field(args[1], "image", "image") ?? ""}`;
    case "stopContainer":
      return `id=${shortId(args[0])} timeout=${String(args[1])}s`;
    case "execSync":
      return `id=${shortId(args[0])} cmd=${Array.isArray(args[1]) ? args[1].join(" ") : ""}`;
    case "imageStatus":
    case "pullImage":
    case "removeImage":
      return `image=${field(args[0], "image") ?? ""}`;
    case "listPodSandbox":
    case "listContainers":
    case "listContainerStats":
      return args[0] === undefined ? "" : JSON.stringify(args[0]);
    default:
      return typeof args[0] === "string" ? `id=${shortId(args[0])}` : "";
  }
}
