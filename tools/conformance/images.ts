/**
 * The images the Conformance tests start, made here without the internet and served from
 * a registry on loopback, under the names e2e.test asks for once `KUBE_TEST_REPO_LIST`
 * points its registries at that one (test/utils/image/manifest.go of k8s.io/kubernetes):
 *
 * | image (registry-relative)         | made from                                            |
 * | --------------------------------- | ---------------------------------------------------- |
 * | e2e-test-images/agnhost:2.66.1    | the harness's busybox layer + agnhost built from Go  |
 * | e2e-test-images/agnhost:2.55      | the same image (AgnhostPrev)                         |
 * | e2e-test-images/busybox:1.37.0-2  | the harness's busybox layer + every applet in /bin   |
 * | pause:3.10.2                      | the harness's pause image (its command sleeps)       |
 * | e2e-test-images/kitten:1.8        | agnhost + kitten.jpg, data.json, CMD test-webserver  |
 * | e2e-test-images/nonroot:1.5       | the busybox image with USER 1234                     |
 * | e2e-test-images/nonewprivs:1.4    | busybox + setuid /usr/local/bin/nnp (Go), CMD nnp    |
 *
 * busybox upstream is Docker's busybox image, which has every applet in /bin (the sysctl
 * test runs `/bin/sysctl`); the harness's layer puts each where `busybox --list-full` says
 * (`/sbin/sysctl`), so a layer on top links the rest into /bin.
 *
 * agnhost upstream is alpine with agnhost at `/agnhost` (ENTRYPOINT, CMD `pause`), an
 * `agnhost-2` link, `/uploads`, porter's `localhost.crt`/`.key`, and a user
 * `user-defined-in-image` (1000) in a group `group-defined-in-image` (50000); this one has
 * all of those on busybox instead of alpine, so it lacks alpine's dig, bash and iproute2;
 * its `curl` is a shell script answering `curl [-s] [-g] [-f] URL` (a GET to stdout; the
 * forms the lifecycle-hook tests use) with busybox wget, and refusing any other option. Images not made at all (nginx, and the rest of manifest.go) cost the tests
 * that use them, for both kubelets alike.
 *
 * @module
 */

import { exec } from "../../tests/harness/_exec.ts";
import { buildTestImages, cacheDir, PATH_ENV, writeRootfs } from "../../tests/harness/images.ts";
import {
  type ImageProcess,
  type Layer,
  packLayer,
  writeOciArchive,
} from "../../tests/harness/oci_archive.ts";
import { which } from "../../tests/harness/require_root.ts";
import { pathExists } from "../../tests/kit/mod.ts";

/** One image to push: the OCI archive and its name relative to the registry. */
export interface ConformanceImage {
  archive: string;
  /** e.g. `e2e-test-images/agnhost:2.66.1`. */
  name: string;
}

/** manifest.go's Agnhost and AgnhostPrev versions, BusyBox's and Pause's. */
export const AGNHOST_VERSIONS = ["2.66.1", "2.55"] as const;
export const BUSYBOX_VERSION = "1.37.0-2";
export const PAUSE_VERSION = "3.10.2";
export const KITTEN_VERSION = "1.8";
export const NONROOT_VERSION = "1.5";
export const NONEWPRIVS_VERSION = "1.4";

/** Bump when the agnhost recipe changes, so a cached archive is not reused. */
const RECIPE = 3;

/** A GET to stdout, as `curl` does it, for the flags the e2e tests pass. */
const CURL = `#!/bin/sh
# denolet's conformance images: busybox wget standing in for alpine's curl.
# Timeouts are accepted and not enforced: this wget has no -T.
while [ $# -gt 1 ]; do
  case "$1" in
    -s | -S | -g | -f | --silent | --show-error | --globoff | --fail) shift ;;
    --connect-timeout | --max-time | -m) shift 2 ;;
    *) echo "curl (wget wrapper): unsupported option $1" >&2; exit 2 ;;
  esac
done
exec wget -q -O - "$1"
`;

