import { type Kysely, sql } from "kysely";

/**
 * The audit log no longer holds license keys: an entry about a license names it by its internal
 * id, with the key masked to its last four characters in `details.licenseKey`. Earlier entries
 * (whose target id was the key itself) are rewritten so; an entry whose license no longer exists
 * keeps only the masked key. Irreversible by design: down() changes nothing.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const entries = await sql<{ id: string; target_id: string; details: string }>`
    select id, target_id, details from audit_log where target_type = 'license'`.execute(db);
  for (const entry of entries.rows) {
    const license = await sql<{ id: string }>`
      select id from licenses where license_key = ${entry.target_id}`.execute(db);
    const licenseId = license.rows[0]?.id;
    // Already rewritten (an id, not a key): nothing to do.
    if (licenseId === undefined && entry.target_id.startsWith("…")) continue;
    const masked = `…${entry.target_id.slice(-4)}`;
    let details: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(entry.details);
      details =
        typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
    } catch {
      details = {};
    }
    await sql`update audit_log
      set target_id = ${licenseId ?? masked},
          details = ${JSON.stringify({ licenseKey: masked, ...details })}
      where id = ${entry.id}`.execute(db);
  }
}

export async function down(): Promise<void> {
  // The keys are gone from the log; there is nothing to restore.
}
