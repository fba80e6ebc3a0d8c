/** The generated keys' alphabet (lib/ids.ts): Crockford's base32, upper case. */
const generatedKeyShape = /^[0-9ABCDEFGHJKMNPQRSTVWXYZ]{25}$/;

/**
 * A license key as the customer typed it -> as it is stored, without a query: surrounding
 * whitespace dropped; a key of the generated form (25 base32 characters) matched whatever its case
 * and with or without its dashes, so "abcde fghjk…" pasted without dashes finds "ABCDE-FGHJK-…".
 * Any other key (a custom one) is matched exactly as stored.
 */
export function normalizeLicenseKey(typed: string): string {
  const key = typed.trim();
  // 25 characters and 0 to 4 dashes: anything longer is not a generated key.
  if (key.length < 25 || key.length > 29) return key;
  const bare = key.replaceAll("-", "").toUpperCase();
  if (!generatedKeyShape.test(bare)) return key;
  return bare.match(/.{5}/g)?.join("-") ?? bare;
}

/**
 * A license key masked to its last four characters ("7K2QD-…-PQW5E" → "…QW5E"): how the audit
 * log, and webhook payloads shown without licenses:read, name a license's key. Enough to tell
 * keys apart, too little to use one.
 */
export const maskLicenseKey = (licenseKey: string) => `…${licenseKey.slice(-4)}`;
