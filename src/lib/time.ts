/** ISO 8601 UTC with milliseconds, e.g. 2026-11-21T15:12:50.056Z. */
export function toIso(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

export function isoOrNull(epochMs: number | null): string | null {
  return epochMs === null ? null : toIso(epochMs);
}

/** Parses an ISO 8601 timestamp with an explicit zone; null if it is not one. */
export function parseIsoTimestamp(text: string): number | null {
  // Require a date, a time and a zone so "2026-01-01" is not silently read as midnight UTC.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(text)) {
    return null;
  }
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}
