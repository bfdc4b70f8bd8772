/**
 * The test images, built locally because no registry can be reached: a busybox image
 * (Debian's static busybox with its applet links, root in /etc/passwd, /tmp) and a pause
 * image on the same layer whose command sleeps until SIGTERM/SIGINT. Archives are cached
 * per busybox version so only the first run pays for building them.
 *
 * @module
 */

import { exec } from "./_exec.ts";
import { type ImageProcess, packLayer, writeOciArchive } from "./oci_archive.ts";
import { which } from "./require_root.ts";
import { pathExists } from "../kit/mod.ts";

/** Reference of the busybox image inside the k8s.io namespace. */
export const BUSYBOX_IMAGE = "docker.io/denolet/busybox:test";
/** Reference of the pause (sandbox) image inside the k8s.io namespace. */
export const PAUSE_IMAGE = "docker.io/denolet/pause:test";

/** One built image: its reference and the OCI archive that holds it. */
export interface TestImage {
  ref: string;
  /** An `oci-archive` tarball (`ctr images import`, `skopeo copy oci-archive:…`). */
  archive: string;
}

/** The archives {@link buildTestImages} returns. */
export interface TestImages {
  busybox: TestImage;
  pause: TestImage;
}

/** Bump when the image recipe changes, so stale cached archives are not reused. */
const RECIPE = 1;

/** The PATH of every test image (as Docker's library images set it). */
export const PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * The pause command: PID 1 of every sandbox. A shell ignores SIGTERM as PID 1 unless it
 * traps it; `sleep & wait` lets the trap run as soon as the signal arrives.
 */
const PAUSE_SCRIPT = 'trap "exit 0" TERM INT; while :; do sleep 3600 & wait; done';

const BUSYBOX_PROCESS: ImageProcess = { Cmd: ["sh"], Env: [PATH_ENV], WorkingDir: "/" };
const PAUSE_PROCESS: ImageProcess = {
  Entrypoint: ["/bin/sh", "-c", PAUSE_SCRIPT],
  Env: [PATH_ENV],
  WorkingDir: "/",
};

/** Where archives are cached: `$XDG_CACHE_HOME/denolet-test` or `/var/cache/denolet-test`. */
export function cacheDir(): string {
  const xdg = Deno.env.get("XDG_CACHE_HOME");
  return xdg ? `${xdg}/denolet-test` : "/var/cache/denolet-test";
}

/** `BusyBox v1.35.0 (Debian 1:1.35.0-4+deb12u1+b1)` → a file-name-safe cache key. */
async function busyboxKey(busybox: string): Promise<string> {
  const { stdout } = await exec(busybox, ["--help"], { allowFailure: true });
  const version = stdout.split("\n")[0]?.match(/BusyBox (v\S+(?: \([^)]*\))?)/)?.[1];
  if (version === undefined) {
    throw new Error(`harness: cannot read the version of ${busybox}`);
  }
  return `${version.replace(/[^A-Za-z0-9.+-]+/g, "_")}-r${RECIPE}`;
}

async function isStatic(path: string): Promise<boolean> {
  // ELF binaries with a PT_INTERP segment are dynamic; reading the header is enough.
  const bytes = await Deno.readFile(path);
  return !new TextDecoder("latin1").decode(bytes.subarray(0, 4096)).includes("ld-linux");
}

/**
 * Fills `root` with busybox, its applet links and the files a container expects.
 *
 * @param root an empty directory
 * @param busybox the static busybox binary
 */
