import { type Kysely, SqliteAdapter, sql } from "kysely";

/**
 * - webhook_endpoints: where events are sent. `events` is a JSON array of event types, `products`
 *   a JSON array of product slugs (null: every product). The signing secret is stored only
 *   sealed under the master key (AES-256-GCM, iv, ciphertext and tag as base64, its associated
 *   data binding it to the endpoint); after a rotation the previous one keeps signing until
 *   previous_secret_expires_at. consecutive_failures and failing_since count the failed attempts
 *   since the last success (the endpoint is disabled after a long run of them).
 * - webhook_deliveries: the outbox. One row per event and subscribed endpoint, written in the
 *   transaction of the event's cause; the event id is the webhook-id of every attempt.
 *   webhook_deliveries_due finds the pending ones whose time has come.
 * - audit_log_actor_type_known also admits "service": what the service does by itself (disabling
 *   a failing endpoint). SQLite cannot change a constraint: the table is rebuilt.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("webhook_endpoints")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("url", "text", (c) => c.notNull())
    .addColumn("description", "varchar(255)")
    .addColumn("events", "text", (c) => c.notNull())
    .addColumn("products", "text")
    .addColumn("enabled", "integer", (c) => c.notNull().defaultTo(1))
    .addColumn("secret_iv", "text", (c) => c.notNull())
    .addColumn("secret_ciphertext", "text", (c) => c.notNull())
    .addColumn("secret_tag", "text", (c) => c.notNull())
    .addColumn("previous_secret_iv", "text")
    .addColumn("previous_secret_ciphertext", "text")
    .addColumn("previous_secret_tag", "text")
    .addColumn("previous_secret_expires_at", "bigint")
    .addColumn("consecutive_failures", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("failing_since", "bigint")
    .addColumn("disabled_reason", "varchar(255)")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("webhook_deliveries")
    .addColumn("event_id", "varchar(64)", (c) => c.notNull())
    .addColumn("endpoint_id", "varchar(64)", (c) =>
      c.notNull().references("webhook_endpoints.id").onDelete("cascade"),
    )
    .addColumn("event_type", "varchar(64)", (c) => c.notNull())
    .addColumn("payload", "text", (c) => c.notNull())
    .addColumn("status", "varchar(16)", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("next_attempt_at", "bigint")
    .addColumn("claimed_until", "bigint")
    .addColumn("last_attempt_at", "bigint")
    .addColumn("response_status", "integer")
    .addColumn("last_error", "varchar(255)")
    .addColumn("duration_ms", "integer")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("webhook_deliveries_pk", ["event_id", "endpoint_id"])
    .execute();
  await db.schema
    .createIndex("webhook_deliveries_due")
    .on("webhook_deliveries")
    .columns(["next_attempt_at"])
    .where(sql.ref("status"), "=", "pending")
    .execute();
  await db.schema
    .createIndex("webhook_deliveries_endpoint_idx")
    .on("webhook_deliveries")
    .columns(["endpoint_id", "created_at"])
    .execute();
  await db.schema
    .createIndex("webhook_deliveries_created_idx")
    .on("webhook_deliveries")
    .column("created_at")
    .execute();
  await setAuditActorTypes(db, ["api_key", "admin", "cli", "service"]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`delete from audit_log where actor_type = 'service'`.execute(db);
  await setAuditActorTypes(db, ["api_key", "admin", "cli"]);
  await db.schema.dropTable("webhook_deliveries").execute();
  await db.schema.dropTable("webhook_endpoints").execute();
}

async function setAuditActorTypes(db: Kysely<unknown>, types: string[]): Promise<void> {
  const known = sql`actor_type in (${sql.join(types.map((t) => sql.lit(t)))})`;
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) {
    await sql`alter table audit_log drop constraint audit_log_actor_type_known`.execute(db);
    await sql`alter table audit_log add constraint audit_log_actor_type_known check (${known})`.execute(
      db,
    );
    return;
  }
  await db.schema
    .createTable("audit_log_rebuilt")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("at", "bigint", (c) => c.notNull())
    .addColumn("actor_type", "varchar(16)", (c) => c.notNull())
    .addColumn("actor_id", "varchar(64)")
    .addColumn("actor_label", "varchar(255)", (c) => c.notNull())
    .addColumn("action", "varchar(64)", (c) => c.notNull())
    .addColumn("target_type", "varchar(32)", (c) => c.notNull())
    .addColumn("target_id", "varchar(255)", (c) => c.notNull())
    .addColumn("ip", "varchar(64)")
    .addColumn("details", "text", (c) => c.notNull().defaultTo("{}"))
    .addCheckConstraint("audit_log_actor_type_known", known)
    .execute();
  await sql`insert into audit_log_rebuilt
    (id, at, actor_type, actor_id, actor_label, action, target_type, target_id, ip, details)
    select id, at, actor_type, actor_id, actor_label, action, target_type, target_id, ip, details
    from audit_log`.execute(db);
  await db.schema.dropTable("audit_log").execute();
  await db.schema.alterTable("audit_log_rebuilt").renameTo("audit_log").execute();
  await db.schema.createIndex("audit_log_at_idx").on("audit_log").columns(["at", "id"]).execute();
  await db.schema
    .createIndex("audit_log_target_idx")
    .on("audit_log")
    .columns(["target_type", "target_id", "at"])
    .execute();
}
