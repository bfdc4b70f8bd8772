// Fixtures for the server_auth tests: a fake apiserver (TokenReview and
// SubjectAccessReview over loopback HTTP) reached through lib/kubeapi's
// client, and certificates made with lib/certs.

import {
  EXT_KEY_USAGE,
  generateRsaKeyPair,
  issueCertificate,
  KEY_USAGE,
  type RsaKeyPair,
  rsaPrivateKeyPkcs1,
  toPem,
} from "../../lib/certs/mod.ts";
import { createKubeClient, type KubeClient, UserCredentials } from "../../lib/kubeapi/mod.ts";

/** What the fake TokenReview says about a token. */
export type TokenVerdict =
  | { user: { username: string; groups?: string[]; uid?: string } }
  | { rejected: true; error?: string }
  | { httpStatus: number };

/** A SubjectAccessReview spec as the kubelet sends it. */
export interface SarSpec {
  user: string;
  groups?: string[];
  resourceAttributes: {
    verb: string;
    resource: string;
    subresource: string;
    name: string;
    version: string;
  };
}

/** The fake apiserver. */
export interface FakeApiserver {
  client: KubeClient;
  tokenReviews: string[];
  sars: SarSpec[];
  close(): Promise<void>;
}

/**
 * Starts a fake apiserver.
 * @param tokens verdict per token; unknown tokens are rejected without error
 * @param policy decides SubjectAccessReviews; "error" answers 500
 */
export function fakeApiserver(
  tokens: Record<string, TokenVerdict>,
  policy: (spec: SarSpec) => { allowed: boolean; denied?: boolean; reason?: string } | "error",
): FakeApiserver {
  const tokenReviews: string[] = [];
  const sars: SarSpec[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    const body = await req.json();
    if (url.pathname === "/apis/authentication.k8s.io/v1/tokenreviews") {
      const token: string = body.spec.token;
      tokenReviews.push(token);
      const v = tokens[token] ?? { rejected: true };
      if ("httpStatus" in v) {
        return Response.json({ kind: "Status", code: v.httpStatus, message: "boom" }, {
          status: v.httpStatus,
        });
      }
      const status = "user" in v
        ? { authenticated: true, user: v.user }
        : { authenticated: false, ...(v.error ? { error: v.error } : {}) };
      return Response.json({ ...body, status });
    }
    if (url.pathname === "/apis/authorization.k8s.io/v1/subjectaccessreviews") {
      sars.push(body.spec);
      const decision = policy(body.spec);
      if (decision === "error") {
        return Response.json({ kind: "Status", code: 500, message: "boom" }, { status: 500 });
      }
      return Response.json({ ...body, status: decision });
    }
    return new Response("not found", { status: 404 });
  });
  const client = createKubeClient({
    kubeconfig: {
      path: "/test/kubeconfig",
      context: "test",
      cluster: "test",
      server: `http://127.0.0.1:${server.addr.port}`,
      insecureSkipTLSVerify: false,
      credentials: new UserCredentials({ source: "test", fixed: { token: "node-token" } }),
    },
    // The tests count calls, so a retried 5xx must not add one.
    timeoutMs: 5_000,
  });
  return {
    client,
    tokenReviews,
    sars,
    close: async () => {
      client.close();
      await server.shutdown();
    },
  };
}

/** A CA that issues client certificates. */
export interface TestCA {
  pem: string;
  der: Uint8Array;
  keys: RsaKeyPair;
  name: { commonName: string };
  /** Issues a client certificate; returns its DER, PEM and key PEM. */
  issue(opts: {
    commonName: string;
    organizations?: string[];
    extKeyUsage?: string[];
    notBefore?: number;
    notAfter?: number;
    isCA?: boolean;
  }): Promise<{ der: Uint8Array; pem: string; keyPem: string; keys: RsaKeyPair }>;
}

const DAY = 86_400_000;

/** Makes a CA valid around `now`. */
export async function testCA(commonName: string, now = Date.now()): Promise<TestCA> {
  const keys = await generateRsaKeyPair();
  const name = { commonName };
  const der = await issueCertificate({
    serial: 1,
    subject: name,
    notBefore: now - DAY,
    notAfter: now + DAY,
    keyUsage: [KEY_USAGE.digitalSignature, KEY_USAGE.keyCertSign],
    isCA: true,
  }, keys);
  let serial = 2;
  return {
    pem: toPem("CERTIFICATE", der),
    der,
    keys,
    name,
    async issue(o) {
      const leafKeys = await generateRsaKeyPair();
      const leaf = await issueCertificate(
        {
          serial: serial++,
          subject: {
            commonName: o.commonName,
            ...(o.organizations ? { organizations: o.organizations } : {}),
          },
          notBefore: o.notBefore ?? now - DAY,
          notAfter: o.notAfter ?? now + DAY,
          keyUsage: o.isCA
            ? [KEY_USAGE.digitalSignature, KEY_USAGE.keyCertSign]
            : [KEY_USAGE.digitalSignature, KEY_USAGE.keyEncipherment],
          extKeyUsage: o.extKeyUsage ?? (o.isCA ? [] : [EXT_KEY_USAGE.clientAuth]),
          isCA: o.isCA ?? false,
        },
        leafKeys,
        { name, keys },
      );
      return {
        der: leaf,
        pem: toPem("CERTIFICATE", leaf),
        keyPem: toPem("RSA PRIVATE KEY", await rsaPrivateKeyPkcs1(leafKeys.privateKey)),
        keys: leafKeys,
      };
    },
  };
}
