import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import type { Kysely } from "kysely";
import { type AppOptions, buildApp } from "../../src/app.js";
import type { Database, Dialect } from "../../src/db/database.js";
import type { DB } from "../../src/db/schema.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import {
  type CreateLicenseInput,
  createLicense,
} from "../../src/domain/licenses/manage-licenses.js";
import { createProduct, type Product } from "../../src/domain/products/products.js";
import { openTestDatabase, type TestDatabase } from "./database.js";

/**
 * One app on one fresh database, seeded with two products and API keys. Requests go through
 * Fastify's inject(): in-process, no sockets, the full request pipeline.
 */
export interface Fixture {
  dialect: Dialect;
  app: FastifyInstance;
  database: Database;
  db: Kysely<DB>;
  url: string;
  product: Product;
  otherProduct: Product;
  /** Secret of a key with releases:write. */
  publishKey: string;
  /** Secret of a key without releases:write. */
  readOnlyKey: string;
  createLicense(input?: Partial<CreateLicenseInput>): Promise<string>;
  post(
    path: string,
    body: unknown,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export async function createFixture(
  dialect: Dialect,
  options: Omit<AppOptions, "database"> = {},
): Promise<Fixture> {
  const { database, testDatabase } = await openTestDatabase(dialect);
  const app = await buildApp({ database, ...options });
  return seed(dialect, app, database, testDatabase);
}

async function seed(
  dialect: Dialect,
  app: FastifyInstance,
  database: Database,
  testDatabase: TestDatabase,
): Promise<Fixture> {
  const db = database.db;
  const product = await createProduct(db, { slug: "desktop-app", name: "Desktop App" });
  const otherProduct = await createProduct(db, { slug: "other-app", name: "Other App" });
  const publishKey = (await createApiKey(db, { name: "ci", scopes: ["releases:write"] })).key;
  const readOnlyKey = (await createApiKey(db, { name: "reader", scopes: ["releases:read"] })).key;
  return {
    dialect,
    app,
    database,
    db,
    url: testDatabase.url,
    product,
    otherProduct,
    publishKey,
    readOnlyKey,
    createLicense: async (input = {}) =>
      (
        await createLicense(db, {
          productSlug: product.slug,
          maxMachines: 3,
          ...input,
        })
      ).licenseKey,
    post: (path, body, headers = {}) =>
      app.inject({
        method: "POST",
        url: path,
        headers: { "content-type": "application/json", ...headers },
        payload: typeof body === "string" ? body : JSON.stringify(body),
      }),
    close: async () => {
      await app.close();
      await database.close();
      await testDatabase.drop();
    },
  };
}
