// Generated from packages/publish/src by `npm run build:action`: edit the source, then run it.
/** Longest suffix first, so `.app.tar.gz` wins over `.tar.gz`. Compared case-insensitively. */
const formats = [
    // Tauri's macOS updater bundle is named after the product only, whatever its arch.
    { suffix: ".app.tar.gz", platform: "MACOS", defaultArch: null },
    { suffix: ".appimage.tar.gz", platform: "LINUX", defaultArch: "X64" },
    { suffix: ".nsis.zip", platform: "WINDOWS", defaultArch: "X64" },
    { suffix: ".msi.zip", platform: "WINDOWS", defaultArch: "X64" },
    { suffix: ".tar.gz", platform: "archive", defaultArch: "X64" },
    { suffix: ".tar.xz", platform: "archive", defaultArch: "X64" },
    { suffix: ".tar.bz2", platform: "archive", defaultArch: "X64" },
    { suffix: ".zip", platform: "archive", defaultArch: "X64" },
    { suffix: ".7z", platform: "archive", defaultArch: "X64" },
    { suffix: ".exe", platform: "WINDOWS", defaultArch: "X64" },
    { suffix: ".msi", platform: "WINDOWS", defaultArch: "X64" },
    { suffix: ".nupkg", platform: "WINDOWS", defaultArch: "X64" },
    { suffix: ".dmg", platform: "MACOS", defaultArch: "X64" },
    { suffix: ".pkg", platform: "MACOS", defaultArch: "X64" },
    { suffix: ".appimage", platform: "LINUX", defaultArch: "X64" },
    { suffix: ".deb", platform: "LINUX", defaultArch: "X64" },
    { suffix: ".rpm", platform: "LINUX", defaultArch: "X64" },
    { suffix: ".snap", platform: "LINUX", defaultArch: "X64" },
    { suffix: ".pacman", platform: "LINUX", defaultArch: "X64" },
];
/** Build outputs that are not artifacts: never an entry, and no error. */
const skipped = [
    { suffix: ".sig", reason: "signature, read beside its artifact" },
    { suffix: ".blockmap", reason: "electron-builder blockmap" },
    { suffix: ".yml", reason: "update metadata" },
    { suffix: ".yaml", reason: "update metadata" },
    { suffix: ".json", reason: "update metadata" },
];
const archWords = new Map([
    ["x64", "X64"],
    ["amd64", "X64"],
    ["arm64", "ARM64"],
    ["aarch64", "ARM64"],
]);
/** Arches the builders make that Shipkey has no value for. */
const unsupportedArchWords = new Set([
    "ia32",
    "x86",
    "i386",
    "i686",
    "armv7l",
    "armhf",
    "armhfp",
    "armel",
]);
const osWords = new Map([
    ["mac", "MACOS"],
    ["macos", "MACOS"],
    ["darwin", "MACOS"],
    ["osx", "MACOS"],
    ["win", "WINDOWS"],
    ["windows", "WINDOWS"],
    ["linux", "LINUX"],
]);
export function recognizeArtifact(fileName) {
    const lower = fileName.toLowerCase();
    const skip = skipped.find((s) => lower.endsWith(s.suffix));
    if (skip)
        return { kind: "skip", reason: skip.reason };
    // Squirrel.Windows' release list.
    if (lower === "releases")
        return { kind: "skip", reason: "update metadata" };
    const format = formats.find((f) => lower.endsWith(f.suffix));
    if (!format)
        return { kind: "artifact", platform: null, arch: null };
    const words = wordsOf(lower.slice(0, -format.suffix.length));
    const platform = format.platform === "archive" ? onlyValue(words, osWords) : format.platform;
    const unsupportedArch = words.find((w) => unsupportedArchWords.has(w));
    if (unsupportedArch !== undefined) {
        return { kind: "artifact", platform, arch: null, unsupportedArch };
    }
    // A universal macOS build serves both arches: which entry it is, only the caller knows.
    if (words.includes("universal"))
        return { kind: "artifact", platform, arch: null };
    const arches = valuesOf(words, archWords);
    if (arches.size > 1)
        return { kind: "artifact", platform, arch: null };
    const [arch] = arches;
    return { kind: "artifact", platform, arch: arch ?? format.defaultArch };
}
/** `App_1.4.0_x86_64-setup` → app, 1, 4, 0, x64, setup (x86_64 kept whole as x64). */
function wordsOf(stem) {
    return stem
        .replace(/x86[_-]64/g, "x64")
        .split(/[\s._-]+/)
        .filter((w) => w !== "");
}
function valuesOf(words, table) {
    return new Set(words.flatMap((w) => table.get(w) ?? []));
}
/** The one value the words name, or null when they name none or several. */
function onlyValue(words, table) {
    const values = valuesOf(words, table);
    const [value] = values;
    return values.size === 1 && value !== undefined ? value : null;
}
