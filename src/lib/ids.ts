import { randomBytes } from "node:crypto";

// Crockford base32: no I, L, O, U, so keys read aloud or typed by hand are unambiguous.
const base32Alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

export function randomBase32(length: number): string {
  const bytes = randomBytes(length);
  let out = "";
  // 256 is a multiple of 32, so byte % 32 is uniform.
  for (const byte of bytes) out += base32Alphabet[byte % 32];
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
