import type { Kysely } from "kysely";

/**
 * - integrations: a product's payment-provider account (stripe, paddle or lemonsqueezy) in live
 *   or test mode; its webhook URL is /api/integrations/{provider}/{id}/webhook.
 * - integration_secrets: the signing secrets an integration's events are verified with, sealed
 *   under the master key (AES-256-GCM, iv, ciphertext and tag as base64, the associated data
 *   binding each to its integration and id). At most two at once, during a rotation.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("integrations")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("product_id", "varchar(64)", (c) =>
      c.notNull().references("products.id").onDelete("cascade"),
    )
    .addColumn("provider", "varchar(16)", (c) => c.notNull())
    .addColumn("mode", "varchar(8)", (c) => c.notNull())
    .addColumn("description", "varchar(255)")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("integrations_product_idx")
    .on("integrations")
    .column("product_id")
    .execute();
  await db.schema
    .createTable("integration_secrets")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("integration_id", "varchar(64)", (c) =>
      c.notNull().references("integrations.id").onDelete("cascade"),
    )
    .addColumn("iv", "text", (c) => c.notNull())
    .addColumn("ciphertext", "text", (c) => c.notNull())
    .addColumn("tag", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("integration_secrets_integration_idx")
    .on("integration_secrets")
    .columns(["integration_id", "created_at"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("integration_secrets").execute();
  await db.schema.dropTable("integrations").execute();
}
