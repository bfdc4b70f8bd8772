// Upstream's own cases (pkg/credentialprovider/keyring_test.go, v1.37.2) for matching
// registry credentials to images; the pull secrets' formats and the node's config files.
import assert from "node:assert/strict";
import type { Secret } from "../../lib/api/cluster_types.ts";
import {
  DockerConfigError,
  dockerConfigOfSecret,
  DockerKeyring,
  isDefaultRegistryMatch,
  NodeDockerConfig,
  parseDockerConfigEntries,
  pullCredentials,
  urlsMatch,
} from "../../lib/images/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { withTempDir } from "../kit/mod.ts";

const b64 = (text: string) => btoa(text);

Deno.test("urlsMatch() matches globbed hosts, equal ports and path prefixes as upstream's TestURLsMatch", () => {
  const cases: [glob: string, target: string, match: boolean][] = [
    ["*.kubernetes.io", "prefix.kubernetes.io", true],
    ["prefix.*.io", "prefix.kubernetes.io", true],
    ["prefix.kubernetes.*", "prefix.kubernetes.io", true],
    ["*-good.kubernetes.io", "prefix-good.kubernetes.io", true],
    ["*.kubernetes.io/blah", "prefix.kubernetes.io/blah", true],
    ["prefix.*.io/foo", "prefix.kubernetes.io/foo/bar", true],
    ["*.kubernetes.io:1111/blah", "prefix.kubernetes.io:1111/blah", true],
    ["prefix.*.io:1111/foo", "prefix.kubernetes.io:1111/foo/bar", true],
    ["*.kubernetes.io", "kubernetes.io", false],
    ["*.*.kubernetes.io", "prefix.kubernetes.io", false],
    ["*.*.kubernetes.io", "kubernetes.io", false],
    ["*kubernetes.io", "a.kubernetes.io", false],
    ["*kubernetes.io", "kubernetes.io", true],
    ["*.*.*.kubernetes.io", "a.b.c.kubernetes.io", true],
    ["kubernetes.io", "kubernetes.com", false],
    ["k*.io", "quay.io", false],
    ["*.kubernetes.io:1234/blah", "prefix.kubernetes.io:1111/blah", false],
    ["prefix.*.io/foo", "prefix.kubernetes.io:1111/foo/bar", false],
  ];
  for (const [glob, target, match] of cases) {
    assert.equal(urlsMatch(glob, target), match, `${glob} vs ${target}`);
  }
});

/** A keyring holding one entry, as upstream's tests build it from a dockercfg blob. */
function keyringOf(registry: string): DockerKeyring {
  const keyring = new DockerKeyring();
  keyring.add(parseDockerConfigEntries({
    [registry]: { email: "foo@bar.baz", auth: b64("foo:bar") },
  }));
  return keyring;
}

Deno.test("DockerKeyring.lookup() finds globbed registries as upstream's TestDockerKeyringForGlob", () => {
  const cases: [glob: string, target: string][] = [
    ["https://hello.kubernetes.io", "hello.kubernetes.io"],
    ["https://*.docker.io", "prefix.docker.io"],
    ["https://prefix.*.io", "prefix.docker.io"],
    ["https://prefix.docker.*", "prefix.docker.io"],
    ["https://*.docker.io/path", "prefix.docker.io/path"],
    ["https://prefix.*.io/path", "prefix.docker.io/path/subpath"],
    ["https://prefix.docker.*/path", "prefix.docker.io/path"],
    ["https://*.docker.io:8888", "prefix.docker.io:8888"],
    ["https://prefix.*.io:8888", "prefix.docker.io:8888"],
    ["https://prefix.docker.*:8888", "prefix.docker.io:8888"],
    ["https://*.docker.io/path:1111", "prefix.docker.io/path:1111"],
    ["https://*.docker.io/v1/", "prefix.docker.io/path:1111"],
    ["https://*.docker.io/v2/", "prefix.docker.io/path:1111"],
    ["https://prefix.docker.*/path:1111", "prefix.docker.io/path:1111"],
    ["prefix.docker.io:1111", "prefix.docker.io:1111/path"],
    ["*.docker.io:1111", "prefix.docker.io:1111/path"],
  ];
  for (const [glob, target] of cases) {
    assert.deepEqual(
      keyringOf(glob).lookup(`${target}/foo/bar`),
      [{ username: "foo", password: "bar", email: "foo@bar.baz" }],
      `${glob} for ${target}`,
    );
  }
});

Deno.test("DockerKeyring.lookup() misses as upstream's TestKeyringMiss", () => {
  const cases: [glob: string, lookup: string][] = [
    ["https://hello.kubernetes.io", "world.mesos.org/foo/bar"],
    ["https://*.docker.com", "prefix.docker.io"],
    ["https://suffix.*.io", "prefix.docker.io"],
    ["https://prefix.docker.c*", "prefix.docker.io"],
    ["https://prefix.*.io/path:1111", "prefix.docker.io/path/subpath:1111"],
    ["suffix.*.io", "prefix.docker.io"],
  ];
  for (const [glob, lookup] of cases) {
    assert.deepEqual(keyringOf(glob).lookup(`${lookup}/foo/bar`), [], `${glob} for ${lookup}`);
  }
});

