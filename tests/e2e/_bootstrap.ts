/**
 * TLS bootstrap in the e2e cluster as `kubeadm init` prepares it for `kubeadm join`:
 * a bootstrap token Secret in kube-system, the RBAC bindings that let its holders
 * create node CSRs and have them auto-approved (and let nodes renew their own client
 * certificates), and a bootstrap kubeconfig carrying the token. The cluster must be
 * started with `tlsBootstrap` (see _cluster.ts).
 *
 * @module
 */

import type { Cluster } from "./_cluster.ts";

/** The group kubeadm gives its default node token (`auth-extra-groups`). */
export const NODE_TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token";
/** A token group that may request node certificates but is not auto-approved. */
export const MANUAL_TOKEN_GROUP = "system:bootstrappers:e2e:manual-approval";

const RBAC = [
  // kubeadm:kubelet-bootstrap: token holders may create and read CSRs.
  ["kubeadm:kubelet-bootstrap", "system:node-bootstrapper", "Group", NODE_TOKEN_GROUP],
  // kubeadm:node-autoapprove-bootstrap: csrapproving approves their client CSRs.
  [
    "kubeadm:node-autoapprove-bootstrap",
    "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
    "Group",
    NODE_TOKEN_GROUP,
  ],
  // For tokens whose CSRs an operator approves or denies.
  ["e2e:kubelet-bootstrap-manual", "system:node-bootstrapper", "Group", MANUAL_TOKEN_GROUP],
  // kubeadm:node-autoapprove-certificate-rotation: and nodes' renewals of their own.
  [
    "kubeadm:node-autoapprove-certificate-rotation",
    "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
    "Group",
    "system:nodes",
  ],
] as const;

function randomToken(n: number): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return [...crypto.getRandomValues(new Uint8Array(n))].map((b) => alphabet[b % 36]).join("");
}

async function apply(cluster: Cluster, obj: unknown): Promise<void> {
  const res = await cluster.kubectl(["apply", "-f", "-"], { stdin: JSON.stringify(obj) });
  if (res.code !== 0) throw new Error(`e2e: kubectl apply: ${res.stderr}`);
}

/** Options for {@link bootstrapKubeconfig}. */
export interface BootstrapKubeconfigOptions {
  /** Write a token the apiserver does not know (no Secret for it). */
  unknownToken?: boolean;
  /** The token's CSRs are not auto-approved (its group is {@link MANUAL_TOKEN_GROUP}). */
  manualApproval?: boolean;
}

/**
 * Creates a bootstrap token and kubeadm's RBAC bindings (idempotent), and writes a
 * bootstrap kubeconfig for it (kubeadm's `bootstrap-kubelet.conf`).
 * @returns the bootstrap kubeconfig's path, the token and its id
 */
export async function bootstrapKubeconfig(
  cluster: Cluster,
  opts: BootstrapKubeconfigOptions = {},
): Promise<{ path: string; token: string; id: string }> {
  const id = randomToken(6);
  const secret = randomToken(16);
  for (const [name, role, kind, subject] of RBAC) {
    await apply(cluster, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind, name: subject }],
    });
  }
  if (!opts.unknownToken) {
    await apply(cluster, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: `bootstrap-token-${id}`, namespace: "kube-system" },
      type: "bootstrap.kubernetes.io/token",
      stringData: {
        "token-id": id,
        "token-secret": secret,
        "usage-bootstrap-authentication": "true",
        "usage-bootstrap-signing": "true",
        "auth-extra-groups": opts.manualApproval ? MANUAL_TOKEN_GROUP : NODE_TOKEN_GROUP,
      },
    });
  }
  const token = `${id}.${secret}`;
  const path = `${cluster.dir}/bootstrap-${id}.kubeconfig`;
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: "e2e",
      cluster: {
        server: cluster.apiserverUrl,
        "certificate-authority-data": btoa(await Deno.readTextFile(cluster.caFile)),
      },
    }],
    users: [{ name: "tls-bootstrap-token-user", user: { token } }],
    contexts: [{
      name: "tls-bootstrap-token-user@e2e",
      context: { cluster: "e2e", user: "tls-bootstrap-token-user" },
    }],
    "current-context": "tls-bootstrap-token-user@e2e",
  };
  await Deno.writeTextFile(path, JSON.stringify(config, null, 2) + "\n", { mode: 0o600 });
  return { path, token, id };
}
