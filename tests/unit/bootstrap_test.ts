import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  CERT_CHECK_PERIOD_MS,
  CertificateManager,
  type CertificateSigningRequest,
  certSatisfiesTemplate,
  CsrRejectedError,
  issuedCertificate,
  KUBELET_CLIENT_SIGNER,
  NO_CERT_EXIT_AFTER_MS,
  requestCertificate,
  ROTATION_BACKOFF_INITIAL_MS,
  rotationDeadline,
  servingTemplate,
  waitForCertificate,
  waitForFirstCertificate,
  watchClientCertificate,
} from "../../lib/bootstrap/mod.ts";
import {
  CertificateFileStore,
  type DistinguishedName,
  EXT_KEY_USAGE,
  generateRsaKeyPair,
  issueCertificate,
  KEY_USAGE,
  pemBlocks,
  toPem,
} from "../../lib/certs/mod.ts";
import { type Item, readItem } from "../../lib/certs/_der.ts";
import { ApiError, type KubeClient, type WatchEvent } from "../../lib/kubeapi/mod.ts";
import type { NodeAddress } from "../../lib/api/cluster_types.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { advance, flushUntil, waitFor, withTempDir } from "../kit/mod.ts";

const CN = "system:node:node-1";
const SUBJECT: DistinguishedName = { commonName: CN, organizations: ["system:nodes"] };
const MIN = 60_000;

/** The SubjectPublicKeyInfo DER inside a PEM certificate request. */
function csrSpki(pem: string): Uint8Array {
  const der = pemBlocks(pem, "CERTIFICATE REQUEST")[0]!;
  const info = readItem(der, readItem(der, 0).start);
  let pos = info.start;
  let item: Item | undefined;
  for (let i = 0; i < 3; i++) {
    item = readItem(der, pos);
    if (i < 2) pos = item.end;
  }
  return der.slice(pos, item!.end);
}

/**
 * certificates.k8s.io as the apiserver with csrapproving and csrsigning serves it:
 * create, get, list by name, watch; `decide` says what happens to each new request.
 */
class FakeCsrApi implements Partial<KubeClient> {
  csrs = new Map<string, CertificateSigningRequest>();
  watchers = new Set<(ev: WatchEvent<CertificateSigningRequest>) => void>();
  seq = 0;
  createError: Error | undefined;
  constructor(
    readonly clock: FakeClock,
    readonly decide: (csr: CertificateSigningRequest) => "issue" | "deny" | "pending",
    readonly lifetimeMs = 10 * MIN,
    /** The SANs the signer writes (it does not read them from the request). */
    readonly sans: () => { ipAddresses?: string[] } = () => ({}),
  ) {}

  async create<T>(_path: string, body: unknown): Promise<T> {
    if (this.createError) throw this.createError;
    const csr = structuredClone(body) as CertificateSigningRequest;
    const name = csr.metadata.name ?? `csr-${++this.seq}`;
    if (this.csrs.has(name)) throw new ApiError("exists", 409, "AlreadyExists");
    csr.metadata = { name, uid: `uid-${name}`, resourceVersion: "1" };
    this.csrs.set(name, csr);
    const what = this.decide(csr);
    if (what === "issue") await this.issue(name);
    if (what === "deny") {
      csr.status = { conditions: [{ type: "Denied", reason: "Nope", message: "not you" }] };
    }
    return structuredClone(csr) as T;
  }

  async issue(name: string): Promise<void> {
    const csr = this.csrs.get(name)!;
    const requestPem = Buffer.from(csr.spec.request, "base64").toString();
    const publicKey = await crypto.subtle.importKey(
      "spki",
      csrSpki(requestPem) as Uint8Array<ArrayBuffer>,
      { name: "ECDSA", namedCurve: "P-256" },
      true,
      ["verify"],
    );
    const ca = await generateRsaKeyPair();
    const now = this.clock.now();
    const der = await issueCertificate(
      {
        serial: ++this.seq,
        subject: SUBJECT,
        notBefore: now,
        notAfter: now + this.lifetimeMs,
        keyUsage: [KEY_USAGE.digitalSignature],
        extKeyUsage: [EXT_KEY_USAGE.clientAuth],
        isCA: false,
        ...this.sans(),
      },
      { publicKey, privateKey: ca.privateKey },
      { name: { commonName: "ca" }, keys: ca },
    );
    csr.status = {
      conditions: [{ type: "Approved", reason: "AutoApproved" }],
      certificate: Buffer.from(toPem("CERTIFICATE", der)).toString("base64"),
    };
    for (const w of this.watchers) w({ type: "MODIFIED", object: structuredClone(csr) });
  }

