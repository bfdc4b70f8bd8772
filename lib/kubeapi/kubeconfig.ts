/**
 * Kubeconfig loading as kubectl and the kubelet do it: pick the context
 * (current-context or an override), then its cluster (server, CA, TLS
 * options) and user (client certificate, token, token file, basic auth or an
 * exec plugin). File references are resolved against the kubeconfig's own
 * directory, as client-go's `ResolveLocalPaths` does, and `-data` fields win
 * over their file twins. Entries are validated by `@kubernetes/client-node`'s
 * `config_types` (its light module; never the package root).
 *
 * @module
 */

import type { Cluster, Context, User } from "@kubernetes/client-node/dist/config_types.js";
import type { Clock } from "../util/clock.ts";
import {
  type CredentialProvider,
  type Credentials,
  type ExecPluginSpec,
  UserCredentials,
} from "./credentials.ts";

/** A kubeconfig resolved down to what a client needs for one context. */
export interface KubeconfigAuth {
  /** Absolute path of the kubeconfig file. */
  path: string;
  /** The context used. */
  context: string;
  /** The context's namespace, if any. */
  namespace?: string;
  /** The cluster's name in the kubeconfig. */
  cluster: string;
  /** The user's name in the kubeconfig (absent for an anonymous context). */
  user?: string;
  /** The apiserver URL without a trailing slash, e.g. `https://10.0.0.1:6443`. */
  server: string;
  /** PEM CA bundle (`certificate-authority` or `-data`); system roots when absent. */
  caCert?: string;
  /** The absolute `certificate-authority` path, when the CA came from a file. */
  caFile?: string;
  /** `insecure-skip-tls-verify`. */
  insecureSkipTLSVerify: boolean;
  /** `proxy-url`. */
  proxyUrl?: string;
  /** The user's credentials, refreshed as needed. */
  credentials: CredentialProvider;
}

/** Options for {@link loadKubeconfig}. */
export interface LoadKubeconfigOptions {
  /** Use this context instead of `current-context`. */
  context?: string;
  /** Clock for the token file refresh. */
  clock?: Clock;
}

type RawEntry = { name?: unknown; user?: Record<string, unknown> } & Record<string, unknown>;

/**
 * Reads and resolves a kubeconfig file.
 * @param path the kubeconfig (YAML or JSON); relative paths are taken from the cwd
 * @param opts context override and clock
 * @returns the cluster and user of the chosen context, with files read
 * @throws Error naming the kubeconfig path and the offending field (with `cause`)
 */