const PASSWD = [
  "root:x:0:0:root:/root:/bin/sh",
  "user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh",
  "nobody:x:65534:65534:nobody:/nonexistent:/bin/false",
].join("\n") + "\n";
const GROUP = [
  "root:x:0:",
  "user-defined-in-image:x:1000:",
  "group-defined-in-image:x:50000:user-defined-in-image",
  "nogroup:x:65534:",
].join("\n") + "\n";

/** Where the images' parts come from. */
export interface ImageSources {
  /** The agnhost binary (tools/conformance/build.sh). */
  agnhost: string;
  /** The nonewprivs (nnp) binary (tools/conformance/build.sh). */
  nonewprivs: string;
  /** The k8s.io/kubernetes module's directory (porter's certificates, kitten's files). */
  k8sDir: string;
}

/**
 * Builds (or finds cached) the archives of the images in the module doc.
 *
 * @returns the images to push
 * @throws Error when busybox is missing or an archive cannot be written
 */
export async function buildConformanceImages(src: ImageSources): Promise<ConformanceImage[]> {
  const base = await buildTestImages();
  const stamps = await Promise.all([src.agnhost, src.nonewprivs].map(async (bin) => {
    const stat = await Deno.stat(bin);
    return `${stat.size}.${stat.mtime?.getTime() ?? 0}`;
  }));
  const key = `${stamps.join("-")}-r${RECIPE}`;
  const archive = (name: string) => `${cacheDir()}/conformance-${name}-${key}.oci.tar`;
  const archives = {
    busybox: archive("busybox"),
    agnhost: archive("agnhost"),
    kitten: archive("kitten"),
    nonroot: archive("nonroot"),
    nonewprivs: archive("nonewprivs"),
  };
  const cached = await Promise.all(Object.values(archives).map(pathExists));
  if (!cached.every(Boolean)) await writeImages(src, archives);
  return [
    ...AGNHOST_VERSIONS.map((v) => ({
      archive: archives.agnhost,
      name: `e2e-test-images/agnhost:${v}`,
    })),
    { archive: archives.busybox, name: `e2e-test-images/busybox:${BUSYBOX_VERSION}` },
    { archive: base.pause.archive, name: `pause:${PAUSE_VERSION}` },
    { archive: archives.kitten, name: `e2e-test-images/kitten:${KITTEN_VERSION}` },
    { archive: archives.nonroot, name: `e2e-test-images/nonroot:${NONROOT_VERSION}` },
    { archive: archives.nonewprivs, name: `e2e-test-images/nonewprivs:${NONEWPRIVS_VERSION}` },
  ];
}