Deno.test("DockerKeyring.lookup() uses Docker Hub's entry only for Docker Hub images", () => {
  const hub = keyringOf("https://index.docker.io/v1/");
  const foo = [{ username: "foo", password: "bar", email: "foo@bar.baz" }];
  // TestKeyringMissWithDockerHubCredentials
  assert.deepEqual(hub.lookup("world.mesos.org/foo/bar"), []);
  // TestKeyringHitWithUnqualifiedDockerHub, ...UnqualifiedLibraryDockerHub, ...QualifiedDockerHub
  assert.deepEqual(hub.lookup("google/docker-registry"), foo);
  assert.deepEqual(hub.lookup("jenkins"), foo);
  assert.deepEqual(hub.lookup("index.docker.io/v1//google/docker-registry"), foo);
  // What the kubelet looks up: the normalised repository.
  assert.deepEqual(hub.lookup("docker.io/library/busybox"), foo);
});

Deno.test("isDefaultRegistryMatch() as upstream's TestIsDefaultRegistryMatch", () => {
  const cases: [string, boolean][] = [
    ["foo/bar", true],
    ["docker.io/foo/bar", true],
    ["index.docker.io/foo/bar", true],
    ["foo", true],
    ["", false],
    ["registry.tld/foo/bar", false],
    ["registry:5000/foo/bar", false],
    ["myhostdocker.io/foo/bar", false],
  ];
  for (const [image, want] of cases) assert.equal(isDefaultRegistryMatch(image), want, image);
});

Deno.test("DockerKeyring.lookup() returns the most specific key first, as upstream's TestDockerKeyringLookup", () => {
  const ada = { username: "ada", password: "smash", email: "ada@example.com" };
  const grace = { username: "grace", password: "squash", email: "grace@example.com" };
  const keyring = new DockerKeyring();
  keyring.add(new Map([["bar.example.com/pong", grace], ["bar.example.com", ada]]));
  const cases: [string, unknown[]][] = [
    ["bar.example.com", [ada]],
    ["bar.example.com/pong", [grace, ada]],
    ["bar.example.com/ping", [ada]],
    ["bar.example.com/pongz", [grace, ada]],
    ["bar.example.com/pong/pang", [grace, ada]],
    ["example.com", []],
    ["foo.example.com", []],
  ];
  for (const [image, want] of cases) assert.deepEqual(keyring.lookup(image), want, image);
});

Deno.test("DockerKeyring.lookup() strips /v1/ from a key, as upstream's TestIssue3797", () => {
  const rex = { username: "rex", password: "tiny arms", email: "rex@example.com" };
  const keyring = new DockerKeyring();
  keyring.add(new Map([["https://quay.io/v1/", rex]]));
  for (const image of ["quay.io", "quay.io/foo", "quay.io/foo/bar"]) {
    assert.deepEqual(keyring.lookup(image), [rex], image);
  }
});

function secret(name: string, type: string, data: Record<string, string>): Secret {
  return { metadata: { name, namespace: "ns", uid: `uid-${name}` }, type, data };
}

Deno.test("dockerConfigOfSecret() reads both docker Secret types and ignores other Secrets", () => {
  const auths = { "127.0.0.1:5000": { auth: b64("user:pa:ss") } };
  const json = secret("json", "kubernetes.io/dockerconfigjson", {
    ".dockerconfigjson": b64(JSON.stringify({ auths })),
  });
  const legacy = secret("legacy", "kubernetes.io/dockercfg", {
    ".dockercfg": b64(JSON.stringify({ "127.0.0.1:5000": { username: "u", password: "p" } })),
  });
  assert.deepEqual(
    dockerConfigOfSecret(json),
    new Map([["127.0.0.1:5000", { username: "user", password: "pa:ss", email: "" }]]),
  );
  assert.deepEqual(
    dockerConfigOfSecret(legacy),
    new Map([["127.0.0.1:5000", { username: "u", password: "p", email: "" }]]),
  );
  // The data key of the other type, an Opaque Secret, empty data: not a docker config.
  assert.equal(
    dockerConfigOfSecret(secret("x", "kubernetes.io/dockercfg", { ".dockerconfigjson": "e30=" })),
    undefined,
  );
  assert.equal(dockerConfigOfSecret(secret("o", "Opaque", { ".dockercfg": "e30=" })), undefined);
  assert.equal(
    dockerConfigOfSecret(
      secret("e", "kubernetes.io/dockerconfigjson", { ".dockerconfigjson": "" }),
    ),
    undefined,
  );
  // Unpadded base64 in `auth` decodes too (upstream tries RawStdEncoding).
  assert.deepEqual(
    parseDockerConfigEntries({ r: { auth: "Zm9vOmJhcg" } }).get("r"),
    { username: "foo", password: "bar", email: "" },
  );
});

