import { ShipkeyError } from "../errors.js";

/**
 * A field a request that refuses unknown fields (publish, the admin API) does not know: 400
 * UNKNOWN_FIELD naming it and, where one is close, the known field meant
 * (`Unknown field notes: did you mean releaseNotes?`). The license endpoints accept unknown
 * fields (apps in the field send newer ones) and never come here.
 */

/** The classic confusions, by lowercase name: each is suggested where its field is known. */
const synonyms = new Map<string, string>([
  ["notes", "releaseNotes"],
  ["sha256", "sha512"],
  ["size", "fileSize"],
  ["url", "downloadUrl"],
  ["os", "platform"],
  ["architecture", "arch"],
  ["product", "productSlug"],
  ["slug", "productSlug"],
  ["key", "licenseKey"],
  ["machine", "machineId"],
]);

/** Names longer than this are never compared (no field comes near; the cost is bounded). */
const comparedLength = 64;

/**
 * The known field `name` most likely means: a synonym's field, else the nearest known field by
 * Damerau-Levenshtein distance ignoring case, at most 1 for names of 3 to 5 characters and 2 for
 * longer ones (shorter names only match in another case); undefined when none is close.
 */
export function closestField(name: string, known: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  const synonym = synonyms.get(lower);
  if (synonym !== undefined && known.includes(synonym)) return synonym;
  if (lower.length > comparedLength) return undefined;
  const allowed = Math.min(2, Math.floor(lower.length / 3));
  let best: { field: string; distance: number } | undefined;
  for (const field of known) {
    const distance = editDistance(lower, field.toLowerCase(), allowed);
    if (distance <= allowed && (best === undefined || distance < best.distance)) {
      best = { field, distance };
    }
  }
  return best?.field;
}

/**
 * The optimal-string-alignment distance (insertions, deletions, substitutions and swaps of two
 * neighbours); `bound + 1` when the lengths alone differ by more than `bound`.
 */
function editDistance(a: string, b: string, bound: number): number {
  if (Math.abs(a.length - b.length) > bound) return bound + 1;
  let previous2: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(
        (previous[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, (previous2[j - 2] ?? 0) + 1);
      }
      row.push(d);
    }
    previous2 = previous;
    previous = row;
  }
  return previous[b.length] ?? bound + 1;
}

/**
 * The refusal of the unknown field `name` at `path` (`notes`, `releases[0].sha256`); `what` is
 * "field" for a body, "query parameter" for a query string.
 */
export function unknownField(
  path: string,
  name: string,
  known: readonly string[],
  what: "field" | "query parameter" = "field",
): ShipkeyError {
  const meant = closestField(name, known);
  const hint = meant === undefined ? "" : `: did you mean ${meant}?`;
  return new ShipkeyError("UNKNOWN_FIELD", `Unknown ${what} ${path}${hint}`, { field: path });
}

/**
 * Throws for the first field of `object`, in its order, that is not in `known`; `at` is the
 * object's own path (`releases[0]`), none for the body.
 */
export function assertKnownFields(
  object: Record<string, unknown>,
  known: readonly string[],
  at?: string,
): void {
  const name = Object.keys(object).find((key) => !known.includes(key));
  if (name === undefined) return;
  throw unknownField(at === undefined ? name : `${at}.${name}`, name, known);
}
