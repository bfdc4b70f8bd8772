/** denolet's version, as `--version` prints it and nodeInfo will report it. */
export const VERSION = "v0.1.0-denolet";
