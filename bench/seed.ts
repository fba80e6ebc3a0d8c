import { CompiledQuery, type Kysely, sql } from "kysely";
import type { Dialect } from "../src/db/database.js";
import type { DB } from "../src/db/schema.js";
import { createApiKey } from "../src/domain/api-keys/api-keys.js";
import { createProduct, requireProduct } from "../src/domain/products/products.js";
import { publishRelease } from "../src/actions/releases.js";
import { setRollout } from "../src/domain/releases/rollout.js";
import {
  appcastNotes,
  appcastProducts,
  appcastVersions,
  benchProducts,
  type DatasetShape,
  licenseKeyFor,
  machineCountFor,
  machineIdFor,
  maxMachinesFor,
  productFor,
  recordIdFor,
} from "./dataset.js";

type Row = Array<string | number | null>;

/** Who the seed's releases are published by, as the CLI would. */
const benchActor = { type: "cli", id: null, label: "bench", ip: null } as const;

const licenseColumns = `id license_key product_id status expires_at edition edition_name features
  max_machines active_machines created_at updated_at customer_name customer_email note`.split(
  /\s+/,
);
const activationColumns = `id license_id machine_id machine_name platform activated_at last_seen_at
  deactivated_at`.split(/\s+/);

/** The signed Windows entry of the seeded release 1.0.0, which the update-check scenario gets. */
const seededEntry = {
  platform: "WINDOWS",
  arch: "X64",
  downloadUrl:
    "https://github.com/example-org/example-app/releases/download/v1.0.0/app_x64-setup.msi",
  signature: `untrusted comment: signature from tauri secret key\n${"RUQ".repeat(40)}`,
  fileSize: 52_000_000,
  // electron-updater is offered only entries with a sha512 (64 bytes, base64).
  sha512: `${"A".repeat(85)}A==`,
} as const;

/** Rows per statement stay under SQLite's 32,766 bound parameters. */
const paramsPerStatement = 16_000;
const licensesPerTransaction = 50_000;

/** Multi-row INSERTs of `rows` into `table`, with bound parameters in `dialect`'s style. */
async function insertRows(
  db: Kysely<DB>,
  dialect: Dialect,
  table: string,
  columns: string[],
  rows: Row[],
): Promise<void> {
  const perStatement = Math.floor(paramsPerStatement / columns.length);
  for (let start = 0; start < rows.length; start += perStatement) {
    const batch = rows.slice(start, start + perStatement);
    let n = 0;
    const tuple = () =>
      `(${columns.map(() => (dialect === "sqlite" ? "?" : `$${++n}`)).join(",")})`;
    const text = `insert into ${table} (${columns.join(",")}) values ${batch.map(tuple).join(",")}`;
    await db.executeQuery(CompiledQuery.raw(text, batch.flat()));
  }
}

/**
 * Seeds products, the licenses of `shape` with their active machines (dataset.ts), and an API
 * key for publish, whose secret it returns. 1 M licenses take well under two minutes on SQLite.
 */
export async function seed(
  db: Kysely<DB>,
  dialect: Dialect,
  shape: DatasetShape,
  log: (line: string) => void,
): Promise<string> {
  const productIds = new Map<string, string>();
  for (const slug of benchProducts) {
    productIds.set(slug, (await createProduct(db, { slug, name: `Bench ${slug.slice(6)}` })).id);
  }
  if (dialect === "sqlite") {
    // A throwaway database: a large cache for the random-order key index, no fsync.
    await sql`pragma cache_size = -262144`.execute(db);
    await sql`pragma synchronous = off`.execute(db);
  }
  const now = Date.now();
  const started = Date.now();
  const total = shape.licenses + 2; // and the 1,000-machine and 2-machine licenses
  for (let start = 0; start < total; start += licensesPerTransaction) {
    const end = Math.min(start + licensesPerTransaction, total);
    const licenses: Row[] = [];
    const activations: Row[] = [];
    for (let i = start; i < end; i++) {
      const count = machineCountFor(i, shape);
      const licenseId = recordIdFor("lic", i);
      // What vendors keep on a license, so rows are as wide as real ones.
      licenses.push([
        licenseId,
        licenseKeyFor(i),
        productIds.get(productFor(i)) ?? null,
        "ACTIVE",
        i % 2 === 0 ? null : now + 365 * 24 * 3600 * 1000,
        "pro",
        "Professional",
        JSON.stringify(["sync", "export", "themes"]),
        maxMachinesFor(i, shape),
        count,
        now,
        now,
        `Customer ${i} GmbH`,
        `licensing+${i}@customer-${i % 997}.example.com`,
        i % 5 === 0 ? `Renewed by purchase order PO-${i}; volume discount agreed, see CRM.` : null,
      ]);
      for (let j = 0; j < count; j++) {
        const id = recordIdFor("act", i, j + 1);
        const machine = machineIdFor(i, j);
        activations.push([
          id,
          licenseId,
          machine,
          `Workstation ${j}`,
          "Windows 11",
          now,
          now,
          null,
        ]);
      }
    }
    await db.transaction().execute(async (trx) => {
      await insertRows(trx, dialect, "licenses", licenseColumns, licenses);
      await insertRows(trx, dialect, "activations", activationColumns, activations);
    });
    if (end % 200_000 === 0 || end === total) {
      log(`seeded ${end} licenses (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    }
  }
  // Hint bits now, not during the first measured turns. No ANALYZE: the service gathers the
  // statistics it needs at start, as it must on a database that autovacuum has not visited.
  if (dialect === "postgres") await sql`vacuum`.execute(db);
  await publishRelease(db, benchActor, await requireProduct(db, benchProducts[0]), {
    version: "1.0.0",
    channel: "STABLE",
    releaseNotes: "## 1.0.0\n- First release\n",
    entries: [seededEntry],
  });
  // update-check-rollout: a released 1.0.0 and a 1.1.0 rolling out to 10 % of machines.
  const rolloutProduct = await requireProduct(db, benchProducts[1]);
  for (const [version, rollout] of [
    ["1.0.0", null],
    ["1.1.0", { percent: 10 }],
  ] as const) {
    await publishRelease(db, benchActor, rolloutProduct, {
      version,
      channel: "STABLE",
      releaseNotes: `## ${version}\n- A release\n`,
      entries: [{ ...seededEntry, downloadUrl: seededEntry.downloadUrl.replace("1.0.0", version) }],
    });
    if (rollout) await setRollout(db, benchProducts[1], version, rollout);
  }
  // The appcast scenarios: 20 versions whose notes are the longest allowed, plain or the worst.
  for (const kind of ["plain", "worst"] as const) {
    const product = await createProduct(db, {
      slug: appcastProducts[kind],
      name: `Bench notes ${kind}`,
    });
    for (let v = 0; v < appcastVersions; v++) {
      await publishRelease(db, benchActor, product, {
        version: `1.${v}.0`,
        channel: "STABLE",
        releaseNotes: appcastNotes[kind],
        entries: [
          {
            ...seededEntry,
            platform: "MACOS",
            arch: "ARM64",
            downloadUrl: `https://dl.example.com/notes-${kind}-1.${v}.0.zip`,
          },
        ],
      });
    }
  }
  // webhooks:write: the activate-webhook scenario subscribes an endpoint for its turns.
  const key = await createApiKey(db, {
    name: "bench",
    scopes: ["releases:write", "webhooks:write"],
  });
  return key.key;
}