  get<T>(path: string): Promise<T> {
    const csr = this.csrs.get(path.split("/").at(-1)!);
    if (!csr) return Promise.reject(new ApiError("not found", 404, "NotFound"));
    return Promise.resolve(structuredClone(csr) as T);
  }

  list<T>(_path: string, opts?: { query?: Record<string, string> }) {
    const name = opts?.query?.fieldSelector?.replace("metadata.name=", "") ?? "";
    const csr = this.csrs.get(name);
    return Promise.resolve({
      items: (csr ? [structuredClone(csr)] : []) as T[],
      metadata: { resourceVersion: "1" },
    });
  }

  watch<T>(
    _path: string,
    onEvent: (ev: WatchEvent<T>) => void,
    opts?: { signal?: AbortSignal },
  ): Promise<void> {
    const fn = onEvent as (ev: WatchEvent<CertificateSigningRequest>) => void;
    this.watchers.add(fn);
    return new Promise((resolve) => {
      opts?.signal?.addEventListener("abort", () => {
        this.watchers.delete(fn);
        resolve();
      }, { once: true });
    });
  }

  close() {}

  client(): KubeClient {
    return this as unknown as KubeClient;
  }
}

Deno.test("rotationDeadline() falls between 70% and 90% of the lifetime, as client-go's jitter", () => {
  assert.equal(rotationDeadline(0, 1000, 0), 700);
  assert.equal(rotationDeadline(0, 1000, 0.5), 800);
  assert.ok(Math.abs(rotationDeadline(1000, 2000, 0.999999) - 1900) < 0.01);
});

Deno.test("issuedCertificate(): pending, approved without and with a certificate, denied, failed", () => {
  const csr = (conditions: { type: string; reason?: string }[], certificate?: string) =>
    ({
      metadata: { name: "c", uid: "u" },
      spec: { request: "", signerName: KUBELET_CLIENT_SIGNER, usages: [] },
      status: { conditions, ...(certificate ? { certificate: btoa(certificate) } : {}) },
    }) satisfies CertificateSigningRequest;
  assert.equal(issuedCertificate(csr([]), "u"), undefined);
  assert.equal(issuedCertificate(csr([{ type: "Approved" }]), "u"), undefined);
  assert.equal(issuedCertificate(csr([{ type: "Approved" }], "PEM"), "u"), "PEM");
  assert.throws(
    () => issuedCertificate(csr([{ type: "Denied", reason: "Policy" }]), "u"),
    (e) => e instanceof CsrRejectedError && /is denied, reason: Policy/.test(e.message),
  );
  assert.throws(() => issuedCertificate(csr([{ type: "Failed" }]), "u"), /failed/);
  assert.throws(() => issuedCertificate(csr([]), "other"), /changed UIDs/);
});

Deno.test("requestCertificate() reuses a same-named request for the same key, refuses another", async () => {
  const clock = new FakeClock();
  const api = new FakeCsrApi(clock, () => "pending");
  const req = {
    csrPem: "REQ",
    name: "node-csr-x",
    signerName: KUBELET_CLIENT_SIGNER,
    usages: ["client auth"],
  };
  const made = await requestCertificate(api.client(), req);
  assert.deepEqual(made, { name: "node-csr-x", uid: "uid-node-csr-x" });
  assert.deepEqual(await requestCertificate(api.client(), req), made);
  await assert.rejects(
    requestCertificate(api.client(), { ...req, csrPem: "OTHER" }),
    /not compatible/,
  );
  // A bootstrap token the apiserver rejects surfaces as its 401.
  api.createError = new ApiError("Unauthorized", 401, "Unauthorized");
  await assert.rejects(
    requestCertificate(api.client(), { ...req, name: "node-csr-y" }),
    (e) =>
      e instanceof ApiError && e.status === 401 &&
      /cannot create certificate signing request/.test(e.message),
  );
});

