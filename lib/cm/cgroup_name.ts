/**
 * Cgroup names as upstream's cgroup manager forms them (pkg/kubelet/cm/
 * cgroup_manager_linux.go): a driver-neutral list of components
 * (`["kubepods", "burstable", "pod<uid>"]`) written out by the cgroupfs driver
 * as a path (`/kubepods/burstable/pod<uid>`) and by the systemd driver as
 * nested slices (`/kubepods.slice/kubepods-burstable.slice/
 * kubepods-burstable-pod<uid with "_" for "-">.slice`).
 *
 * @module
 */

import { expandSlice } from "../cgroup/mod.ts";

/** A cgroup's components from the root down; `[]` is the root. */
export type CgroupName = readonly string[];

/** The cgroup drivers upstream knows. */
export type CgroupDriver = "cgroupfs" | "systemd";

const SYSTEMD_SUFFIX = ".slice";

/**
 * `base` with `components` appended (upstream NewCgroupName).
 * @param base the parent
 * @param components child names
 * @returns the child's name
 * @throws {Error} for a component holding "/" or "_", as upstream panics
 */
export function childCgroupName(base: CgroupName, ...components: string[]): CgroupName {
  for (const c of components) {
    if (c.includes("/") || c.includes("_")) {
      throw new Error(`invalid character in component [${JSON.stringify(c)}] of CgroupName`);
    }
  }
  return [...base, ...components];
}

/**
 * The cgroupfs form: "/" + the components joined by "/" (upstream ToCgroupfs,
 * path.Join, which drops empty components).
 * @param name the cgroup name
 * @returns an absolute path
 */
export function cgroupNameToCgroupfs(name: CgroupName): string {
  return `/${name.filter((c) => c !== "").join("/")}`;
}

/**
 * The systemd form (upstream ToSystemd): each component's "-" escaped to "_",
 * joined by "-" into one slice name and expanded to the slices' nesting.
 * @param name the cgroup name
 * @returns "/" for the root, else e.g. "/kubepods.slice/kubepods-besteffort.slice"
 * @throws {Error} when the joined name is no valid slice name (upstream panics)
 */
export function cgroupNameToSystemd(name: CgroupName): string {
  if (name.length === 0 || (name.length === 1 && name[0] === "")) return "/";
  const slice = name.map((c) => c.replaceAll("-", "_")).join("-") + SYSTEMD_SUFFIX;
  return expandSlice(slice);
}

/**
 * The name in the driver's form (upstream cgroupManager.Name).
 * @param name the cgroup name
 * @param driver cgroupfs or systemd
 * @returns the path the driver (and the runtime) uses
 */
export function cgroupNameForDriver(name: CgroupName, driver: CgroupDriver): string {
  return driver === "systemd" ? cgroupNameToSystemd(name) : cgroupNameToCgroupfs(name);
}

/**
 * Parses a cgroupfs path (upstream ParseCgroupfsToCgroupName): "/" is the
 * root; "/a/" keeps its empty last component, as upstream's does.
 * @param path a cgroupfs path such as `--cgroup-root`
 * @returns the name
 */
export function parseCgroupfsToCgroupName(path: string): CgroupName {
  const components = path.replace(/^\//, "").split("/");
  return components.length === 1 && components[0] === "" ? [] : components;
}

/**
 * Parses a systemd path's last slice back into components (upstream
 * ParseSystemdToCgroupName): "/a.slice/a-b_c.slice" → ["a", "b-c"].
 * @param path a systemd cgroup path or slice name
 * @returns the name
 */
export function parseSystemdToCgroupName(path: string): CgroupName {
  const base = path.slice(path.lastIndexOf("/") + 1);
  const unit = base.endsWith(SYSTEMD_SUFFIX) ? base.slice(0, -SYSTEMD_SUFFIX.length) : base;
  return unit.split("-").map((part) => part.replaceAll("_", "-"));
}

/**
 * Parses a path in the driver's form (upstream cgroupManager.CgroupName).
 * @param path the driver's form
 * @param driver cgroupfs or systemd
 * @returns the name
 */
export function parseCgroupNameForDriver(path: string, driver: CgroupDriver): CgroupName {
  return driver === "systemd" ? parseSystemdToCgroupName(path) : parseCgroupfsToCgroupName(path);
}
