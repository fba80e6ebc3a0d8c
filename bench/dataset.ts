/**
 * The benchmark's data set is deterministic, so the load generator picks a random activated
 * machine from a number alone, without shipping a list of keys between processes.
 *
 * Licenses 0..n-1 hold 1.5 machines each on average; license n holds 1,000 machines and license
 * n+1 holds 2 (validate-1000 and validate-2 compare them).
 */
export const benchProducts = ["bench-alpha", "bench-beta", "bench-gamma"] as const;

/**
 * The appcast scenarios' products: 20 macOS versions each, with notes of the longest allowed
 * length (64 KiB), plain words on one, the worst Markdown for the renderer (`![` repeated) on
 * the other; and the notes themselves.
 */
export const appcastProducts = { plain: "bench-notes-plain", worst: "bench-notes-worst" } as const;
export const appcastVersions = 20;
export const appcastNotes = {
  plain: "Fixed a crash when resuming from sleep. ".repeat(1638),
  worst: "![".repeat(32_768),
} as const;

export interface DatasetShape {
  licenses: number;
  machines: number;
}

export const shapeFor = (licenses: number): DatasetShape => ({
  licenses,
  machines: Math.round(licenses * 1.5),
});

export const bigLicenseMachines = 1000;
/** The license with 1,000 machines and the one with 2: after the others. */
export const bigLicense = (shape: DatasetShape): number => shape.licenses;
export const pairLicense = (shape: DatasetShape): number => shape.licenses + 1;

// Shaped like real data, because sizes decide how many B-tree pages a lookup touches: license
// keys in newLicenseKey's format (5 groups of 5 base32 characters), record ids in newId's, machine
// ids as the 64-hex fingerprints desktop apps send. The random-looking part comes first, so keys
// land on B-tree pages in random order as real ones do; the index at the end keeps them unique.
const base32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const hex = "0123456789abcdef";

/** `length` characters of `alphabet` drawn from a small PRNG (mulberry32) seeded by `seed`. */
function scrambled(seed: number, length: number, alphabet: string): string {
  let state = seed >>> 0;
  let out = "";
  for (let i = 0; i < length; i++) {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out += alphabet[((t ^ (t >>> 14)) >>> 0) % alphabet.length];
  }
  return out;
}

function fixedWidth(value: number, width: number, alphabet: string): string {
  let out = "";
  for (let rest = value, i = 0; i < width; i++, rest = Math.floor(rest / alphabet.length)) {
    out = `${alphabet[rest % alphabet.length]}${out}`;
  }
  return out;
}

export function licenseKeyFor(index: number): string {
  const raw = `${scrambled(index * 2 + 1, 19, base32)}${fixedWidth(index, 6, base32)}`;
  return raw.match(/.{5}/g)?.join("-") ?? raw;
}

const seededAt = Date.UTC(2025, 0, 1);

/** An id in newId's format, created `index` seconds after the data set's start. */
export function recordIdFor(prefix: string, index: number, salt = 0): string {
  const time = fixedWidth(seededAt + index * 1000, 10, base32);
  return `${prefix}_${time}${scrambled(index * 4 + salt + 2, 3, base32)}${fixedWidth(index * 1024 + salt, 9, base32)}`;
}

export function productFor(index: number): string {
  return benchProducts[index % benchProducts.length] as string;
}

export function machineCountFor(index: number, shape: DatasetShape): number {
  if (index === bigLicense(shape)) return bigLicenseMachines;
  if (index === pairLicense(shape)) return 2;
  const base = Math.floor(shape.machines / shape.licenses);
  return base + (index < shape.machines % shape.licenses ? 1 : 0);
}

export function machineIdFor(licenseIndex: number, machineIndex: number): string {
  const seed = licenseIndex * 1024 + machineIndex;
  return `${scrambled(seed * 2 + 1, 51, hex)}${fixedWidth(licenseIndex, 10, hex)}${fixedWidth(machineIndex, 3, hex)}`;
}

/** Room for activate/deactivate cycles on top of the seeded machines. */
export const maxMachinesFor = (index: number, shape: DatasetShape): number =>
  machineCountFor(index, shape) + 4;

/** A random activated machine of `license` (default: any of the ordinary licenses). */
export function activatedMachine(
  shape: DatasetShape,
  license = Math.floor(Math.random() * Math.min(shape.licenses, shape.machines)),
): { licenseKey: string; machineId: string; productSlug: string } {
  const machine = Math.floor(Math.random() * machineCountFor(license, shape));
  return {
    licenseKey: licenseKeyFor(license),
    machineId: machineIdFor(license, machine),
    productSlug: productFor(license),
  };
}
