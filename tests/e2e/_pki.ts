/**
 * Certificates and kubeconfigs for the e2e control plane, made with the `openssl` CLI:
 * one CA signs every serving and client certificate.
 *
 * @module
 */

import { exec } from "../harness/_exec.ts";

/** What {@link makeCert} puts in a certificate. */
export interface CertSpec {
  /** openssl's -subj form, e.g. `/O=system:nodes/CN=system:node:a`. */
  subject: string;
  usage?: "clientAuth" | "serverAuth";
  /** subjectAltName entries, e.g. `IP:127.0.0.1`. */
  sans?: readonly string[];
}

// Our own minimal openssl config, so no distribution's openssl.cnf defaults leak in.
const OPENSSL_CNF = `[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
`;

/** An ECDSA P-256 key: generated in milliseconds, accepted by Go, rustls and OpenSSL. */
export async function makeKey(path: string): Promise<void> {
  await exec(
    "openssl",
    ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
      .concat(["-out", path]),
  );
}

/**
 * The service account signing key `sa.key` and its public half `sa.pub` (the apiserver
 * reads only public keys from --service-account-key-file).
 */
export async function makeServiceAccountKey(pki: string): Promise<void> {
  await makeKey(`${pki}/sa.key`);
  await exec("openssl", ["pkey", "-in", `${pki}/sa.key`, "-pubout", "-out", `${pki}/sa.pub`]);
}

/** The cluster CA: `ca.crt`/`ca.key` in `pki`. */
export async function writeCa(pki: string): Promise<void> {
  await Deno.writeTextFile(`${pki}/openssl.cnf`, OPENSSL_CNF);
  await makeKey(`${pki}/ca.key`);
  await exec("openssl", [
    ...["req", "-x509", "-new", "-key", `${pki}/ca.key`, "-subj", "/CN=denolet-e2e-ca"],
    ...["-days", "3650", "-config", `${pki}/openssl.cnf`, "-extensions", "ca"],
    ...["-out", `${pki}/ca.crt`],
  ]);
}

/**
 * A key and a CA-signed certificate: `<base>.key`, `<base>.crt`, and `<base>.pem` holding
 * both (the kubelet's kubelet-client-current.pem layout).
 */
export async function makeCert(pki: string, base: string, spec: CertSpec): Promise<void> {
  const path = `${pki}/${base}`;
  await makeKey(`${path}.key`);
  await exec("openssl", [
    ...["req", "-new", "-key", `${path}.key`, "-subj", spec.subject],
    ...["-config", `${pki}/openssl.cnf`, "-out", `${path}.csr`],
  ]);
  const ext = [
    "[leaf]",
    "basicConstraints = critical,CA:FALSE",
    "keyUsage = critical,digitalSignature",
    `extendedKeyUsage = ${spec.usage ?? "clientAuth"}`,
    ...(spec.sans === undefined ? [] : [`subjectAltName = ${spec.sans.join(",")}`]),
  ];
  await Deno.writeTextFile(`${path}.ext`, ext.join("\n") + "\n");
  const serial = crypto.getRandomValues(new Uint8Array(16));
  serial[0] = (serial[0] ?? 0) & 0x7f; // positive, as RFC 5280 asks
  await exec("openssl", [
    ...["x509", "-req", "-in", `${path}.csr`, "-CA", `${pki}/ca.crt`, "-CAkey", `${pki}/ca.key`],
    ...["-set_serial", `0x${[...serial].map((b) => b.toString(16).padStart(2, "0")).join("")}`],
    ...["-days", "365", "-extfile", `${path}.ext`, "-extensions", "leaf", "-out", `${path}.crt`],
  ]);
  const pem = await Deno.readTextFile(`${path}.crt`) + await Deno.readTextFile(`${path}.key`);
  await Deno.writeTextFile(`${path}.pem`, pem, { mode: 0o600 });
}

/** The first address of a service CIDR: the `kubernetes` Service's ClusterIP. */
export function firstServiceIp(cidr: string): string {
  const octets = (cidr.split("/")[0] ?? "").split(".").map(Number);
  if (octets.length !== 4 || octets.some((o) => !(o >= 0 && o <= 255))) {
    throw new Error(`e2e: service CIDR ${cidr} is not IPv4 CIDR`);
  }
  octets[3] = (octets[3] ?? 0) + 1;
  return octets.join(".");
}

/**
 * Writes a kubeconfig for `server` that trusts the cluster CA and authenticates with the
 * client certificate `<pki>/<cert>.crt`.
 *
 * @param embed embed the client certificate and key as data instead of naming `<cert>.pem`
 */
export async function writeKubeconfig(
  path: string,
  server: string,
  pki: string,
  cert: string,
  embed = false,
): Promise<void> {
  const b64 = async (file: string) => btoa(await Deno.readTextFile(file));
  // kubeadm's layout: CA embedded; the client pair in one PEM file, as a kubelet's
  // kubelet-client-current.pem, unless asked to embed it too.
  const pair = `${pki}/${cert}.pem`;
  const user = embed
    ? {
      "client-certificate-data": await b64(`${pki}/${cert}.crt`),
      "client-key-data": await b64(`${pki}/${cert}.key`),
    }
    : { "client-certificate": pair, "client-key": pair };
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: "e2e",
      cluster: { server, "certificate-authority-data": await b64(`${pki}/ca.crt`) },
    }],
    users: [{ name: cert, user }],
    contexts: [{ name: "e2e", context: { cluster: "e2e", user: cert } }],
    "current-context": "e2e",
  };
  await Deno.writeTextFile(path, JSON.stringify(config, null, 2) + "\n", { mode: 0o600 });
}
