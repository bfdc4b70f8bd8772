/**
 * Part 3 of bench/server.ts: the secure port's authentication and
 * authorization caches against a real kube-apiserver. Requests from several
 * service accounts (bearer tokens, `authentication.webhook`), one rejected
 * token, and a user RBAC refuses, on three endpoint families
 * (`authorization.mode: Webhook`), each pair asked many times, first all at
 * once and then one after another; the TokenReviews and SubjectAccessReviews
 * the apiserver served in the meantime are counted from its own
 * `apiserver_request_total`.
 *
 * Target: ≤ 1 TokenReview per distinct token and ≤ 1 SubjectAccessReview per
 * distinct (user, verb, resource, subresource) within the TTLs.
 *
 * @module
 */

import { join } from "node:path";
import { startTestRuntime } from "../tests/harness/mod.ts";
import { startAgent } from "../tests/integration/_agent.ts";
import { startCluster } from "../tests/e2e/_cluster.ts";
import { makeCert } from "../tests/e2e/_pki.ts";
import { sampleSum, waitFor } from "../tests/kit/mod.ts";
import { subresourcesFor } from "../lib/server_auth/attributes.ts";

const NS = "bench-auth";
/** Bound to a role that allows nodes/stats, nodes/metrics and nodes/proxy. */
const ALLOWED_USERS = ["reader-0", "reader-1", "reader-2"];
/** No binding: every request is 403. */
const DENIED_USERS = ["stranger"];
const PATHS = ["/stats/summary", "/metrics", "/pods"];
/** Names the token TokenReview rejects in the tables. */
const REJECTED = "(rejected token)";
/** Requests per (token, path): half at once, half one after another. */
const REPEATS = 20;

/** What `authorization.webhook` caches: allowed 5 min, denied 30 s (upstream's defaults). */
const AUTHZ_TTL = { cacheAuthorizedTTL: "5m0s", cacheUnauthorizedTTL: "30s" };

/**
 * Runs part 3.
 * @returns markdown lines for docs/benchmarks.md
 */