export async function loadKubeconfig(
  path: string,
  opts: LoadKubeconfigOptions = {},
): Promise<KubeconfigAuth> {
  const file = absolutePath(Deno.cwd(), path);
  const dir = file.slice(0, file.lastIndexOf("/")) || "/";
  const fail = (msg: string, cause?: unknown): never => {
    throw new Error(`kubeconfig ${file}: ${msg}`, cause === undefined ? undefined : { cause });
  };
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (err) {
    return fail(`cannot read: ${err}`, err);
  }
  // Loaded here, not at import: a standalone node never pays for them.
  const [{ parse: parseYaml }, { newClusters, newContexts, newUsers }] = await Promise.all([
    import("yaml"),
    import("@kubernetes/client-node/dist/config_types.js"),
  ]);
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    return fail(`invalid YAML: ${(err as Error).message}`, err);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return fail("not a Config object");
  }
  const cfg = raw as Record<string, unknown>;

  const contextName = opts.context ?? (cfg["current-context"] as string | undefined);
  if (!contextName) return fail("no current-context set and no context given");
  const build = <T>(what: string, f: () => T): T => {
    try {
      return f();
    } catch (err) {
      return fail((err as Error).message ?? `invalid ${what}`, err);
    }
  };
  const contexts: Context[] = build("contexts", () => newContexts(cfg.contexts));
  const ctx = contexts.find((c) => c.name === contextName);
  if (!ctx) return fail(`context "${contextName}" not found in contexts`);
  const cluster: Cluster | undefined = build("clusters", () => newClusters(cfg.clusters))
    .find((c) => c.name === ctx.cluster);
  if (!cluster) {
    return fail(`context "${ctx.name}" refers to cluster "${ctx.cluster}", not in clusters`);
  }

  // client-node reads `token-file` itself, relative to the cwd and once; we
  // hold it back and re-read it relative to the kubeconfig instead.
  const rawUsers = Array.isArray(cfg.users) ? (cfg.users as RawEntry[]) : [];
  const tokenFiles = new Map<string, string>();
  const sanitized = rawUsers.map((u) => {
    if (!u || typeof u !== "object" || !u.user || typeof u.user !== "object") return u;
    const { ["token-file"]: tf, ...rest } = u.user;
    if (typeof tf === "string" && tf !== "" && typeof u.name === "string") {
      tokenFiles.set(u.name, tf);
    }
    return { ...u, user: rest };
  });
  let user: User | undefined;
  if (ctx.user !== undefined) {
    user = build("users", () => newUsers(sanitized)).find((u) => u.name === ctx.user);
    if (!user) return fail(`context "${ctx.name}" refers to user "${ctx.user}", not in users`);
  }

  const resolvePath = (p: string) => absolutePath(dir, p);
  const readPem = async (field: string, data?: string, f?: string): Promise<string | undefined> => {
    if (data) {
      try {
        return new TextDecoder().decode(Uint8Array.from(atob(data), (c) => c.charCodeAt(0)));
      } catch (err) {
        return fail(`${field}-data is not valid base64`, err);
      }
    }
    if (!f) return undefined;
    const abs = resolvePath(f);
    try {
      return await Deno.readTextFile(abs);
    } catch (err) {
      return fail(`${field}: cannot read ${abs}: ${err}`, err);
    }
  };

  const auth: KubeconfigAuth = {
    path: file,
    context: ctx.name,
    cluster: cluster.name,
    server: cluster.server,
    insecureSkipTLSVerify: cluster.skipTLSVerify,
    credentials: new UserCredentials({ source: `kubeconfig ${file}`, fixed: {} }),
  };
  if (!/^https?:\/\//.test(cluster.server)) {
    return fail(`clusters["${cluster.name}"].server ${cluster.server} is not an http(s) URL`);
  }
  if (cluster.tlsServerName) {
    return fail(`clusters["${cluster.name}"].tls-server-name is not supported`);
  }
  if (ctx.namespace) auth.namespace = ctx.namespace;
  if (cluster.proxyUrl) auth.proxyUrl = cluster.proxyUrl;
  const ca = await readPem(
    `clusters["${cluster.name}"].certificate-authority`,
    cluster.caData,
    cluster.caFile,
  );
  if (ca !== undefined) auth.caCert = ca;
  if (ca !== undefined && !cluster.caData && cluster.caFile) {
    auth.caFile = resolvePath(cluster.caFile);
  }
  if (user === undefined) return auth;
  auth.user = user.name;

  const where = `users["${user.name}"]`;
  const fixed: Credentials = {};
  const cert = await readPem(`${where}.client-certificate`, user.certData, user.certFile);
  const key = await readPem(`${where}.client-key`, user.keyData, user.keyFile);
  if ((cert === undefined) !== (key === undefined)) {
    return fail(`${where} needs both client-certificate and client-key (or their -data)`);
  }
  if (cert !== undefined && key !== undefined) {
    fixed.cert = cert;
    fixed.key = key;
  }
  if (user.token) fixed.token = user.token.trim();
  if (user.username || user.password) {
    fixed.basicAuth = { username: user.username ?? "", password: user.password ?? "" };
  }
  if (user.authProvider) {
    const name = (user.authProvider as { name?: string }).name ?? "?";
    return fail(`${where}.auth-provider "${name}" is not supported; use exec`);
  }
  const tokenFile = tokenFiles.get(user.name);
  const exec = user.exec ? execSpec(user.exec, where, resolvePath, cluster, ca, fail) : undefined;
  const credOpts: ConstructorParameters<typeof UserCredentials>[0] = {
    source: `kubeconfig ${file} ${where}`,
    fixed,
  };
  if (fixed.token === undefined && tokenFile !== undefined) {
    credOpts.tokenFile = resolvePath(tokenFile);
  }
  if (exec !== undefined) credOpts.exec = exec;
  if (cert !== undefined && !user.certData && !user.keyData && user.certFile && user.keyFile) {
    credOpts.certFiles = {
      certFile: resolvePath(user.certFile),
      keyFile: resolvePath(user.keyFile),
    };
  }
  if (opts.clock !== undefined) credOpts.clock = opts.clock;
  auth.credentials = new UserCredentials(credOpts);
  return auth;
}

