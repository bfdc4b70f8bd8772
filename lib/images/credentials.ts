/**
 * Registry credentials from a pod's `imagePullSecrets`, matched to an image as
 * upstream's pkg/credentialprovider does it (keyring.go, secrets/secrets.go):
 *
 * - a `kubernetes.io/dockerconfigjson` Secret's `.dockerconfigjson` (`{"auths": {...}}`)
 *   and a `kubernetes.io/dockercfg` Secret's `.dockercfg` (the entries alone) give
 *   entries `registry → {username, password, email, auth}`; a non-empty `auth`
 *   (base64 of `user:password`) overrides username and password;
 * - each registry key loses its `http(s)://` scheme and a leading `/v1/` or `/v2/`;
 * - an image matches a key when the host has as many dot-separated parts, each part
 *   matches the key's part as a glob (`*.example.com`), the ports are equal and the
 *   key's path is a string prefix of the image's path;
 * - every matching key's credentials are returned, the most specific key first
 *   (keys in reverse lexical order); with no match, an image on Docker Hub gets the
 *   `index.docker.io` entry.
 *
 * @module
 */

import type { Secret } from "../api/cluster_types.ts";
import type { AuthConfig } from "../cri/types.ts";

/** One credential a registry key maps to. */
export interface RegistryCredential {
  username: string;
  password: string;
  email: string;
}

/** Upstream's v1.SecretTypeDockerConfigJson and its data key. */
export const SECRET_TYPE_DOCKER_CONFIG_JSON = "kubernetes.io/dockerconfigjson";
const DOCKER_CONFIG_JSON_KEY = ".dockerconfigjson";
/** Upstream's v1.SecretTypeDockercfg (the legacy format) and its data key. */
export const SECRET_TYPE_DOCKERCFG = "kubernetes.io/dockercfg";
const DOCKERCFG_KEY = ".dockercfg";

const DEFAULT_REGISTRY_HOST = "index.docker.io";

/** A Secret's docker config could not be read. */
export class DockerConfigError extends Error {
  /**
   * @param what the secret, `secret "ns/name"`
   * @param detail what is wrong
   */
  constructor(what: string, detail: string) {
    super(`failed to read the docker config of ${what}: ${detail}`);
    this.name = "DockerConfigError";
  }
}

