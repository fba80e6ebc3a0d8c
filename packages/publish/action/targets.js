// Generated from packages/publish/src by `npm run build:action`: edit the source, then run it.
/** The platforms and arches a release entry is published for (the server's own lists). */
export const platforms = ["WINDOWS", "MACOS", "LINUX"];
export const arches = ["X64", "ARM64"];
