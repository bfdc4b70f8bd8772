/**
 * Start-up permission check: every path a flag points at is checked against
 * the Deno permissions this process runs with (the `agent` set in deno.json,
 * baked into the binary by `deno compile`), so that a `--root-dir` outside the
 * list fails at once with the flag, the path and how to grant it, instead of a
 * `NotCapable` stack trace at the first write minutes later.
 *
 * @module
 */

/** One path a flag makes the agent read or write. */
export interface PathPermission {
  /** The flag or config field that chose the path, e.g. `--root-dir`. */
  flag: string;
  /** The path as the agent will use it. */
  path: string;
  /** What the agent does with it. */
  access: "read" | "write";
}

/**
 * Checks each path against the process's granted permissions. Never prompts.
 * @param paths the effective paths and what the agent does with each
 * @returns one message per path that is not granted (empty when all are)
 */
export function checkPermissions(paths: PathPermission[]): string[] {
  const problems: string[] = [];
  for (const { flag, path, access } of paths) {
    if (path === "") continue;
    const { state } = Deno.permissions.querySync({ name: access, path });
    if (state === "granted") continue;
    problems.push(
      `${flag}=${path}: denolet may not ${access} ${JSON.stringify(path)}: Deno's ${access} ` +
        `permission for it is not granted. Grant it by adding ${JSON.stringify(path)} ` +
        `to permissions.agent.${access} in deno.json (used by deno task run, and by ` +
        `deno task compile, after which the binary must be rebuilt), or run the sources with ` +
        `deno run --allow-${access}=${path} ...`,
    );
  }
  return problems;
}

/** The effective paths of the agent's options, for {@link agentPathPermissions}. */
export interface AgentPaths {
  rootDir: string;
  podLogsDir: string;
  /** `--pod-manifest-path` / staticPodPath; empty when unset. */
  podManifestPath?: string | undefined;
  /** `--container-runtime-endpoint`, `unix://` or a bare path. */
  containerRuntimeEndpoint: string;
  /** `--image-service-endpoint`; empty or unset means the runtime endpoint. */
  imageServiceEndpoint?: string | undefined;
  kubeconfig?: string | undefined;
  bootstrapKubeconfig?: string | undefined;
  /** `--config`. */
  configFile?: string | undefined;
  /** `--cert-dir`: where the kubelet writes its serving and client certificates. */
  certDir?: string | undefined;
  tlsCertFile?: string | undefined;
  tlsPrivateKeyFile?: string | undefined;
  /** `authentication.x509.clientCAFile`. */
  clientCAFile?: string | undefined;
}

/** The filesystem path of a `unix://` endpoint; undefined for other schemes. */
function socketPath(endpoint: string): string | undefined {
  if (endpoint.startsWith("unix://")) return endpoint.slice("unix://".length);
  if (endpoint.startsWith("/")) return endpoint;
  return undefined;
}

/**
 * Lists what the agent needs for its options: read+write of the root, pod
 * log and cert dirs, read of the manifest dir and of config and certificate
 * files, and read+write of the CRI sockets (connecting a unix socket needs both).
 * Accepts the parsed options object as is (extra fields are ignored).
 * @param paths the effective options
 * @returns the list to pass to {@link checkPermissions}
 */
export function agentPathPermissions(paths: AgentPaths): PathPermission[] {
  const list: PathPermission[] = [
    { flag: "--root-dir", path: paths.rootDir, access: "read" },
    { flag: "--root-dir", path: paths.rootDir, access: "write" },
    { flag: "--pod-logs-dir", path: paths.podLogsDir, access: "read" },
    { flag: "--pod-logs-dir", path: paths.podLogsDir, access: "write" },
  ];
  const read = (flag: string, path: string | undefined) => {
    if (path) list.push({ flag, path, access: "read" });
  };
  read("--pod-manifest-path", paths.podManifestPath);
  read("--kubeconfig", paths.kubeconfig);
  read("--bootstrap-kubeconfig", paths.bootstrapKubeconfig);
  // TLS bootstrap writes the kubeconfig (lib/bootstrap).
  if (paths.bootstrapKubeconfig && paths.kubeconfig) {
    list.push({ flag: "--kubeconfig", path: paths.kubeconfig, access: "write" });
  }
  read("--config", paths.configFile);
  read("--tls-cert-file", paths.tlsCertFile);
  read("--tls-private-key-file", paths.tlsPrivateKeyFile);
  read("--client-ca-file", paths.clientCAFile);
  if (paths.certDir) {
    list.push(
      { flag: "--cert-dir", path: paths.certDir, access: "read" },
      { flag: "--cert-dir", path: paths.certDir, access: "write" },
    );
  }
  const sockets: [string, string | undefined][] = [
    ["--container-runtime-endpoint", socketPath(paths.containerRuntimeEndpoint)],
    ["--image-service-endpoint", socketPath(paths.imageServiceEndpoint ?? "")],
  ];
  for (const [flag, path] of sockets) {
    if (!path) continue;
    list.push({ flag, path, access: "read" }, { flag, path, access: "write" });
  }
  return list;
}

/**
 * The start-up error for {@link checkPermissions}'s problems: one line per
 * path, meant for stderr right before exiting with status 2.
 * @param problems the non-empty result of {@link checkPermissions}
 * @returns the message
 */
export function formatPermissionProblems(problems: string[]): string {
  return [
    `denolet: ${problems.length} path(s) from flags or config are outside this process's ` +
    `Deno permissions:`,
    ...problems.map((p) => `  ${p}`),
  ].join("\n");
}
