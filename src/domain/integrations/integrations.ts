import type { Kysely, Selectable } from "kysely";
import type { DB, IntegrationSecretsTable, IntegrationsTable } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { newId } from "../../lib/ids.js";
import { toIso } from "../../lib/time.js";
import { assertMaxLength, assertSingleLine } from "../limits.js";
import { requireProduct } from "../products/products.js";
import type { MasterKey } from "../signing/key-material.js";
import { openIntegrationSecret, sealIntegrationSecret } from "./secrets.js";
import type { Integration } from "../../contracts/integrations.js";
import {
  type IntegrationMode,
  type IntegrationProvider,
  integrationLimits,
} from "../../contracts/vocabulary.js";

export type IntegrationRow = Selectable<IntegrationsTable>;
type SecretRow = Selectable<IntegrationSecretsTable>;

/** The path a provider posts an integration's events to. */
export const webhookPath = (provider: IntegrationProvider, id: string) =>
  `/api/integrations/${provider}/${id}/webhook`;

export interface NewIntegration {
  /** The product's slug. */
  product: string;
  provider: IntegrationProvider;
  mode?: IntegrationMode;
  secret: string;
  description?: string | null;
}

/**
 * A product's integration with a provider, its first signing secret sealed. `origin` starts the
 * webhook URL it answers with (PUBLIC_URL, or the request's; "" leaves the path alone).
 */
export async function createIntegration(
  db: Kysely<DB>,
  masterKey: MasterKey,
  input: NewIntegration,
  origin: string,
  now = Date.now(),
): Promise<Integration> {
  const description = checkedDescription(input.description ?? null);
  const secret = checkedSecret(input.secret);
  const product = await requireProduct(db, input.product);
  const id = newId("int", now);
  await db
    .insertInto("integrations")
    .values({
      id,
      product_id: product.id,
      provider: input.provider,
      mode: input.mode ?? "live",
      description,
      created_at: now,
      updated_at: now,
    })
    .execute();
  await insertSecret(db, masterKey, id, secret, now);
  return getIntegration(db, id, origin);
}

export async function listIntegrations(db: Kysely<DB>, origin: string): Promise<Integration[]> {
  const rows = await integrationRows(db).orderBy("integrations.created_at").orderBy("id").execute();
  const secrets = await secretRows(
    db,
    rows.map((row) => row.id),
  );
  return rows.map((row) => toIntegrationView(row, secrets, origin));
}

export async function getIntegration(
  db: Kysely<DB>,
  id: string,
  origin: string,
): Promise<Integration> {
  const row = await requireIntegrationRow(db, id);
  return toIntegrationView(row, await secretRows(db, [id]), origin);
}

/** The integration's row with its product's slug; INTEGRATION_NOT_FOUND when there is none. */
export async function requireIntegrationRow(
  db: Kysely<DB>,
  id: string,
): Promise<IntegrationRow & { product_slug: string }> {
  const row = await integrationRows(db).where("integrations.id", "=", id).executeTakeFirst();
  if (!row) throw notFound(id);
  return row;
}

export async function updateIntegration(
  db: Kysely<DB>,
  id: string,
  changes: { mode?: IntegrationMode; description?: string | null },
  origin: string,
  now = Date.now(),
): Promise<Integration> {
  const description =
    changes.description === undefined ? undefined : checkedDescription(changes.description);
  await requireIntegrationRow(db, id);
  await db
    .updateTable("integrations")
    .set({
      ...(changes.mode === undefined ? {} : { mode: changes.mode }),
      ...(description === undefined ? {} : { description }),
      updated_at: now,
    })
    .where("id", "=", id)
    .execute();
  return getIntegration(db, id, origin);
}

/** Deletes the integration with its secrets and its events; the licenses it created stay. */
export async function deleteIntegration(db: Kysely<DB>, id: string): Promise<void> {
  const result = await db.deleteFrom("integrations").where("id", "=", id).executeTakeFirst();
  if (result.numDeletedRows === 0n) throw notFound(id);
}

/**
 * Another signing secret (a rotation: add the new one, then remove the old), at most
 * integrationLimits.secretsAtOnce. The integration's row is written first, which orders two
 * additions to one integration.
 */
export async function addIntegrationSecret(
  db: Kysely<DB>,
  masterKey: MasterKey,
  id: string,
  secret: string,
  origin: string,
  now = Date.now(),
): Promise<{ integration: Integration; secretId: string }> {
  const checked = checkedSecret(secret);
  await touch(db, id, now);
  const held = await db
    .selectFrom("integration_secrets")
    .select("id")
    .where("integration_id", "=", id)
    .execute();
  if (held.length >= integrationLimits.secretsAtOnce) {
    throw new ShipkeyError(
      "INTEGRATION_SECRETS_FULL",
      `Integration ${id} already holds ${integrationLimits.secretsAtOnce} secrets: remove the old one first`,
    );
  }
  const secretId = await insertSecret(db, masterKey, id, checked, now);
  return { integration: await getIntegration(db, id, origin), secretId };
}

