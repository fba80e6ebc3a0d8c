import { type Kysely, sql } from "kysely";

/**
 * - webhook_endpoints.url_changed_at: when the endpoint's URL last changed (null: never since it
 *   was made). Redelivering an event from before it needs licenses:read too.
 * - webhook_endpoints.withholds_license_data: 1 when whoever last set the URL lacked
 *   licenses:read; what is sent there then has license keys masked and no customer. 0 on the
 *   endpoints made before (only admins and full keys could make them).
 * - The audit log names a webhook URL by its origin only (scheme, host, port): a URL's path and
 *   query may be a bearer secret (Slack, Discord, Zapier). The `url` of earlier
 *   webhook_endpoint.create entries is rewritten so (one that does not parse is left out).
 *   Irreversible by design: down() drops the column and restores no path.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("webhook_endpoints").addColumn("url_changed_at", "bigint").execute();
  await db.schema
    .alterTable("webhook_endpoints")
    .addColumn("withholds_license_data", "integer", (col) => col.notNull().defaultTo(0))
    .execute();
  const entries = await sql<{ id: string; details: string }>`
    select id, details from audit_log where action = 'webhook_endpoint.create'`.execute(db);
  for (const entry of entries.rows) {
    let details: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(entry.details);
      if (typeof parsed !== "object" || parsed === null) continue;
      details = parsed as Record<string, unknown>;
    } catch {
      continue;
    }
    const { url, ...rest } = details;
    if (typeof url !== "string") continue;
    let origin: string | null;
    try {
      origin = new URL(url).origin;
    } catch {
      origin = null;
    }
    if (origin === url) continue;
    await sql`update audit_log
      set details = ${JSON.stringify(origin === null ? rest : { ...details, url: origin })}
      where id = ${entry.id}`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("webhook_endpoints").dropColumn("url_changed_at").execute();
  await db.schema.alterTable("webhook_endpoints").dropColumn("withholds_license_data").execute();
}
