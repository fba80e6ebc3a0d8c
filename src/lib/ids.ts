import { randomFillSync } from "node:crypto";

// Crockford base32: no I, L, O, U, so keys read aloud or typed by hand are unambiguous.
const base32Alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

// Random bytes are drawn from the CSPRNG 4 KiB at a time: one randomBytes() call per id cost 5 %
// of publish's CPU (profiled). Each byte is handed out once.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

export function randomBase32(length: number): string {
  if (length > pool.length) throw new RangeError("randomBase32: length exceeds the pool");
  if (poolOffset + length > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  let out = "";
  // 256 is a multiple of 32, so byte % 32 is uniform.
  for (let i = poolOffset; i < poolOffset + length; i++) {
    out += base32Alphabet[(pool[i] as number) % 32];
  }
  poolOffset += length;
  return out;
}

/** Opaque record id with a type prefix, e.g. `lic_5Z0K3M8Q9T2V4W6X`. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase32(20)}`;
}

/** A readable license key: 5 groups of 5 base32 characters (125 bits of randomness). */
export function newLicenseKey(): string {
  const raw = randomBase32(25);
  return raw.match(/.{5}/g)?.join("-") ?? raw;
}