export async function removeIntegrationSecret(
  db: Kysely<DB>,
  id: string,
  secretId: string,
  origin: string,
  now = Date.now(),
): Promise<Integration> {
  await touch(db, id, now);
  const held = await db
    .selectFrom("integration_secrets")
    .select("id")
    .where("integration_id", "=", id)
    .execute();
  if (!held.some((row) => row.id === secretId)) {
    throw new ShipkeyError(
      "INTEGRATION_SECRET_NOT_FOUND",
      `Integration ${id} has no secret ${secretId}`,
    );
  }
  if (held.length === 1) {
    throw new ShipkeyError(
      "INTEGRATION_LAST_SECRET",
      `Secret ${secretId} is the only secret of integration ${id}: add the new one first`,
    );
  }
  await db.deleteFrom("integration_secrets").where("id", "=", secretId).execute();
  return getIntegration(db, id, origin);
}

/** The integration's secrets in clear, newest first: what its events are verified with. */
export async function openIntegrationSecrets(
  db: Kysely<DB>,
  masterKey: MasterKey,
  id: string,
): Promise<string[]> {
  const rows = await db
    .selectFrom("integration_secrets")
    .selectAll()
    .where("integration_id", "=", id)
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .execute();
  return rows.map((row) => openIntegrationSecret(masterKey, id, row.id, row));
}

/** Every integration secret sealed again under another master key (`shipkey master-key rotate`). */
export async function resealIntegrationSecrets(
  db: Kysely<DB>,
  from: MasterKey,
  to: MasterKey,
): Promise<number> {
  const rows = await db.selectFrom("integration_secrets").selectAll().execute();
  for (const row of rows) {
    const sealed = sealIntegrationSecret(
      to,
      row.integration_id,
      row.id,
      openIntegrationSecret(from, row.integration_id, row.id, row),
    );
    await db
      .updateTable("integration_secrets")
      .set({ iv: sealed.iv, ciphertext: sealed.ciphertext, tag: sealed.tag })
      .where("id", "=", row.id)
      .execute();
  }
  return rows.length;
}

function integrationRows(db: Kysely<DB>) {
  return db
    .selectFrom("integrations")
    .innerJoin("products", "products.id", "integrations.product_id")
    .selectAll("integrations")
    .select("products.slug as product_slug");
}

async function secretRows(db: Kysely<DB>, ids: string[]): Promise<SecretRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom("integration_secrets")
    .selectAll()
    .where("integration_id", "in", ids)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
}

async function insertSecret(
  db: Kysely<DB>,
  masterKey: MasterKey,
  integrationId: string,
  secret: string,
  now: number,
): Promise<string> {
  const id = newId("isec", now);
  const sealed = sealIntegrationSecret(masterKey, integrationId, id, secret);
  await db
    .insertInto("integration_secrets")
    .values({ id, integration_id: integrationId, ...sealed, created_at: now })
    .execute();
  return id;
}

async function touch(db: Kysely<DB>, id: string, now: number): Promise<void> {
  const result = await db
    .updateTable("integrations")
    .set({ updated_at: now })
    .where("id", "=", id)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw notFound(id);
}

function toIntegrationView(
  row: IntegrationRow & { product_slug: string },
  secrets: SecretRow[],
  origin: string,
): Integration {
  return {
    id: row.id,
    product: row.product_slug,
    provider: row.provider,
    mode: row.mode,
    description: row.description,
    webhookUrl: `${origin}${webhookPath(row.provider, row.id)}`,
    secrets: secrets
      .filter((secret) => secret.integration_id === row.id)
      .map((secret) => ({ id: secret.id, createdAt: toIso(secret.created_at) })),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

const notFound = (id: string) =>
  new ShipkeyError("INTEGRATION_NOT_FOUND", `Integration ${id} not found`);

function checkedDescription(description: string | null): string | null {
  if (description === null || description === "") return null;
  assertMaxLength("description", description, integrationLimits.description);
  assertSingleLine("description", description);
  return description;
}

function checkedSecret(secret: string): string {
  if (
    secret.length < integrationLimits.secretMinLength ||
    secret.length > integrationLimits.secretMaxLength ||
    /\s/.test(secret)
  ) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `secret must be ${integrationLimits.secretMinLength} to ${integrationLimits.secretMaxLength} characters without spaces`,
      { field: "secret" },
    );
  }
  return secret;
}