async function writeImages(
  src: ImageSources,
  archives: {
    busybox: string;
    agnhost: string;
    kitten: string;
    nonroot: string;
    nonewprivs: string;
  },
): Promise<void> {
  const busybox = which("busybox");
  if (busybox === undefined) {
    throw new Error("conformance: busybox not found (apt-get install busybox-static)");
  }
  const work = await Deno.makeTempDir({ dir: cacheDir(), prefix: "build-conformance-" });
  const layer = async (name: string, fill: (root: string) => Promise<void>): Promise<Layer> => {
    const root = `${work}/${name}`;
    await Deno.mkdir(root);
    await fill(root);
    return await packLayer(root, work);
  };
  const image = (ref: string, path: string, layers: Layer[], process: ImageProcess) =>
    writeOciArchive({ ref: `denolet.local/${ref}`, layers, process, path, workDir: work });
  const plain = { Env: [PATH_ENV], WorkingDir: "/" };
  try {
    const base = await layer("base", (root) => writeRootfs(root, busybox));
    const binLinks = await layer("bin", async (top) => {
      await Deno.mkdir(`${top}/bin`);
      const { stdout } = await exec(busybox, ["--list-full"]);
      for (const path of stdout.split("\n").map((line) => line.trim())) {
        const name = path.slice(path.lastIndexOf("/") + 1);
        if (path === "" || path.startsWith("bin/") || name.includes("..")) continue;
        await Deno.symlink("/bin/busybox", `${top}/bin/${name}`);
      }
    });
    const agnhost = await layer("agnhost", async (top) => {
      await Deno.mkdir(`${top}/etc`);
      await Deno.mkdir(`${top}/uploads`);
      await Deno.mkdir(`${top}/home/user-defined-in-image`, { recursive: true });
      await Deno.copyFile(src.agnhost, `${top}/agnhost`);
      await Deno.chmod(`${top}/agnhost`, 0o755);
      await Deno.symlink("agnhost", `${top}/agnhost-2`);
      const porter = `${src.k8sDir}/test/images/agnhost/porter`;
      for (const f of ["localhost.crt", "localhost.key"]) {
        await Deno.copyFile(`${porter}/${f}`, `${top}/${f}`);
      }
      await Deno.mkdir(`${top}/usr/bin`, { recursive: true });
      await Deno.writeTextFile(`${top}/usr/bin/curl`, CURL, { mode: 0o755 });
      await Deno.chmod(`${top}/usr/bin/curl`, 0o755);
      await Deno.writeTextFile(`${top}/etc/passwd`, PASSWD);
      await Deno.writeTextFile(`${top}/etc/group`, GROUP);
    });
    const kitten = await layer("kitten", async (top) => {
      for (const f of ["kitten.jpg", "data.json"]) {
        await Deno.copyFile(`${src.k8sDir}/test/images/kitten/html/${f}`, `${top}/${f}`);
      }
    });
    const nnp = await layer("nonewprivs", async (top) => {
      await Deno.mkdir(`${top}/usr/local/bin`, { recursive: true });
      await Deno.copyFile(src.nonewprivs, `${top}/usr/local/bin/nnp`);
      await Deno.chmod(`${top}/usr/local/bin/nnp`, 0o4755);
    });
    await image("busybox", archives.busybox, [base, binLinks], { Cmd: ["sh"], ...plain });
    await image("agnhost", archives.agnhost, [base, agnhost], {
      Entrypoint: ["/agnhost"],
      Cmd: ["pause"],
      ...plain,
    });
    await image("kitten", archives.kitten, [base, agnhost, kitten], {
      Entrypoint: ["/agnhost"],
      Cmd: ["test-webserver"],
      ...plain,
    });
    await image("nonroot", archives.nonroot, [base], { Cmd: ["sh"], User: "1234", ...plain });
    await image("nonewprivs", archives.nonewprivs, [base, nnp], { Cmd: ["nnp"], ...plain });
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

/**
 * Copies each image into the registry at `registry` (`127.0.0.1:<port>`) with skopeo.
 *
 * @param opts.creds `user:password` for a registry that wants them (an htpasswd one)
 * @throws Error naming the image skopeo could not copy
 */
export async function pushImages(
  registry: string,
  images: readonly ConformanceImage[],
  opts: { creds?: string } = {},
) {
  if (which("skopeo") === undefined) {
    throw new Error("conformance: skopeo not found (apt-get install skopeo)");
  }
  for (const image of images) {
    try {
      await exec("skopeo", [
        "copy",
        "--quiet",
        "--dest-tls-verify=false",
        ...(opts.creds === undefined ? [] : [`--dest-creds=${opts.creds}`]),
        `oci-archive:${image.archive}`,
        `docker://${registry}/${image.name}`,
      ]);
    } catch (cause) {
      throw new Error(`conformance: cannot push ${image.name} to ${registry}`, { cause });
    }
  }
}

/**
 * The `KUBE_TEST_REPO_LIST` file's text: every registry e2e.test knows, but the invalid
 * and the private (authenticated) one, moved to `registry`.
 */
export function repoList(registry: string): string {
  return [
    `promoterE2eRegistry: ${registry}/e2e-test-images`,
    `buildImageRegistry: ${registry}/build-image`,
    `gcEtcdRegistry: ${registry}`,
    `gcRegistry: ${registry}`,
    `sigStorageRegistry: ${registry}/sig-storage`,
    `dockerLibraryRegistry: ${registry}/library`,
    `cloudProviderGcpRegistry: ${registry}/cloud-provider-gcp`,
  ].join("\n") + "\n";
}