Deno.test("waitForCertificate() returns once the watch sees it issued; a denial ends it", async () => {
  const clock = new FakeClock();
  const api = new FakeCsrApi(clock, () => "pending");
  const req = { csrPem: "REQ", signerName: KUBELET_CLIENT_SIGNER, usages: ["client auth"] };
  const made = await requestCertificate(api.client(), req);
  const signal = new AbortController().signal;
  const waiting = waitForCertificate(api.client(), made, { signal, clock });
  await flushUntil("the watch", () => api.watchers.size === 1);
  const csr = api.csrs.get(made.name)!;
  csr.spec.request = Buffer.from(
    "-----BEGIN CERTIFICATE REQUEST-----\n-----END CERTIFICATE REQUEST-----\n",
  ).toString("base64");
  csr.status = { conditions: [{ type: "Approved" }], certificate: btoa("CERT") };
  for (const w of api.watchers) w({ type: "MODIFIED", object: structuredClone(csr) });
  assert.equal(await waiting, "CERT");

  const denied = await requestCertificate(api.client(), req);
  const waitDenied = waitForCertificate(api.client(), denied, { signal, clock });
  await flushUntil("the watch", () => api.watchers.size === 1);
  const d = api.csrs.get(denied.name)!;
  d.status = { conditions: [{ type: "Denied", reason: "Nope", message: "no" }] };
  for (const w of api.watchers) w({ type: "MODIFIED", object: structuredClone(d) });
  await assert.rejects(waitDenied, /denied, reason: Nope, message: no/);
});

Deno.test("CertificateManager: first certificate, renewal at the deadline, backoff while the apiserver fails", async () => {
  await withTempDir(async (dir) => {
    const clock = new FakeClock(Date.UTC(2026, 11, 2, 4, 0, 0));
    const api = new FakeCsrApi(clock, () => "issue", 10 * MIN);
    const clients: boolean[] = [];
    const manager = new CertificateManager({
      kind: "client",
      store: new CertificateFileStore("kubelet-client", dir),
      signerName: KUBELET_CLIENT_SIGNER,
      usages: ["digital signature", "client auth"],
      template: () => ({ subject: SUBJECT }),
      client: (haveCert) => {
        clients.push(haveCert);
        return api.client();
      },
      clock,
      logger: silentLogger,
      random: () => 0.5,
    });
    await manager.load();
    assert.equal(manager.current(), undefined);
    assert.match(manager.problem() ?? "", /no client certificate yet/);
    const seen: string[] = [];
    manager.onChange((p) => seen.push(p.serial));
    manager.start();
    const first = await manager.waitForCertificate(AbortSignal.timeout(10_000));
    assert.equal(manager.problem(), undefined);
    assert.deepEqual(clients, [false]);
    // 80% of 10 minutes (random 0.5): nothing before 8 min, a new certificate after.
    await advance(clock, 7 * MIN + 50_000, 10_000);
    assert.equal(seen.length, 1);
    await advance(clock, 20_000);
    await waitFor("the renewal", () => seen.length === 2 || undefined, { intervalMs: 10 });
    assert.deepEqual(clients, [false, true]);
    assert.notEqual(manager.current()?.serial, first.serial);

    // The apiserver fails when the next renewal is due: retries 2 s, 4 s, ... until it answers.
    api.createError = new Error("POST: connection refused");
    await advance(clock, 8 * MIN + 1000);
    const attempts = () => clients.length;
    const before = attempts();
    await advance(clock, ROTATION_BACKOFF_INITIAL_MS * 1.1 + 100, 100);
    assert.equal(attempts(), before + 1);
    assert.match(manager.lastError() ?? "", /connection refused/);
    // Past the certificate's end it says so.
    await advance(clock, 2 * MIN);
    assert.match(manager.problem() ?? "", /client certificate expired at .*connection refused/);
    api.createError = undefined;
    await advance(clock, 40_000);
    await waitFor("the renewal after the outage", () => seen.length === 3 || undefined, {
      intervalMs: 10,
    });
    assert.equal(manager.problem(), undefined);
    await manager.stop();
  });
});

Deno.test("certSatisfiesTemplate(): a certificate missing a requested name or org is renewed", async () => {
  const ca = await generateRsaKeyPair();
  const der = await issueCertificate({
    serial: 1,
    subject: SUBJECT,
    notBefore: 0,
    notAfter: 1e12,
    keyUsage: [KEY_USAGE.digitalSignature],
    isCA: false,
    dnsNames: ["node-1"],
    ipAddresses: ["10.0.0.5"],
  }, ca);
  const pem = toPem("CERTIFICATE", der);
  assert.ok(
    certSatisfiesTemplate(pem, {
      subject: SUBJECT,
      dnsNames: ["node-1"],
      ipAddresses: ["10.0.0.5"],
    }),
  );
  assert.ok(certSatisfiesTemplate(pem, { subject: SUBJECT }));
  assert.ok(!certSatisfiesTemplate(pem, { subject: SUBJECT, ipAddresses: ["10.0.0.6"] }));
  assert.ok(!certSatisfiesTemplate(pem, { subject: SUBJECT, dnsNames: ["other"] }));
  assert.ok(!certSatisfiesTemplate(pem, { subject: { ...SUBJECT, commonName: "x" } }));
  assert.ok(!certSatisfiesTemplate(pem, { subject: { ...SUBJECT, organizations: ["o"] } }));
});