export async function writeRootfs(root: string, busybox: string): Promise<void> {
  for (const dir of ["bin", "sbin", "usr/bin", "usr/sbin", "etc", "root", "proc", "sys", "dev"]) {
    await Deno.mkdir(`${root}/${dir}`, { recursive: true });
  }
  await Deno.mkdir(`${root}/tmp`);
  await Deno.chmod(`${root}/tmp`, 0o1777);
  await Deno.chmod(`${root}/root`, 0o700);
  await Deno.copyFile(busybox, `${root}/bin/busybox`);
  await Deno.chmod(`${root}/bin/busybox`, 0o755);
  const { stdout } = await exec(busybox, ["--list-full"]);
  for (const applet of stdout.split("\n").map((line) => line.trim())) {
    if (applet === "" || applet === "bin/busybox" || applet.includes("..")) continue;
    await Deno.mkdir(`${root}/${applet.slice(0, applet.lastIndexOf("/"))}`, { recursive: true });
    await Deno.symlink("/bin/busybox", `${root}/${applet}`);
  }
  await Deno.writeTextFile(
    `${root}/etc/passwd`,
    "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
  );
  await Deno.writeTextFile(`${root}/etc/group`, "root:x:0:\nnogroup:x:65534:\n");
}

/**
 * Builds (or finds in the cache) the busybox and pause OCI archives.
 *
 * @returns each image's reference and archive path
 * @throws Error when busybox is missing or not static, or an archive cannot be written
 */
export async function buildTestImages(): Promise<TestImages> {
  const busybox = which("busybox");
  if (busybox === undefined) {
    throw new Error("harness: busybox not found (apt-get install busybox-static)");
  }
  if (!await isStatic(busybox)) {
    throw new Error(`harness: ${busybox} is dynamically linked; install busybox-static`);
  }
  const dir = cacheDir();
  await Deno.mkdir(dir, { recursive: true });
  const key = await busyboxKey(busybox);
  const images: TestImages = {
    busybox: { ref: BUSYBOX_IMAGE, archive: `${dir}/busybox-${key}.oci.tar` },
    pause: { ref: PAUSE_IMAGE, archive: `${dir}/pause-${key}.oci.tar` },
  };
  if (await pathExists(images.busybox.archive) && await pathExists(images.pause.archive)) {
    return images;
  }

  const work = await Deno.makeTempDir({ dir, prefix: "build-" });
  try {
    await Deno.mkdir(`${work}/rootfs`);
    await writeRootfs(`${work}/rootfs`, busybox);
    const layer = await packLayer(`${work}/rootfs`, work);
    await writeOciArchive({
      ref: BUSYBOX_IMAGE,
      layers: [layer],
      process: BUSYBOX_PROCESS,
      path: images.busybox.archive,
      workDir: work,
    });
    await writeOciArchive({
      ref: PAUSE_IMAGE,
      layers: [layer],
      process: PAUSE_PROCESS,
      path: images.pause.archive,
      workDir: work,
    });
  } finally {
    await Deno.remove(work, { recursive: true });
  }
  return images;
}

/**
 * Builds an image of one layer holding `sizeBytes` of random data (`/filler`), so that
 * images made this way share no layer and each takes its full size in the runtime's
 * content store and again in its snapshot. Its command is never meant to run (there is
 * no shell in it): tests create containers from it to mark it used.
 *
 * @param ref the image reference, e.g. `docker.io/denolet/filler-1:test`
 * @param sizeBytes how much random data the layer holds
 * @param dir where to write the archive (and scratch files, removed again)
 * @returns the image's reference and archive
 */
export async function buildFillerImage(
  ref: string,
  sizeBytes: number,
  dir: string,
): Promise<TestImage> {
  const work = await Deno.makeTempDir({ dir, prefix: "filler-" });
  const archive = `${dir}/${ref.replace(/[^A-Za-z0-9.-]+/g, "_")}.oci.tar`;
  try {
    await Deno.mkdir(`${work}/rootfs`);
    const data = new Uint8Array(sizeBytes);
    // getRandomValues fills at most 64 KiB per call.
    for (let at = 0; at < sizeBytes; at += 65_536) {
      crypto.getRandomValues(data.subarray(at, Math.min(at + 65_536, sizeBytes)));
    }
    await Deno.writeFile(`${work}/rootfs/filler`, data);
    const layer = await packLayer(`${work}/rootfs`, work);
    await writeOciArchive({
      ref,
      layers: [layer],
      process: { Cmd: ["/filler"], Env: [PATH_ENV], WorkingDir: "/" },
      path: archive,
      workDir: work,
    });
  } finally {
    await Deno.remove(work, { recursive: true });
  }
  return { ref, archive };
}
