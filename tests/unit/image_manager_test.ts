import assert from "node:assert/strict";
import type { Container, Pod } from "../../lib/api/types.ts";
import type { AuthConfig, Image, ImageSpec, RuntimeService } from "../../lib/cri/types.ts";
import type { Secret } from "../../lib/api/cluster_types.ts";
import {
  applyDefaultImageTag,
  ImageError,
  ImageManager,
  type ImageManagerOptions,
  normalizeImage,
} from "../../lib/images/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { flushUntil, settle } from "../kit/mod.ts";

/** A fake image service: `present` holds image names, `failPulls` makes pulls fail. */
class FakeImages {
  present = new Set<string>();
  failPulls = false;
  /** Images whose pulls fail. */
  failImages = new Set<string>();
  pulls: string[] = [];
  inFlight = 0;
  maxInFlight = 0;
  release: (() => void)[] = [];
  holdPulls = false;

  asRuntime(): RuntimeService {
    return {
      imageStatus: (spec: ImageSpec): Promise<Image | undefined> =>
        Promise.resolve(
          this.present.has(spec.image)
            ? {
              id: `sha256:${spec.image}`,
              repoTags: [spec.image],
              repoDigests: [],
              size: 1,
              username: "",
              pinned: false,
            }
            : undefined,
        ),
      pullImage: async (spec: ImageSpec): Promise<string> => {
        this.pulls.push(spec.image);
        this.inFlight++;
        this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
        if (this.holdPulls) await new Promise<void>((r) => this.release.push(r));
        this.inFlight--;
        if (this.failPulls || this.failImages.has(spec.image)) {
          throw new Error("rpc error: code = NotFound desc = not found");
        }
        this.present.add(spec.image);
        return `sha256:${spec.image}`;
      },
    } as unknown as RuntimeService;
  }
}

const pod: Pod = {
  metadata: { name: "p", namespace: "default", uid: "u1" },
  spec: { containers: [] },
};
const c = (image: string, imagePullPolicy?: Container["imagePullPolicy"]): Container => ({
  name: "app",
  image,
  ...(imagePullPolicy ? { imagePullPolicy } : {}),
});

function setup(
  tuning: Pick<ImageManagerOptions, "serializeImagePulls" | "maxParallelImagePulls"> = {},
) {
  const fake = new FakeImages();
  const clock = new FakeClock();
  const images = new ImageManager({ runtime: fake.asRuntime(), clock, ...tuning });
  return { fake, clock, images };
}

async function reasonOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ImageError, String(err));
    return `${err.reason}: ${err.message}`;
  }
  return "ok";
}

Deno.test("normalizeImage() applies docker.io/library and :latest defaults", () => {
  assert.equal(normalizeImage("busybox"), "docker.io/library/busybox:latest");
  assert.equal(normalizeImage("user/app:1.0"), "docker.io/user/app:1.0");
  assert.equal(normalizeImage("127.0.0.1:5000/x/y"), "127.0.0.1:5000/x/y:latest");
  assert.equal(applyDefaultImageTag("busybox"), "busybox:latest");
  assert.equal(applyDefaultImageTag("127.0.0.1:5000/x"), "127.0.0.1:5000/x:latest");
  assert.equal(applyDefaultImageTag("busybox:1.36"), "busybox:1.36");
  assert.throws(() => normalizeImage("Upper/Case"), /must be lowercase/);
});

Deno.test("ensureImage() fails with ErrImageNeverPull for an absent image with policy Never", async () => {
  const { images, fake } = setup();
  assert.equal(
    await reasonOf(images.ensureImage(pod, c("local/app:1", "Never"))),
    'ErrImageNeverPull: Container image "local/app:1" is not present with pull policy of Never',
  );
  assert.deepEqual(fake.pulls, []);
  fake.present.add("local/app:1");
  const got = await images.ensureImage(pod, c("local/app:1", "Never"));
  assert.deepEqual(got, { imageRef: "sha256:local/app:1", pulled: false });
});

