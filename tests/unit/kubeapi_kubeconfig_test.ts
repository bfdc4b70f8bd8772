import assert from "node:assert/strict";
import { relative } from "node:path";
import {
  CERT_FILE_REFRESH_MS,
  loadKubeconfig,
  TOKEN_FILE_REFRESH_MS,
} from "../../lib/kubeapi/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { withTempDir } from "../kit/mod.ts";

const FIXTURES = new URL("./fixtures/kubeapi/", import.meta.url).pathname;
const pem = (name: string) => Deno.readTextFileSync(FIXTURES + name);
const b64 = (name: string) => btoa(pem(name));

/** A kubeconfig with one cluster "c" and one user "u"; `user` is YAML under `user:`. */
function kubeconfig(user: string, opts: { cluster?: string; extra?: string } = {}): string {
  return `apiVersion: v1
kind: Config
current-context: ctx
clusters:
- name: c
  cluster:
    server: https://10.0.0.1:6443/
${opts.cluster ?? `    certificate-authority-data: ${b64("ca.crt")}`}
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: kube-system}
${opts.extra ?? ""}
users:
- name: u
  user:
${user}
`;
}

Deno.test("loadKubeconfig() resolves -data fields and the current context", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/config`;
    await Deno.writeTextFile(
      path,
      kubeconfig(
        `    client-certificate-data: ${b64("client.crt")}\n` +
          `    client-key-data: ${b64("client.key")}\n    token: abc`,
      ),
    );
    const auth = await loadKubeconfig(path);
    assert.equal(auth.path, path);
    assert.equal(auth.context, "ctx");
    assert.equal(auth.cluster, "c");
    assert.equal(auth.user, "u");
    assert.equal(auth.namespace, "kube-system");
    assert.equal(auth.server, "https://10.0.0.1:6443");
    assert.equal(auth.caCert, pem("ca.crt"));
    assert.equal(auth.insecureSkipTLSVerify, false);
    assert.deepEqual(await auth.credentials.get(), {
      cert: pem("client.crt"),
      key: pem("client.key"),
      token: "abc",
    });
    assert.equal(auth.credentials.invalidate(), false, "static credentials cannot refresh");
  });
});

Deno.test("loadKubeconfig() reads relative file fields from the kubeconfig's directory", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/etc/pki`, { recursive: true });
    for (const f of ["ca.crt", "client.crt", "client.key"]) {
      await Deno.copyFile(FIXTURES + f, `${dir}/etc/pki/${f}`);
    }
    const path = `${dir}/etc/kubelet.conf`;
    await Deno.writeTextFile(
      path,
      kubeconfig(
        "    client-certificate: pki/client.crt\n" +
          `    client-key: ${dir}/etc/pki/client.key`,
        { cluster: "    certificate-authority: pki/ca.crt" },
      ),
    );
    // Named relative to the cwd, while its fields are relative to its own directory.
    const auth = await loadKubeconfig(relative(Deno.cwd(), path));
    assert.equal(auth.path, path);
    assert.equal(auth.caCert, pem("ca.crt"));
    const creds = await auth.credentials.get();
    assert.equal(creds.cert, pem("client.crt"));
    assert.equal(creds.key, pem("client.key"));
  });
});

