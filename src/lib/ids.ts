import { randomBytes, randomFillSync } from "node:crypto";

// Crockford base32: no I, L, O, U, so keys read aloud or typed by hand are unambiguous.
const base32Alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

function toBase32(bytes: Uint8Array): string {
  let out = "";
  // 256 is a multiple of 32, so byte % 32 is uniform.
  for (const byte of bytes) out += base32Alphabet[byte % 32];
  return out;
}

// Record ids draw random bytes from the CSPRNG 4 KiB at a time: one randomBytes() call per id
// cost 5 % of publish's CPU (profiled). Each byte is handed out once. Secrets (license keys) do
// not come from here: bytes waiting in a pool would be future keys sitting in memory.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

export function randomBase32(length: number): string {
  if (length > pool.length) throw new RangeError("randomBase32: length exceeds the pool");
  if (poolOffset + length > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const bytes = pool.subarray(poolOffset, poolOffset + length);
  poolOffset += length;
  return toBase32(bytes);
}

/**
 * Opaque record id with a type prefix, e.g. `act_01KAZ3M8Q9T2V4W6XB0C5D`: 10 base32 characters
 * of the creation time in milliseconds, then 12 random ones (60 bits).
 *
 * Time first (as ULIDs do): a new row's primary-key entry lands at the end of the index instead
 * of on a random page. With random ids, each activation dirties one more random page of the
 * index (measured: activate + deactivate 5 % slower). Ids carry no
 * authority; the creation time they reveal is already in the record.
 */
export function newId(prefix: string, now = Date.now()): string {
  let time = "";
  for (let rest = now, i = 0; i < timeChars; i++, rest = Math.floor(rest / 32)) {
    time = `${base32Alphabet[rest % 32] ?? "0"}${time}`;
  }
  // Within one millisecond, the next id of this process is the previous one plus one (as ULIDs'
  // monotonic ids are), so records made in the same millisecond sort in the order they were made.
  const next = now === lastIdTime ? increment(lastIdRandom) : null;
  lastIdRandom = next ?? randomBase32(12);
  lastIdTime = now;
  return `${prefix}_${time}${lastIdRandom}`;
}

let lastIdTime = -1;
let lastIdRandom = "";

/** The base32 number one above `digits`, or null past the largest of its length. */
function increment(digits: string): string | null {
  const chars = [...digits];
  for (let i = chars.length - 1; i >= 0; i--) {
    const value = base32Alphabet.indexOf(chars[i] ?? "");
    if (value < 31) {
      chars[i] = base32Alphabet[value + 1] ?? "0";
      return chars.join("");
    }
    chars[i] = "0";
  }
  return null;
}

// 32^10 ms is more than 35 000 years.
const timeChars = 10;

/** A readable license key: 5 groups of 5 base32 characters (125 bits of randomness). */
export function newLicenseKey(): string {
  const raw = toBase32(randomBytes(25));
  return raw.match(/.{5}/g)?.join("-") ?? raw;
}