Deno.test("ensureImage() pulls IfNotPresent only when absent, and Always every time", async () => {
  const { images, fake } = setup();
  fake.present.add("app:1");
  assert.equal((await images.ensureImage(pod, c("app:1", "IfNotPresent"))).pulled, false);
  assert.equal((await images.ensureImage(pod, c("app:2", "IfNotPresent"))).pulled, true);
  assert.equal((await images.ensureImage(pod, c("app:1", "Always"))).pulled, true);
  // No policy and no tag means Always on "<image>:latest", as upstream defaults.
  await images.ensureImage(pod, c("app"));
  assert.deepEqual(fake.pulls, ["app:2", "app:1", "app:latest"]);
});

Deno.test("ensureImage() backs off after failed pulls: ErrImagePull, then ImagePullBackOff until the delay ends", async () => {
  const { images, fake, clock } = setup();
  fake.failPulls = true;
  assert.match(
    await reasonOf(images.ensureImage(pod, c("bad:1"))),
    /^ErrImagePull: rpc error: code = NotFound desc = not found$/,
  );
  // As upstream, the backoff message carries the failed pull's error.
  assert.equal(
    await reasonOf(images.ensureImage(pod, c("bad:1"))),
    'ImagePullBackOff: Back-off pulling image "bad:1": ErrImagePull: rpc error: code = NotFound desc = not found',
  );
  assert.equal(fake.pulls.length, 1);
  clock.tick(10_000);
  assert.match(await reasonOf(images.ensureImage(pod, c("bad:1"))), /^ErrImagePull/);
  // The delay doubled: 10s later it is still backing off, 20s later it pulls again.
  clock.tick(10_000);
  assert.match(await reasonOf(images.ensureImage(pod, c("bad:1"))), /^ImagePullBackOff/);
  clock.tick(10_000);
  assert.match(await reasonOf(images.ensureImage(pod, c("bad:1"))), /^ErrImagePull/);
  assert.equal(fake.pulls.length, 3);
  // Another pod is not held back by this pod's backoff.
  const other = { ...pod, metadata: { ...pod.metadata, uid: "u2" } };
  assert.match(await reasonOf(images.ensureImage(other, c("bad:1"))), /^ErrImagePull/);
});

Deno.test("ensureImage() rejects an invalid image name with InvalidImageName", async () => {
  const { images } = setup();
  assert.match(await reasonOf(images.ensureImage(pod, c("Bad Name"))), /^InvalidImageName/);
});

Deno.test("ensureImage() serializes pulls by default", async () => {
  const { images, fake } = setup();
  fake.holdPulls = true;
  const a = images.ensureImage(pod, c("a:1"));
  const b = images.ensureImage(pod, c("b:1"));
  await flushUntil("the first pull to start", () => fake.release.length > 0, 20);
  assert.equal(fake.maxInFlight, 1);
  while (fake.pulls.length < 2 || fake.release.length > 0) {
    fake.release.shift()?.();
    await settle(1);
  }
  await Promise.all([a, b]);
  assert.equal(fake.maxInFlight, 1);
  assert.deepEqual(fake.pulls, ["a:1", "b:1"]);
});

