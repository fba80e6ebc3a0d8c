import { type Kysely, sql } from "kysely";

/**
 * email_messages: the e-mail outbox. One row per message, written in the transaction of its
 * cause (a paid order, a failed payment), the idempotency key unique so a cause that runs twice
 * queues one message. The subject, text and HTML are stored as rendered (what is sent, and sent
 * again on a resend). `state`: pending (due at next_attempt_at), sending (held by a process
 * until claimed_until; past it, another takes it over), sent, failed. last_response_code and
 * last_response are the last attempt's SMTP reply (or the connection error without one).
 * The product and the license are set null when they are deleted: the message stays, as a
 * record of what was sent.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("email_messages")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("idempotency_key", "varchar(255)", (c) => c.notNull().unique())
    .addColumn("kind", "varchar(32)", (c) => c.notNull())
    .addColumn("product_id", "varchar(64)", (c) => c.references("products.id").onDelete("set null"))
    .addColumn("license_id", "varchar(64)", (c) => c.references("licenses.id").onDelete("set null"))
    .addColumn("to_address", "varchar(255)", (c) => c.notNull())
    .addColumn("to_name", "varchar(255)")
    .addColumn("subject", "text", (c) => c.notNull())
    .addColumn("text_body", "text", (c) => c.notNull())
    .addColumn("html_body", "text", (c) => c.notNull())
    .addColumn("state", "varchar(16)", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("next_attempt_at", "bigint")
    .addColumn("claimed_until", "bigint")
    .addColumn("last_attempt_at", "bigint")
    .addColumn("last_response_code", "integer")
    .addColumn("last_response", "varchar(1000)")
    .addColumn("message_id", "varchar(255)")
    .addColumn("sent_at", "bigint")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addCheckConstraint(
      "email_messages_state_known",
      sql`state in ('pending', 'sending', 'sent', 'failed')`,
    )
    .execute();
  await db.schema
    .createIndex("email_messages_due")
    .on("email_messages")
    .column("next_attempt_at")
    .where(sql.ref("state"), "=", "pending")
    .execute();
  await db.schema
    .createIndex("email_messages_held")
    .on("email_messages")
    .column("claimed_until")
    .where(sql.ref("state"), "=", "sending")
    .execute();
  await db.schema
    .createIndex("email_messages_created_idx")
    .on("email_messages")
    .columns(["created_at", "id"])
    .execute();
  await db.schema
    .createIndex("email_messages_license_idx")
    .on("email_messages")
    .column("license_id")
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("email_messages").execute();
}