Deno.test("servingTemplate(): the Node's names and IPs, sorted and deduplicated; nothing without an IP", () => {
  assert.equal(servingTemplate("node-1", undefined), undefined);
  assert.equal(servingTemplate("node-1", [{ type: "Hostname", address: "node-1" }]), undefined);
  assert.deepEqual(
    servingTemplate("node-1", [
      { type: "Hostname", address: "node-1" },
      { type: "InternalIP", address: "10.0.0.5" },
      { type: "ExternalIP", address: "fd00::5" },
      { type: "InternalDNS", address: "node-1.internal" },
      { type: "ExternalIP", address: "not-an-ip" },
      { type: "InternalIP", address: "10.0.0.5" },
      { type: "InternalIP", address: "" },
    ]),
    {
      subject: SUBJECT,
      dnsNames: ["node-1", "node-1.internal"],
      ipAddresses: ["10.0.0.5", "fd00::5"],
    },
  );
  // A Hostname that is an IP is requested as an IP.
  assert.deepEqual(
    servingTemplate("node-1", [{ type: "Hostname", address: "10.0.0.9" }])?.ipAddresses,
    ["10.0.0.9"],
  );
});

Deno.test("CertificateManager: a changed template (new Node address) is requested before the deadline", async () => {
  await withTempDir(async (dir) => {
    const clock = new FakeClock(Date.UTC(2026, 11, 2, 4, 0, 0));
    let addresses: NodeAddress[] = [{ type: "InternalIP", address: "10.0.0.5" }];
    const api = new FakeCsrApi(clock, () => "issue", 60 * MIN, () => ({
      ipAddresses: addresses.map((a) => a.address),
    }));
    const manager = new CertificateManager({
      kind: "serving",
      store: new CertificateFileStore("kubelet-server", dir),
      signerName: "kubernetes.io/kubelet-serving",
      usages: ["digital signature", "server auth"],
      template: () => servingTemplate("node-1", addresses),
      client: () => api.client(),
      clock,
      logger: silentLogger,
      random: () => 0.5,
    });
    await manager.load();
    manager.start();
    await manager.waitForCertificate(AbortSignal.timeout(10_000));
    assert.equal(api.csrs.size, 1);
    // The pair covers the template: nothing more until the deadline (48 min).
    await advance(clock, 10_000, 500);
    assert.equal(api.csrs.size, 1);
    // A new address: the 1 s template check asks again at once.
    addresses = [{ type: "InternalIP", address: "10.0.0.6" }];
    await advance(clock, 1500, 500);
    await waitFor("a second request", () => api.csrs.size === 2 || undefined, { intervalMs: 10 });
    await waitFor("the new pair", () => manager.current()?.serial !== undefined || undefined);
    await advance(clock, 10_000, 500);
    assert.equal(api.csrs.size, 2);
    await manager.stop();
  });
});

/** A client manager over `api` in `dir`, with the fake clock. */
function clientManager(dir: string, clock: FakeClock, api: FakeCsrApi): CertificateManager {
  return new CertificateManager({
    kind: "client",
    store: new CertificateFileStore("kubelet-client", dir),
    signerName: KUBELET_CLIENT_SIGNER,
    usages: ["digital signature", "client auth"],
    template: () => ({ subject: SUBJECT }),
    client: () => api.client(),
    clock,
    logger: silentLogger,
    random: () => 0.5,
  });
}

