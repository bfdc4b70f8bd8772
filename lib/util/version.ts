/**
 * denolet's version. The Kubernetes version it implements comes first and
 * denolet's own version is the pre-release part, so that what reads a node's
 * `kubeletVersion` as semver (the apiserver's version skew checks, kubectl)
 * sees a kubelet of that Kubernetes release, while humans see "denolet".
 */
export const VERSION = "v1.34.0-denolet.0.1.0";
