import { type Kysely, sql } from "kysely";

/**
 * integration_events: the ledger of verified inbound events, one row per integration and event
 * key (the provider's event id; Lemon Squeezy, which has none: a digest of the event name, the
 * object's id and its updated_at), so a copy delivered again or concurrently inserts nothing.
 * `status`: processed (its effects committed with the row), ignored (with `reason`: nothing the
 * product can use) or waiting (retried until `retry_until`: a renewal for a subscription not seen
 * yet). `body`, the raw body as received, is emptied after INTEGRATION_EVENT_BODY_DAYS.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("integration_events")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("integration_id", "varchar(64)", (c) =>
      c.notNull().references("integrations.id").onDelete("cascade"),
    )
    .addColumn("event_key", "varchar(255)", (c) => c.notNull())
    .addColumn("event_type", "varchar(255)", (c) => c.notNull())
    .addColumn("object_id", "varchar(255)")
    .addColumn("livemode", "integer")
    .addColumn("status", "varchar(16)", (c) => c.notNull())
    .addColumn("reason", "varchar(1024)")
    .addColumn("body", "text")
    .addColumn("occurred_at", "bigint")
    .addColumn("received_at", "bigint", (c) => c.notNull())
    .addColumn("processed_at", "bigint")
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(1))
    .addColumn("next_attempt_at", "bigint")
    .addColumn("retry_until", "bigint")
    .execute();
  await db.schema
    .createIndex("integration_events_key_idx")
    .on("integration_events")
    .columns(["integration_id", "event_key"])
    .unique()
    .execute();
  await db.schema
    .createIndex("integration_events_list_idx")
    .on("integration_events")
    .columns(["integration_id", "received_at", "id"])
    .execute();
  await db.schema
    .createIndex("integration_events_received_idx")
    .on("integration_events")
    .column("received_at")
    .execute();
  await db.schema
    .createIndex("integration_events_waiting_idx")
    .on("integration_events")
    .column("next_attempt_at")
    .where(sql.ref("status"), "=", "waiting")
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("integration_events").execute();
}