Deno.test("dockerConfigOfSecret() fails on malformed data, naming the Secret", () => {
  const bad = (json: string) =>
    secret("bad", "kubernetes.io/dockerconfigjson", { ".dockerconfigjson": b64(json) });
  assert.throws(() => dockerConfigOfSecret(bad("{")), DockerConfigError);
  assert.throws(
    () => dockerConfigOfSecret(bad(JSON.stringify({ auths: { r: { auth: b64("nocolon") } } }))),
    /secret "ns\/bad": unable to parse auth field, must be formatted as base64\(username:password\)/,
  );
  assert.throws(
    () => dockerConfigOfSecret(bad(JSON.stringify({ auths: { r: { username: 1 } } }))),
    /username is not a string/,
  );
});

Deno.test("pullCredentials() unions the secrets' entries, most specific registry key first", () => {
  const cfg = (auths: Record<string, unknown>) => ({
    ".dockerconfigjson": b64(JSON.stringify({ auths })),
  });
  const secrets = [
    secret("a", "kubernetes.io/dockerconfigjson", cfg({ "127.0.0.1:5000": { auth: b64("a:1") } })),
    secret(
      "b",
      "kubernetes.io/dockerconfigjson",
      cfg({
        "http://127.0.0.1:5000/team": { auth: b64("b:2") },
        "other.example.com": { auth: b64("c:3") },
      }),
    ),
    secret("c", "kubernetes.io/dockerconfigjson", cfg({ "127.0.0.1:5000": { auth: b64("d:4") } })),
  ];
  assert.deepEqual(pullCredentials(secrets, "127.0.0.1:5000/team/app"), [
    { username: "b", password: "2" },
    { username: "a", password: "1" },
    { username: "d", password: "4" },
  ]);
  assert.deepEqual(pullCredentials(secrets, "127.0.0.1:5001/team/app"), []);
  assert.deepEqual(pullCredentials([], "127.0.0.1:5000/app"), []);
});

Deno.test("pullCredentials() tries the pod's secrets before the node's docker config", () => {
  const s = secret("a", "kubernetes.io/dockercfg", {
    ".dockercfg": b64(JSON.stringify({ "registry.example.com": { auth: b64("pod:1") } })),
  });
  const node = parseDockerConfigEntries({
    "registry.example.com": { auth: b64("node:2") },
    "https://index.docker.io/v1/": { auth: b64("hub:3") },
  });
  assert.deepEqual(pullCredentials([s], "registry.example.com/app", node), [
    { username: "pod", password: "1" },
    { username: "node", password: "2" },
  ]);
  // Each keyring falls back to Docker Hub's entry on its own.
  assert.deepEqual(pullCredentials([s], "docker.io/library/busybox", node), [
    { username: "hub", password: "3" },
  ]);
});

Deno.test("NodeDockerConfig reads the first config.json, then .dockercfg, as upstream's search paths", async () => {
  await withTempDir(async (dir) => {
    const [root, cwd, home, dot] = ["root", "cwd", "home", "home/.docker"].map((d) =>
      `${dir}/${d}`
    );
    for (const d of [root!, cwd!, dot!]) await Deno.mkdir(d, { recursive: true });
    const clock = new FakeClock();
    const node = () => new NodeDockerConfig({ rootDir: root!, cwd: cwd!, home: home!, clock });
    const users = async (config: NodeDockerConfig) =>
      [...(await config.entries()).values()].map((c) => c.username);
    const json = (user: string) => JSON.stringify({ auths: { r: { auth: b64(`${user}:p`) } } });

    assert.deepEqual(await users(node()), []);
    await Deno.writeTextFile(
      `${home}/.dockercfg`,
      JSON.stringify({ r: { auth: b64("legacy:p") } }),
    );
    assert.deepEqual(await users(node()), ["legacy"]);
    // Any config.json comes before every .dockercfg; ~/.docker before /.docker.
    await Deno.writeTextFile(`${dot}/config.json`, json("home"));
    assert.deepEqual(await users(node()), ["home"]);
    await Deno.writeTextFile(`${cwd}/config.json`, json("cwd"));
    assert.deepEqual(await users(node()), ["cwd"]);
    // The root dir first; a file that does not parse is passed over.
    await Deno.writeTextFile(`${root}/config.json`, "{not json");
    assert.deepEqual(await users(node()), ["cwd"]);
    await Deno.writeTextFile(`${root}/config.json`, json("root"));
    const cached = node();
    assert.deepEqual(await users(cached), ["root"]);
    // Read again only after five minutes.
    await Deno.writeTextFile(`${root}/config.json`, json("rotated"));
    clock.tick(5 * 60_000 - 1);
    assert.deepEqual(await users(cached), ["root"]);
    clock.tick(1);
    assert.deepEqual(await users(cached), ["rotated"]);
  });
});