Deno.test("loadKubeconfig() prefers -data over its file twin", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/config`;
    await Deno.writeTextFile(
      path,
      kubeconfig("    token: t", {
        cluster: `    certificate-authority: missing.crt\n` +
          `    certificate-authority-data: ${b64("ca.crt")}`,
      }),
    );
    assert.equal((await loadKubeconfig(path)).caCert, pem("ca.crt"));
  });
});

Deno.test("loadKubeconfig() accepts JSON and a context override", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/config.json`;
    await Deno.writeTextFile(
      path,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
          { name: "a", cluster: { server: "http://127.0.0.1:8080" } },
          { name: "b", cluster: { server: "https://b:6443", "insecure-skip-tls-verify": true } },
        ],
        contexts: [
          { name: "ca", context: { cluster: "a" } },
          { name: "cb", context: { cluster: "b", user: "admin" } },
        ],
        users: [{ name: "admin", user: { username: "admin", password: "pw" } }],
      }),
    );
    const a = await loadKubeconfig(path, { context: "ca" });
    assert.equal(a.server, "http://127.0.0.1:8080");
    assert.equal(a.user, undefined);
    assert.deepEqual(await a.credentials.get(), {});
    const b = await loadKubeconfig(path, { context: "cb" });
    assert.equal(b.insecureSkipTLSVerify, true);
    assert.deepEqual(await b.credentials.get(), {
      basicAuth: { username: "admin", password: "pw" },
    });
  });
});

Deno.test("loadKubeconfig() re-reads a relative token-file every minute and keeps the last good token", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/config`;
    await Deno.writeTextFile(`${dir}/token`, "first\n");
    await Deno.writeTextFile(path, kubeconfig("    token-file: token"));
    const clock = new FakeClock();
    const auth = await loadKubeconfig(path, { clock });
    assert.equal((await auth.credentials.get()).token, "first");
    await Deno.writeTextFile(`${dir}/token`, "second");
    clock.tick(TOKEN_FILE_REFRESH_MS - 1);
    assert.equal((await auth.credentials.get()).token, "first", "cached within a minute");
    clock.tick(1);
    assert.equal((await auth.credentials.get()).token, "second");
    await Deno.remove(`${dir}/token`);
    clock.tick(TOKEN_FILE_REFRESH_MS);
    assert.equal((await auth.credentials.get()).token, "second", "kept while unreadable");
  });
});

Deno.test("loadKubeconfig() re-reads client certificate files changed on disk: every 5 min and after a 401", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/config`;
    // One PEM holding both, as kubelet-client-current.pem.
    await Deno.writeTextFile(`${dir}/pair.pem`, "CERT-1\nKEY-1\n");
    await Deno.writeTextFile(
      path,
      kubeconfig("    client-certificate: pair.pem\n    client-key: pair.pem"),
    );
    const clock = new FakeClock();
    const auth = await loadKubeconfig(path, { clock });
    assert.equal((await auth.credentials.get()).cert, "CERT-1\nKEY-1\n");
    await Deno.writeTextFile(`${dir}/pair.pem`, "CERT-2\nKEY-2\n");
    clock.tick(CERT_FILE_REFRESH_MS - 1);
    assert.equal((await auth.credentials.get()).cert, "CERT-1\nKEY-1\n", "cached");
    clock.tick(1);
    const renewed = await auth.credentials.get();
    assert.equal(renewed.cert, "CERT-2\nKEY-2\n");
    assert.equal(renewed.key, "CERT-2\nKEY-2\n");
    // A 401 makes the next request read the files again at once.
    await Deno.writeTextFile(`${dir}/pair.pem`, "CERT-3\nKEY-3\n");
    assert.equal(auth.credentials.invalidate(), true);
    assert.equal((await auth.credentials.get()).cert, "CERT-3\nKEY-3\n");
    // Unreadable: the last good pair stays.
    await Deno.remove(`${dir}/pair.pem`);
    clock.tick(CERT_FILE_REFRESH_MS);
    assert.equal((await auth.credentials.get()).cert, "CERT-3\nKEY-3\n");
  });
});

Deno.test("loadKubeconfig() keeps embedded client certificate data fixed", async () => {
  const auth = await withTempDir(async (dir) => {
    const path = `${dir}/config`;
    await Deno.writeTextFile(
      path,
      kubeconfig(
        `    client-certificate-data: ${b64("client.crt")}\n    client-key-data: ${
          b64("client.key")
        }`,
      ),
    );
    return await loadKubeconfig(path);
  });
  assert.equal(auth.credentials.invalidate(), false);
  assert.equal((await auth.credentials.get()).cert, pem("client.crt"));
});