Deno.test("waitForFirstCertificate(): gives up after 5 min when the apiserver answers 401, waits on when it is unreachable", async () => {
  await withTempDir(async (dir) => {
    const clock = new FakeClock(Date.UTC(2026, 11, 2, 4, 0, 0));
    const api = new FakeCsrApi(clock, () => "issue");
    api.createError = new ApiError("Unauthorized", 401, "Unauthorized");
    const manager = clientManager(dir, clock, api);
    await manager.load();
    manager.start();
    const waiting = waitForFirstCertificate(manager, {
      signal: new AbortController().signal,
      clock,
      logger: silentLogger,
    });
    let outcome: unknown;
    waiting.then((v) => (outcome = v), (e) => (outcome = e));
    await advance(clock, NO_CERT_EXIT_AFTER_MS - CERT_CHECK_PERIOD_MS, 2000);
    assert.equal(outcome, undefined);
    assert.equal(manager.serverHealthy(), true);
    await advance(clock, 2 * CERT_CHECK_PERIOD_MS, 2000);
    assert.match(String(outcome), /no valid client certificate after 5 minutes .*Unauthorized/);
    await manager.stop();
  });
  await withTempDir(async (dir) => {
    const clock = new FakeClock(Date.UTC(2026, 11, 2, 4, 0, 0));
    const api = new FakeCsrApi(clock, () => "issue");
    api.createError = new Error("POST: connection refused");
    const manager = clientManager(dir, clock, api);
    await manager.load();
    manager.start();
    const waiting = waitForFirstCertificate(manager, {
      signal: new AbortController().signal,
      clock,
      logger: silentLogger,
    });
    await advance(clock, 2 * NO_CERT_EXIT_AFTER_MS, 4000);
    assert.equal(manager.serverHealthy(), false);
    // The apiserver comes back: the retry (every 32 s) gets the certificate.
    api.createError = undefined;
    await advance(clock, 40_000, 2000);
    const pair = await waiting;
    assert.equal(pair.serial, manager.current()?.serial);
    await manager.stop();
  });
});

Deno.test("watchClientCertificate(): an expired certificate ends the agent only while the apiserver answers", async () => {
  await withTempDir(async (dir) => {
    const clock = new FakeClock(Date.UTC(2026, 11, 2, 4, 0, 0));
    const api = new FakeCsrApi(clock, () => "issue", 10 * MIN);
    const manager = clientManager(dir, clock, api);
    await manager.load();
    manager.start();
    await manager.waitForCertificate(AbortSignal.timeout(10_000));
    // Renewals fail as if the apiserver were gone, past the certificate's end.
    api.createError = new Error("POST: connection refused");
    let exits = 0;
    const watch = watchClientCertificate(manager, {
      clock,
      logger: silentLogger,
      exit: () => exits++,
    });
    await advance(clock, 11 * MIN, 2000);
    assert.equal(exits, 0);
    assert.match(manager.problem() ?? "", /expired/);
    // The apiserver answers, refusing the node: it exits.
    api.createError = new ApiError("Forbidden", 403, "Forbidden");
    await advance(clock, 40_000 + CERT_CHECK_PERIOD_MS, 2000);
    assert.ok(exits >= 1);
    watch.cancel();
    await manager.stop();
  });
});

Deno.test("CertificateManager.load(): the kubeconfig's own pair is stored and rotated at once; a valid stored pair is kept", async () => {
  await withTempDir(async (dir) => {
    const clock = new FakeClock(Date.UTC(2026, 11, 2, 4, 0, 0));
    const api = new FakeCsrApi(clock, () => "issue", 60 * MIN);
    // A pair as a kubeconfig would carry it, issued by the same fake signer.
    const seed = clientManager(`${dir}/seed`, clock, api);
    await seed.load();
    await seed.rotate();
    const given = seed.current()!;
    const manager = new CertificateManager({
      kind: "client",
      store: new CertificateFileStore("kubelet-client", `${dir}/pki`),
      signerName: KUBELET_CLIENT_SIGNER,
      usages: ["digital signature", "client auth"],
      template: () => ({ subject: SUBJECT }),
      client: () => api.client(),
      initial: { cert: given.cert, key: given.key },
      clock,
      logger: silentLogger,
      random: () => 0.5,
    });
    await manager.load();
    assert.equal(manager.current()?.serial, given.serial);
    assert.ok(Deno.lstatSync(`${dir}/pki/kubelet-client-current.pem`).isSymlink);
    const before = api.csrs.size;
    manager.start();
    await waitFor("the immediate rotation", () => api.csrs.size === before + 1 || undefined, {
      intervalMs: 10,
    });
    await waitFor("the new pair", () => manager.current()?.serial !== given.serial || undefined);
    await manager.stop();

    // Loaded again, the stored (unexpired) pair is used as it is.
    const again = clientManager(`${dir}/pki`, clock, api);
    await again.load();
    assert.equal(again.current()?.serial, manager.current()?.serial);
    assert.ok(again.nextRotationDeadline() > clock.now());
  });
});
