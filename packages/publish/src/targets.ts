/** The platforms and arches a release entry is published for (the server's own lists). */
export const platforms = ["WINDOWS", "MACOS", "LINUX"] as const;
export type Platform = (typeof platforms)[number];

export const arches = ["X64", "ARM64"] as const;
export type Arch = (typeof arches)[number];
