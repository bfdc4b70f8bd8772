/**
 * The apiserver client: kubeconfig loading and a rate-limited REST
 * {@link KubeClient} with watch. Only this folder knows about HTTP, TLS,
 * kubeconfig files and `@kubernetes/client-node` (whose light modules
 * `config_types.js` and `exec_auth.js` it uses; never the package root).
 *
 * ```ts
 * import { createKubeClient, isNotFound, loadKubeconfig } from "./lib/kubeapi/mod.ts";
 * const kubeconfig = await loadKubeconfig("/etc/kubernetes/kubelet.conf");
 * const client = createKubeClient({ kubeconfig, qps: 50, burst: 100 });
 * try {
 *   await client.get("/api/v1/nodes/node-1");
 * } catch (err) {
 *   if (!isNotFound(err)) throw err;
 * }
 * client.close();
 * ```
 *
 * @module
 */

export * from "./types.ts";
export { type KubeconfigAuth, loadKubeconfig, type LoadKubeconfigOptions } from "./kubeconfig.ts";
export {
  CERT_FILE_REFRESH_MS,
  type CredentialProvider,
  type Credentials,
  type ExecPluginSpec,
  TOKEN_FILE_REFRESH_MS,
  UserCredentials,
  type UserCredentialsOptions,
} from "./credentials.ts";
export {
  createKubeClient,
  DEFAULT_TIMEOUT_MS,
  type KubeClientOptions,
  MAX_RETRY_AFTER_RETRIES,
  WATCH_DEADLINE_SLACK_MS,
} from "./rest_client.ts";
export { TokenBucket, type TokenBucketOptions } from "./rate_limiter.ts";
