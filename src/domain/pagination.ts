import { ShipkeyError } from "../errors.js";

export interface Page<T> {
  items: T[];
  /** Pass back as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/** Opaque cursor over (timestamp, id) ordering. */
export function encodeCursor(at: number, id: string): string {
  return Buffer.from(JSON.stringify([at, id])).toString("base64url");
}

export function decodeCursor(cursor: string): { at: number; id: string } {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    const [at, id] = Array.isArray(value) ? value : [];
    if (
      typeof at === "number" &&
      Number.isSafeInteger(at) &&
      at >= 0 &&
      typeof id === "string" &&
      /^[A-Za-z0-9_]{1,64}$/.test(id)
    ) {
      return { at, id };
    }
  } catch {
    // fall through
  }
  throw new ShipkeyError("INVALID_FIELD_VALUE", "cursor is not valid", { field: "cursor" });
}
