import type { Kysely } from "kysely";

/**
 * - product_email_settings: a product's e-mail: the vendor's name its messages are signed with
 *   (null: the product's name) and the download link the license-delivered message gives (null:
 *   none); expiry_reminders 1: its licenses' customers are told 7 days before an expiry. No
 *   row: null, null, 0.
 * - email_templates: a product's own subject and body for a kind of message; a kind without a
 *   row uses the default text (domain/email/default-templates.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("product_email_settings")
    .addColumn("product_id", "varchar(64)", (c) =>
      c.primaryKey().references("products.id").onDelete("cascade"),
    )
    .addColumn("vendor_name", "varchar(255)")
    .addColumn("download_url", "varchar(2048)")
    .addColumn("expiry_reminders", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("email_templates")
    .addColumn("product_id", "varchar(64)", (c) =>
      c.notNull().references("products.id").onDelete("cascade"),
    )
    .addColumn("kind", "varchar(32)", (c) => c.notNull())
    .addColumn("subject", "varchar(255)", (c) => c.notNull())
    .addColumn("body", "text", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("email_templates_pk", ["product_id", "kind"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("email_templates").execute();
  await db.schema.dropTable("product_email_settings").execute();
}