Deno.test("loadKubeconfig() fails naming the file when the token-file is missing", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/config`;
    await Deno.writeTextFile(path, kubeconfig("    token-file: nope"));
    const auth = await loadKubeconfig(path);
    await assert.rejects(
      auth.credentials.get(),
      (err: Error) => err.message.includes(path) && err.message.includes(`${dir}/nope`),
    );
  });
});

Deno.test("loadKubeconfig() errors name the kubeconfig and the field", async (t) => {
  await withTempDir(async (dir) => {
    const path = `${dir}/config`;
    const expectError = async (text: string, re: RegExp, context?: string) => {
      await Deno.writeTextFile(path, text);
      await assert.rejects(
        loadKubeconfig(path, context === undefined ? {} : { context }),
        (err: Error) => err.message.startsWith(`kubeconfig ${path}: `) && re.test(err.message),
      );
    };
    await t.step("missing file", async () => {
      await assert.rejects(loadKubeconfig(`${dir}/absent`), /kubeconfig .*absent: cannot read/);
    });
    await t.step("no current-context", () =>
      expectError(
        kubeconfig("    token: t").replace("current-context: ctx", ""),
        /no current-context set/,
      ));
    await t.step(
      "unknown context",
      () => expectError(kubeconfig("    token: t"), /context "other" not found/, "other"),
    );
    await t.step("unknown user", () =>
      expectError(
        kubeconfig("    token: t").replace("user: u,", "user: ghost,"),
        /refers to user "ghost"/,
      ));
    await t.step("cluster without server", () =>
      expectError(
        kubeconfig("    token: t").replace("server: https://10.0.0.1:6443/", "proxy-url: x"),
        /clusters\[0\]\.cluster\.server is missing/,
      ));
    await t.step("certificate without key", () =>
      expectError(
        kubeconfig(`    client-certificate-data: ${b64("client.crt")}`),
        /users\["u"\] needs both client-certificate and client-key/,
      ));
    await t.step("unreadable CA file", () =>
      expectError(
        kubeconfig("    token: t", { cluster: "    certificate-authority: ca.pem" }),
        new RegExp(`certificate-authority: cannot read ${dir}/ca.pem`),
      ));
    await t.step("invalid YAML", () => expectError("clusters: [", /invalid YAML/));
    await t.step("exec without interactiveMode (v1)", () =>
      expectError(
        kubeconfig(
          "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: x",
        ),
        /users\["u"\]\.exec\.interactiveMode must be set/,
      ));
    await t.step("exec with a removed apiVersion", () =>
      expectError(
        kubeconfig(
          "    exec:\n      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: x",
        ),
        /exec\.apiVersion "client.authentication.k8s.io\/v1alpha1" is not one of/,
      ));
  });
});

/** Writes an exec plugin that logs its runs and env, then prints `cred.json`. */
async function writePlugin(dir: string): Promise<void> {
  await Deno.mkdir(`${dir}/bin`);
  await Deno.writeTextFile(
    `${dir}/bin/plugin.sh`,
    `#!/bin/sh
here=$(dirname "$0")
echo "$*" >> "$here/runs"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$here/info.json"
printf '%s' "$GREETING" > "$here/greeting"
if [ -e "$here/fail" ]; then echo "plugin broke" >&2; exit 3; fi
cat "$here/cred.json"
`,
  );
  await Deno.chmod(`${dir}/bin/plugin.sh`, 0o755);
}

function execUser(apiVersion = "client.authentication.k8s.io/v1"): string {
  return `    exec:
      apiVersion: ${apiVersion}
      command: ./bin/plugin.sh
      args: [get-token, --node]
      env: [{name: GREETING, value: hello}]
      interactiveMode: Never
      provideClusterInfo: true`;
}

const runs = async (dir: string) =>
  (await Deno.readTextFile(`${dir}/bin/runs`)).trim().split("\n").length;

Deno.test("loadKubeconfig() runs a relative exec plugin and caches its token until expiry", async () => {
  await withTempDir(async (dir) => {
    await writePlugin(dir);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    await Deno.writeTextFile(
      `${dir}/bin/cred.json`,
      JSON.stringify({
        apiVersion: "client.authentication.k8s.io/v1",
        kind: "ExecCredential",
        status: { token: "exec-token", expirationTimestamp: future },
      }),
    );
    const path = `${dir}/config`;
    await Deno.writeTextFile(path, kubeconfig(execUser()));
    const auth = await loadKubeconfig(path);
    const [a, b] = await Promise.all([auth.credentials.get(), auth.credentials.get()]);
    assert.equal(a.token, "exec-token");
    assert.equal(b.token, "exec-token");
    assert.equal((await auth.credentials.get()).token, "exec-token");
    assert.equal(await runs(dir), 1, "one run serves concurrent and later calls");
    assert.equal((await Deno.readTextFile(`${dir}/bin/runs`)).trim(), "get-token --node");
    assert.equal(await Deno.readTextFile(`${dir}/bin/greeting`), "hello");
    const info = JSON.parse(await Deno.readTextFile(`${dir}/bin/info.json`));
    assert.deepEqual(info, {
      apiVersion: "client.authentication.k8s.io/v1",
      kind: "ExecCredential",
      spec: {
        interactive: false,
        cluster: { server: "https://10.0.0.1:6443", "certificate-authority-data": b64("ca.crt") },
      },
    });
    assert.equal(auth.credentials.invalidate(), true);
    await auth.credentials.get();
    assert.equal(await runs(dir), 2, "a 401 (invalidate) runs the plugin again");
  });
});

Deno.test("loadKubeconfig() runs the exec plugin again once its credential expired", async () => {
  await withTempDir(async (dir) => {
    await writePlugin(dir);
    await Deno.writeTextFile(
      `${dir}/bin/cred.json`,
      JSON.stringify({
        apiVersion: "client.authentication.k8s.io/v1beta1",
        kind: "ExecCredential",
        status: { token: "short", expirationTimestamp: "2000-01-01T00:00:00Z" },
      }),
    );
    const path = `${dir}/config`;
    await Deno.writeTextFile(
      path,
      kubeconfig(execUser("client.authentication.k8s.io/v1beta1")),
    );
    const auth = await loadKubeconfig(path);
    assert.equal((await auth.credentials.get()).token, "short");
    assert.equal((await auth.credentials.get()).token, "short");
    assert.equal(await runs(dir), 2);
  });
});

Deno.test("loadKubeconfig() takes a client certificate from an exec plugin", async () => {
  await withTempDir(async (dir) => {
    await writePlugin(dir);
    await Deno.writeTextFile(
      `${dir}/bin/cred.json`,
      JSON.stringify({
        apiVersion: "client.authentication.k8s.io/v1",
        kind: "ExecCredential",
        status: { clientCertificateData: pem("client.crt"), clientKeyData: pem("client.key") },
      }),
    );
    const path = `${dir}/config`;
    await Deno.writeTextFile(path, kubeconfig(execUser()));
    const creds = await (await loadKubeconfig(path)).credentials.get();
    assert.equal(creds.cert, pem("client.crt"));
    assert.equal(creds.key, pem("client.key"));
    assert.equal(creds.token, undefined);
  });
});

Deno.test("loadKubeconfig() reports a failing exec plugin with its stderr", async () => {
  await withTempDir(async (dir) => {
    await writePlugin(dir);
    await Deno.writeTextFile(`${dir}/bin/fail`, "");
    const path = `${dir}/config`;
    await Deno.writeTextFile(path, kubeconfig(execUser()));
    const auth = await loadKubeconfig(path);
    await assert.rejects(
      auth.credentials.get(),
      (err: Error) =>
        err.message.includes(`kubeconfig ${path} users["u"]`) &&
        err.message.includes(`exec plugin ${dir}/bin/plugin.sh failed: plugin broke`),
    );
  });
});