/**
 * `p` made absolute against `base` and normalized (POSIX paths; denolet runs
 * on Linux). Local instead of node:path, which would load Node compatibility
 * (~6 MB of RSS) for a standalone node that never reads a kubeconfig.
 */
function absolutePath(base: string, p: string): string {
  const parts: string[] = [];
  for (const seg of (p.startsWith("/") ? p : `${base}/${p}`).split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") parts.pop();
    else parts.push(seg);
  }
  return "/" + parts.join("/");
}

const EXEC_API_VERSIONS = [
  "client.authentication.k8s.io/v1",
  "client.authentication.k8s.io/v1beta1",
] as const;

function execSpec(
  raw: Record<string, unknown>,
  where: string,
  resolvePath: (p: string) => string,
  cluster: Cluster,
  ca: string | undefined,
  fail: (msg: string) => never,
): ExecPluginSpec {
  const apiVersion = raw.apiVersion as ExecPluginSpec["apiVersion"];
  if (!EXEC_API_VERSIONS.includes(apiVersion)) {
    return fail(
      `${where}.exec.apiVersion ${JSON.stringify(raw.apiVersion)} is not one of ` +
        EXEC_API_VERSIONS.join(", "),
    );
  }
  const command = raw.command;
  if (typeof command !== "string" || command === "") {
    return fail(`${where}.exec.command is missing`);
  }
  // As upstream: v1 requires interactiveMode, and a node agent has no terminal.
  const mode = raw.interactiveMode;
  if (apiVersion.endsWith("/v1") && mode === undefined) {
    return fail(`${where}.exec.interactiveMode must be set for ${apiVersion}`);
  }
  if (mode === "Always") {
    return fail(`${where}.exec.interactiveMode Always needs a terminal, which denolet lacks`);
  }
  const args = raw.args ?? [];
  if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) {
    return fail(`${where}.exec.args must be a list of strings`);
  }
  const env = raw.env ?? [];
  if (
    !Array.isArray(env) ||
    env.some((e) => !e || typeof e.name !== "string" || typeof e.value !== "string")
  ) {
    return fail(`${where}.exec.env must be a list of {name, value} strings`);
  }
  const spec: ExecPluginSpec = {
    apiVersion,
    // Only a command with a path separator is a file reference (client-go).
    command: command.includes("/") ? resolvePath(command) : command,
    args: args as string[],
    env: env as ExecPluginSpec["env"],
  };
  if (typeof raw.installHint === "string") spec.installHint = raw.installHint;
  if (raw.provideClusterInfo === true) {
    const info: Record<string, unknown> = { server: cluster.server };
    if (ca !== undefined) info["certificate-authority-data"] = btoa(ca);
    if (cluster.skipTLSVerify) info["insecure-skip-tls-verify"] = true;
    if (cluster.proxyUrl) info["proxy-url"] = cluster.proxyUrl;
    spec.cluster = info;
  }
  return spec;
}