export async function runAuthCacheBench(): Promise<string[]> {
  const cluster = await startCluster();
  const rt = await startTestRuntime({ name: "bench-auth" });
  const scratch = await Deno.makeTempDir({ prefix: "denolet-bench-auth-" });
  let agent: Awaited<ReturnType<typeof startAgent>> | undefined;
  try {
    const pki = join(cluster.dir, "pki");
    await makeCert(pki, "bench-serving", {
      subject: "/CN=testnode",
      usage: "serverAuth",
      sans: ["IP:127.0.0.1"],
    });
    const config = join(scratch, "kubelet.json");
    await Deno.writeTextFile(
      config,
      JSON.stringify({
        apiVersion: "kubelet.config.k8s.io/v1beta1",
        kind: "KubeletConfiguration",
        tlsCertFile: join(pki, "bench-serving.crt"),
        tlsPrivateKeyFile: join(pki, "bench-serving.key"),
        authentication: {
          x509: { clientCAFile: cluster.caFile },
          anonymous: { enabled: false },
          webhook: { enabled: true, cacheTTL: "2m0s" },
        },
        authorization: { mode: "Webhook", webhook: AUTHZ_TTL },
      }),
    );
    agent = await startAgent({
      runtime: rt,
      extraArgs: [
        `--config=${config}`,
        `--kubeconfig=${await cluster.nodeKubeconfig("testnode")}`,
        "--node-ip=127.0.0.1",
        "--v=0",
      ],
    });
    const kubectl = async (...args: string[]) => {
      const r = await cluster.kubectl(args);
      if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr}`);
      return r.stdout.trim();
    };
    await kubectl("create", "namespace", NS);
    await kubectl(
      ...["create", "clusterrole", "bench-node-reader", "--verb=get"],
      "--resource=nodes/stats,nodes/metrics,nodes/proxy",
    );
    const tokens = new Map<string, string>();
    for (const user of [...ALLOWED_USERS, ...DENIED_USERS]) {
      await kubectl("create", "serviceaccount", user, "-n", NS);
      tokens.set(user, await kubectl("create", "token", user, "-n", NS, "--duration=1h"));
    }
    await kubectl(
      ...["create", "clusterrolebinding", "bench-node-reader", "--clusterrole=bench-node-reader"],
      ...ALLOWED_USERS.map((u) => `--serviceaccount=${NS}:${u}`),
    );
    tokens.set(REJECTED, "not-a-real-token");

    const ca = await Deno.readTextFile(cluster.caFile);
    const client = Deno.createHttpClient({ caCerts: [ca] });
    const get = async (path: string, token: string) => {
      const resp = await fetch(`https://127.0.0.1:${agent!.port}${path}`, {
        client,
        headers: { authorization: `Bearer ${token}` },
      });
      await resp.body?.cancel();
      return resp.status;
    };
    // The secure port and RBAC's caches are ready when an allowed user gets 200 (untimed,
    // with a token the bench does not use after: a service account of its own).
    await kubectl("create", "serviceaccount", "warmup", "-n", NS);
    await kubectl(
      ...["create", "clusterrolebinding", "bench-warmup", "--clusterrole=bench-node-reader"],
      `--serviceaccount=${NS}:warmup`,
    );
    const warmup = await kubectl("create", "token", "warmup", "-n", NS);
    await waitFor("the agent's secure port allowing a bound service account", async () => {
      return (await get("/stats/summary", warmup)) === 200 || undefined;
    }, { timeoutMs: 60_000, log: agent.log });

    const reviews = async () => {
      const text = await kubectl("get", "--raw", "/metrics");
      return {
        token: sampleSum(text, "apiserver_request_total", { resource: "tokenreviews" }),
        sar: sampleSum(text, "apiserver_request_total", { resource: "subjectaccessreviews" }),
      };
    };
    const statuses = new Map<string, number[]>();
    /** Each (token, path) {@link REPEATS} times; the reviews the apiserver served meanwhile. */
    const phase = async (users: string[]) => {
      const before = await reviews();
      const pairs = users.flatMap((user) => PATHS.map((path) => ({ user, path })));
      const one = async (p: { user: string; path: string }) => {
        const s = await get(p.path, tokens.get(p.user)!);
        const key = `${p.user} ${p.path}`;
        statuses.set(key, [...statuses.get(key) ?? [], s]);
      };
      await Promise.all(pairs.flatMap((p) => Array.from({ length: REPEATS / 2 }, () => one(p))));
      for (const p of pairs) for (let i = 0; i < REPEATS / 2; i++) await one(p);
      const after = await reviews();
      return { token: after.token - before.token, sar: after.sar - before.sar };
    };
    const t0 = Date.now();
    const users = [...ALLOWED_USERS, ...DENIED_USERS];
    const valid = await phase(users);
    const rejected = await phase([REJECTED]);
    const seconds = (Date.now() - t0) / 1000;
    client.close();
    // What the apiserver answers about the rejected token, as the agent sees it.
    const review = await cluster.kubectlJson<{ status?: { error?: string } }>(
      ["create", "-f", "-"],
      {
        stdin: JSON.stringify({
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenReview",
          spec: { token: tokens.get(REJECTED) },
        }),
      },
    );

    // What the caches allow: one TokenReview per token; one SubjectAccessReview per
    // (user, subresource) the agent asks about. An allowed /pods asks `pods` first
    // (fine-grained authorization), then `proxy`; a refused one asks both.
    const distinctAttrs = new Set(
      users.flatMap((u) =>
        PATHS.flatMap((p) => subresourcesFor(p).map((s) => `${u} get nodes/${s}`))
      ),
    ).size;
    const statusRows = [...statuses].sort(([a], [b]) => a.localeCompare(b)).map(([key, s]) => {
      const counts = new Map<number, number>();
      for (const x of s) counts.set(x, (counts.get(x) ?? 0) + 1);
      return `| ${key} | ${[...counts].map(([c, n]) => `${n} × ${c}`).join(", ")} |`;
    });
    const verdict = (n: number, max: number) => `≤ ${max}: ${n <= max ? "met" : "missed"}`;
    const perPhase = PATHS.length * REPEATS;
    return [
      `### Authentication and authorization caches (real kube-apiserver; ${
        (users.length + 1) * perPhase
      } requests in ${seconds.toFixed(1)} s, within every TTL)`,
      "",
      `Bearer tokens of ${ALLOWED_USERS.length} service accounts bound to nodes/stats, nodes/metrics and nodes/proxy get and of ${DENIED_USERS.length} bound to nothing, then a token TokenReview rejects; each × ${PATHS.length} paths (${
        PATHS.join(", ")
      }), each pair ${REPEATS} times: ${REPEATS / 2} at once, then ${
        REPEATS / 2
      } one after another. TokenReviews and SubjectAccessReviews counted from the apiserver's apiserver_request_total before and after each phase.`,
      "",
      "| requests | TokenReviews | target | SubjectAccessReviews | target |",
      "|---|---|---|---|---|",
      `| ${users.length * perPhase}, ${users.length} valid tokens | ${valid.token} | ${
        verdict(valid.token, users.length)
      } | ${valid.sar} | ${verdict(valid.sar, distinctAttrs)} (user, get, nodes/subresource) |`,
      `| ${perPhase}, the rejected token | ${rejected.token} | see below | ${rejected.sar} | 0 |`,
      "",
      `The apiserver answers the rejected token's TokenReview with \`status.error\` set (${
        JSON.stringify(review.status?.error ?? "")
      }). Upstream's kubelet does not cache such an answer (apiserver's delegating authenticator builds its token cache with cacheErrs=false) and neither does denolet: each request not coalesced with one in flight asks again.`,
      "",
      "| user and path | answers |",
      "|---|---|",
      ...statusRows,
      "",
    ];
  } finally {
    await agent?.stop("SIGTERM");
    await rt.stop();
    await agent?.removeDirs();
    await cluster.stop();
    await Deno.remove(scratch, { recursive: true }).catch(() => {});
  }
}