Deno.test("ensureImage() tries each matching pull-secret credential in turn, as upstream's PullImage", async () => {
  const attempts: (string | undefined)[] = [];
  const runtime = {
    imageStatus: () => Promise.resolve(undefined),
    pullImage: (_spec: ImageSpec, auth?: AuthConfig) => {
      attempts.push(auth ? `${auth.username}:${auth.password}` : undefined);
      if (auth?.username !== "good") {
        return Promise.reject(new Error("rpc error: code = Unknown desc = 401 Unauthorized"));
      }
      return Promise.resolve("sha256:app");
    },
  } as unknown as RuntimeService;
  const images = new ImageManager({ runtime, clock: new FakeClock() });
  const secret = (name: string, auths: Record<string, { auth: string }>): Secret => ({
    metadata: { name, namespace: "default" },
    type: "kubernetes.io/dockerconfigjson",
    data: { ".dockerconfigjson": btoa(JSON.stringify({ auths })) },
  });
  const bad = secret("bad", { "127.0.0.1:5000": { auth: btoa("bad:x") } });
  const good = secret("good", { "127.0.0.1:5000": { auth: btoa("good:y") } });
  const other = secret("other", { "127.0.0.1:5001": { auth: btoa("other:z") } });

  const got = await images.ensureImage(pod, c("127.0.0.1:5000/app:1"), undefined, undefined, [
    other,
    bad,
    good,
  ]);
  assert.equal(got.imageRef, "sha256:app");
  assert.deepEqual(attempts, ["bad:x", "good:y"]);

  // No secret for the registry: one anonymous pull. All failing: the errors, repeats dropped.
  attempts.length = 0;
  assert.equal(
    await reasonOf(images.ensureImage(pod, c("127.0.0.1:5001/app:1"), undefined, undefined, [bad])),
    "ErrImagePull: rpc error: code = Unknown desc = 401 Unauthorized",
  );
  assert.deepEqual(attempts, [undefined]);
  const bad2 = secret("bad2", { "127.0.0.1:5000": { auth: btoa("worse:x") } });
  const uid2 = { ...pod, metadata: { ...pod.metadata, uid: "u2" } };
  assert.equal(
    await reasonOf(images.ensureImage(uid2, c("127.0.0.1:5000/app:2"), undefined, undefined, [
      bad,
      bad2,
    ])),
    "ErrImagePull: rpc error: code = Unknown desc = 401 Unauthorized",
  );
});

/** Starts three pulls under `tuning`, releases them all, and returns the most seen in flight. */
async function pullsInFlight(
  tuning: Pick<ImageManagerOptions, "serializeImagePulls" | "maxParallelImagePulls">,
  expectStarted: number,
): Promise<number> {
  const { images, fake } = setup(tuning);
  fake.holdPulls = true;
  const all = ["a:1", "b:1", "c:1"].map((i) => images.ensureImage(pod, c(i)));
  await flushUntil("the first pulls to start", () => fake.release.length >= expectStarted, 20);
  await settle(1);
  const seen = fake.maxInFlight;
  while (fake.pulls.length < 3 || fake.release.length > 0) {
    fake.release.shift()?.();
    await settle(1);
  }
  await Promise.all(all);
  assert.deepEqual([...fake.pulls].sort(), ["a:1", "b:1", "c:1"]);
  return Math.max(seen, fake.maxInFlight);
}

Deno.test("ensureImage() holds parallel pulls to maxParallelImagePulls, as upstream's parallel puller", async () => {
  assert.equal(await pullsInFlight({ serializeImagePulls: false, maxParallelImagePulls: 2 }, 2), 2);
  assert.equal(await pullsInFlight({ serializeImagePulls: false }, 3), 3);
  // Serialized pulls ignore the limit (options validation refuses the pair).
  assert.equal(await pullsInFlight({ serializeImagePulls: true, maxParallelImagePulls: 3 }, 1), 1);
});

Deno.test("ensureImage() frees a failed pull's slot for the pull queued behind it", async () => {
  const { images, fake } = setup({ serializeImagePulls: false, maxParallelImagePulls: 1 });
  fake.failImages.add("bad:1");
  fake.holdPulls = true;
  const bad = reasonOf(images.ensureImage(pod, c("bad:1")));
  const good = images.ensureImage(pod, c("a:1"));
  await flushUntil("the first pull to start", () => fake.release.length === 1, 20);
  await settle(1);
  assert.deepEqual(fake.pulls, ["bad:1"]);
  fake.release.shift()!();
  assert.match(await bad, /^ErrImagePull/);
  await flushUntil("the queued pull to start", () => fake.release.length === 1, 20);
  fake.release.shift()!();
  assert.equal((await good).pulled, true);
  assert.deepEqual(fake.pulls, ["bad:1", "a:1"]);
});