function decodeBase64(text: string): string {
  const bin = atob(text);
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

/** Upstream's decodeDockerConfigFieldAuth: base64 (padded or not) of `user:password`. */
function decodeAuthField(field: string): { username: string; password: string } {
  let decoded: string;
  try {
    decoded = decodeBase64(field.trim().endsWith("=") ? field : field.replace(/=+$/, ""));
  } catch {
    throw new Error("illegal base64 data in the auth field");
  }
  const colon = decoded.indexOf(":");
  if (colon < 0) {
    throw new Error("unable to parse auth field, must be formatted as base64(username:password)");
  }
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * Reads docker config entries (`registry → {username, password, email, auth}`).
 * @param entries the parsed JSON object
 * @returns the credentials by registry key, in the object's order
 * @throws {Error} when an entry is not an object of strings or its auth is malformed
 */
export function parseDockerConfigEntries(entries: unknown): Map<string, RegistryCredential> {
  const out = new Map<string, RegistryCredential>();
  if (entries === null || entries === undefined) return out;
  if (typeof entries !== "object" || Array.isArray(entries)) {
    throw new Error("docker config entries are not an object");
  }
  for (const [registry, raw] of Object.entries(entries)) {
    if (raw === null) {
      out.set(registry, { username: "", password: "", email: "" });
      continue;
    }
    if (typeof raw !== "object" || Array.isArray(raw)) {
      throw new Error(`entry "${registry}" is not an object`);
    }
    const field = (name: string): string => {
      const v = (raw as Record<string, unknown>)[name];
      if (v === undefined || v === null) return "";
      if (typeof v !== "string") throw new Error(`entry "${registry}": ${name} is not a string`);
      return v;
    };
    const cred = {
      username: field("username"),
      password: field("password"),
      email: field("email"),
    };
    const auth = field("auth");
    if (auth) Object.assign(cred, decodeAuthField(auth));
    out.set(registry, cred);
  }
  return out;
}

/**
 * The docker config entries a pull secret holds, as upstream's
 * secretsToTrackedDockerConfigs reads them: only a Secret of one of the two docker
 * types whose data key is present and non-empty counts.
 * @param secret the Secret (its data in base64, as the API serves it)
 * @returns the entries, or undefined for a Secret that is not a docker config
 * @throws {DockerConfigError} when the data is not valid JSON of the right shape
 */
export function dockerConfigOfSecret(
  secret: Secret,
): Map<string, RegistryCredential> | undefined {
  const key = secret.type === SECRET_TYPE_DOCKER_CONFIG_JSON
    ? DOCKER_CONFIG_JSON_KEY
    : secret.type === SECRET_TYPE_DOCKERCFG
    ? DOCKERCFG_KEY
    : undefined;
  const data = key === undefined ? undefined : secret.data?.[key];
  if (!data) return undefined;
  const what = `secret "${secret.metadata.namespace ?? ""}/${secret.metadata.name ?? ""}"`;
  try {
    const parsed: unknown = JSON.parse(decodeBase64(data));
    if (key === DOCKERCFG_KEY) return parseDockerConfigEntries(parsed);
    if (parsed === null) return new Map();
    if (typeof parsed !== "object" || Array.isArray(parsed)) {
      throw new Error("not a JSON object");
    }
    return parseDockerConfigEntries((parsed as { auths?: unknown }).auths);
  } catch (err) {
    throw new DockerConfigError(what, (err as Error).message);
  }
}

/** A URL without scheme split as Go's url.Parse does: host (with port) and path. */
interface SchemelessURL {
  host: string;
  path: string;
}

/** Parses `host[:port][/path]` (an optional scheme first); undefined when Go would refuse it. */
function parseURL(text: string): SchemelessURL | undefined {
  let rest = text.replace(/^https?:\/\//, "");
  rest = rest.split("#")[0]!.split("?")[0]!;
  const slash = rest.indexOf("/");
  let host = slash < 0 ? rest : rest.slice(0, slash);
  let path = slash < 0 ? "" : rest.slice(slash);
  const at = host.lastIndexOf("@");
  if (at >= 0) host = host.slice(at + 1);
  // Go's url.Parse refuses a port that is not all digits.
  const port = host.startsWith("[")
    ? host.slice(host.indexOf("]") + 1)
    : host.replace(/^[^:]*/, "");
  if (port !== "" && !/^:\d*$/.test(port)) return undefined;
  try {
    path = decodeURIComponent(path);
  } catch {
    return undefined;
  }
  return { host, path };
}

/** Go's net.SplitHostPort, falling back to the whole host without a port. */
function splitHostPort(host: string): { parts: string[]; port: string } {
  const m = /^\[([^\]]*)\]:(\d*)$/.exec(host) ?? /^([^:]*):(\d*)$/.exec(host);
  const name = m ? m[1]! : host;
  return { parts: name.split("."), port: m ? m[2]! : "" };
}

/**
 * Go's filepath.Match for one host part (no separators in it): `*`, `?`, `[...]`
 * classes (`^` negates) and `\` escapes.
 * @returns whether it matches; false for a malformed pattern, as upstream ignores it
 */
function globMatch(pattern: string, name: string): boolean {
  let re = "^";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "*") re += ".*";
    else if (c === "?") re += ".";
    else if (c === "\\") {
      const next = pattern[++i];
      if (next === undefined) return false;
      re += next.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    } else if (c === "[") {
      const end = pattern.indexOf("]", i + 2);
      if (end < 0) return false;
      let body = pattern.slice(i + 1, end);
      const negate = body.startsWith("^");
      if (negate) body = body.slice(1);
      if (body === "") return false;
      re += `[${negate ? "^" : ""}${body.replace(/[\]\\^]/g, "\\$&")}]`;
      i = end;
    } else re += c.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }
  try {
    return new RegExp(`${re}$`, "s").test(name);
  } catch {
    return false;
  }
}

