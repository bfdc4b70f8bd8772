/**
 * Seccomp, AppArmor and SELinux settings of a pod and its containers → the CRI
 * SecurityProfile and SELinuxOption, as upstream's helpers.go
 * (fieldSeccompProfile, getSeccompProfile, getAppArmorProfile) and
 * security_context.go form them. Pure.
 *
 * @module
 */

import type {
  AppArmorProfile,
  Container,
  Pod,
  SeccompProfile,
  SELinuxOptions,
} from "../api/types.ts";
import type { SecurityProfile, SELinuxOption } from "../cri/types.ts";
import { ProfileType } from "../cri/types.ts";
import { ContainerConfigError } from "./env.ts";

/** Node settings the seccomp profile depends on. */
export interface SeccompSettings {
  /** `seccompDefault`: RuntimeDefault instead of Unconfined when a pod names no profile. */
  seccompDefault?: boolean;
  /** Where Localhost profiles live: upstream's `<root-dir>/seccomp`. */
  profileRoot: string;
}

/** Upstream's pre-field AppArmor annotation prefix, still honoured for static pods. */
const APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/";

function fieldSeccomp(
  profile: SeccompProfile,
  settings: SeccompSettings,
  container: string,
): SecurityProfile {
  switch (profile.type) {
    case "RuntimeDefault":
      return { profileType: ProfileType.RuntimeDefault };
    case "Localhost": {
      if (!profile.localhostProfile) {
        throw new ContainerConfigError(
          `container "${container}": localhostProfile must be set if seccompProfile type is Localhost.`,
        );
      }
      const root = settings.profileRoot.replace(/\/+$/, "");
      return {
        profileType: ProfileType.Localhost,
        localhostRef: `${root}/${profile.localhostProfile.replace(/^\/+/, "")}`,
      };
    }
    default:
      return { profileType: ProfileType.Unconfined };
  }
}

/**
 * The container's seccomp profile: the container's field, else the pod's, else
 * RuntimeDefault with `seccompDefault` and Unconfined without.
 * @param pod the pod
 * @param container the container
 * @param settings seccompDefault and the Localhost profile root
 * @returns the CRI profile (always set, as upstream sends it)
 * @throws {ContainerConfigError} for Localhost without a profile name
 */
export function containerSeccompProfile(
  pod: Pod,
  container: Container,
  settings: SeccompSettings,
): SecurityProfile {
  const chosen = container.securityContext?.seccompProfile ??
    pod.spec.securityContext?.seccompProfile;
  if (chosen) return fieldSeccomp(chosen, settings, container.name);
  return {
    profileType: settings.seccompDefault ? ProfileType.RuntimeDefault : ProfileType.Unconfined,
  };
}

/**
 * The AppArmor profile a container asks for (upstream apparmor.GetProfile): the
 * container's field, else the deprecated per-container annotation, else the pod's.
 * @param pod the pod
 * @param container the container
 * @returns the profile, or undefined when none is named
 */
export function appArmorProfileOf(pod: Pod, container: Container): AppArmorProfile | undefined {
  const own = container.securityContext?.appArmorProfile;
  if (own) return own;
  const annotation = pod.metadata.annotations?.[APPARMOR_ANNOTATION_PREFIX + container.name];
  if (annotation !== undefined) {
    if (annotation === "runtime/default") return { type: "RuntimeDefault" };
    if (annotation === "unconfined") return { type: "Unconfined" };
    if (annotation.startsWith("localhost/")) {
      return { type: "Localhost", localhostProfile: annotation.slice("localhost/".length) };
    }
  }
  return pod.spec.securityContext?.appArmorProfile;
}

/**
 * The container's AppArmor profile in both CRI spellings (the profile and the
 * deprecated string older runtimes read), as upstream's getAppArmorProfile.
 * @param pod the pod
 * @param container the container
 * @returns the two fields, or undefined when the pod names no profile
 * @throws {ContainerConfigError} for Localhost without a profile name
 */
export function containerAppArmor(
  pod: Pod,
  container: Container,
): { apparmor: SecurityProfile; apparmorProfile: string } | undefined {
  const profile = appArmorProfileOf(pod, container);
  if (!profile) return undefined;
  switch (profile.type) {
    case "RuntimeDefault":
      return {
        apparmor: { profileType: ProfileType.RuntimeDefault },
        apparmorProfile: "runtime/default",
      };
    case "Unconfined":
      return { apparmor: { profileType: ProfileType.Unconfined }, apparmorProfile: "unconfined" };
    case "Localhost":
      if (!profile.localhostProfile) {
        throw new ContainerConfigError(
          `container "${container.name}": missing localhost apparmor profile name`,
        );
      }
      return {
        apparmor: { profileType: ProfileType.Localhost, localhostRef: profile.localhostProfile },
        apparmorProfile: `localhost/${profile.localhostProfile}`,
      };
    default:
      throw new ContainerConfigError(
        `container "${container.name}": unknown apparmor profile type: "${
          (profile as { type: string }).type
        }"`,
      );
  }
}

/**
 * True when some container of the pod needs AppArmor enforced (upstream
 * apparmor isRequired): a profile other than Unconfined anywhere.
 * @param pod the pod
 * @returns whether the node must support AppArmor to run it
 */
export function requiresAppArmor(pod: Pod): boolean {
  const spec = pod.spec;
  const confined = (p: AppArmorProfile | undefined) => p !== undefined && p.type !== "Unconfined";
  if (confined(spec.securityContext?.appArmorProfile)) return true;
  const all = [
    ...(spec.initContainers ?? []),
    ...spec.containers,
    ...(spec.ephemeralContainers ?? []),
  ];
  if (all.some((c) => confined(c.securityContext?.appArmorProfile))) return true;
  return Object.entries(pod.metadata.annotations ?? {})
    .some(([k, v]) => k.startsWith(APPARMOR_ANNOTATION_PREFIX) && v !== "unconfined");
}

/**
 * A pod's or container's SELinux options in CRI form.
 * @param opts the API options
 * @returns the CRI option, or undefined when none are set
 */
export function selinuxOption(opts: SELinuxOptions | undefined): SELinuxOption | undefined {
  if (!opts) return undefined;
  return {
    user: opts.user ?? "",
    role: opts.role ?? "",
    type: opts.type ?? "",
    level: opts.level ?? "",
  };
}