/**
 * Upstream's URLsMatchStr: whether `target` (an image repository, no scheme) is covered
 * by the registry key `glob` (globs in the host's parts, not in ports or paths).
 * @param glob the registry key
 * @param target the image repository, e.g. `127.0.0.1:5000/app`
 * @returns whether the key's credentials apply
 */
export function urlsMatch(glob: string, target: string): boolean {
  const g = parseURL(glob);
  const t = parseURL(target);
  if (!g || !t) return false;
  const gh = splitHostPort(g.host);
  const th = splitHostPort(t.host);
  if (gh.port !== th.port || gh.parts.length !== th.parts.length) return false;
  if (!t.path.startsWith(g.path)) return false;
  return gh.parts.every((part, i) => globMatch(part, th.parts[i]!));
}

/**
 * Upstream's isDefaultRegistryMatch: whether an image name pulls from Docker Hub.
 * @param image the image (repository) name
 */
export function isDefaultRegistryMatch(image: string): boolean {
  const slash = image.indexOf("/");
  const first = slash < 0 ? image : image.slice(0, slash);
  if (first === "") return false;
  if (slash < 0) return true;
  if (first === "docker.io" || first === "index.docker.io") return true;
  return !/[.:]/.test(first);
}

/** The key upstream files a registry entry under: host plus path, no scheme, no /v1/ or /v2/. */
function registryKey(registry: string): string | undefined {
  const parsed = parseURL(registry);
  if (!parsed) return undefined;
  let path = parsed.path;
  if (path.startsWith("/v2/") || path.startsWith("/v1/")) path = path.slice(3);
  return path !== "" && path !== "/" ? parsed.host + path : parsed.host;
}

/** Registry credentials indexed by key, as upstream's BasicDockerKeyring. */
export class DockerKeyring {
  readonly #creds = new Map<string, RegistryCredential[]>();
  #index: string[] = [];

  /**
   * Adds a docker config's entries (entries it cannot parse are skipped, as upstream).
   * @param entries registry → credential, as {@link dockerConfigOfSecret} returns them
   */
  add(entries: ReadonlyMap<string, RegistryCredential>): void {
    for (const [registry, cred] of entries) {
      const key = registryKey(registry);
      if (key === undefined) continue;
      const list = this.#creds.get(key) ?? [];
      list.push(cred);
      this.#creds.set(key, list);
    }
    // Reverse lexical order puts the more specific keys (longer paths) first.
    this.#index = [...this.#creds.keys()].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  }

  /**
   * Every credential for an image repository, most specific key first.
   * @param image the repository, normalised (`docker.io/library/busybox`, `127.0.0.1:5000/app`)
   * @returns the credentials; empty when none applies
   */
  lookup(image: string): RegistryCredential[] {
    const found: RegistryCredential[] = [];
    for (const key of this.#index) {
      if (urlsMatch(key, image)) found.push(...this.#creds.get(key)!);
    }
    if (found.length > 0) return found;
    if (isDefaultRegistryMatch(image)) return [...(this.#creds.get(DEFAULT_REGISTRY_HOST) ?? [])];
    return [];
  }
}

/**
 * The credentials for one image repository, in the order they are tried, as CRI
 * AuthConfigs (username and password, as upstream sends them): the pod's pull
 * secrets' first, then the node's own (upstream's union of the two keyrings, each
 * looked up on its own).
 * @param secrets the pod's pull secrets that could be read, in spec order
 * @param repository the normalised repository to pull
 * @param node the node's docker config entries (lib/images/node_credentials.ts)
 * @returns the auth configs; empty when none applies
 * @throws {DockerConfigError} when a docker-config Secret's data is malformed
 */
export function pullCredentials(
  secrets: readonly Secret[],
  repository: string,
  node: ReadonlyMap<string, RegistryCredential> = new Map(),
): AuthConfig[] {
  const fromSecrets = new DockerKeyring();
  for (const secret of secrets) {
    const entries = dockerConfigOfSecret(secret);
    if (entries) fromSecrets.add(entries);
  }
  const fromNode = new DockerKeyring();
  fromNode.add(node);
  return [...fromSecrets.lookup(repository), ...fromNode.lookup(repository)]
    .map((c) => ({ username: c.username, password: c.password }));
}
