import { inTransaction } from "../../db/transaction.js";
import { createHash, randomBytes } from "node:crypto";
import { hash, verify } from "@node-rs/argon2";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { newId } from "../../lib/ids.js";
import { toIso } from "../../lib/time.js";

export interface AdminView {
  id: string;
  email: string;
  createdAt: string;
}

/** argon2id with the library's defaults (OWASP-recommended memory/time cost). */
const hashPassword = (password: string) => hash(password, { algorithm: 2 });

// Verified when the email is unknown, so a failed sign-in costs the same either way.
let dummyHash: Promise<string> | null = null;

export const minPasswordLength = 12;

export async function createAdmin(
  db: Kysely<DB>,
  input: { email: string; password: string },
  now = Date.now(),
): Promise<AdminView> {
  return insertAdmin(db, await prepareAdmin(input, now));
}

/** A new admin row, checked and with its password hashed: all of createAdmin but the insert. */
export async function prepareAdmin(
  input: { email: string; password: string },
  now = Date.now(),
): Promise<DB["admins"]> {
  const email = input.email.trim().toLowerCase();
  // \s covers U+2028/U+2029 and \p{Cc} every other control character.
  if (!/^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+$/u.test(email) || email.length > 255) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", "email must be an email address");
  }
  if (input.password.length < minPasswordLength) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `password must be at least ${minPasswordLength} characters`,
    );
  }
  if (input.password.length > 1024) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", "password must be at most 1024 characters");
  }
  return {
    id: newId("adm"),
    email,
    password_hash: await hashPassword(input.password),
    created_at: now,
  };
}

/** Inserts a prepared admin; an email already taken is a 400. */
export async function insertAdmin(db: Kysely<DB>, row: DB["admins"]): Promise<AdminView> {
  const { email, created_at: now } = row;
  const inserted = await db
    .insertInto("admins")
    .values(row)
    .onConflict((oc) => oc.column("email").doNothing())
    .returning("id")
    .executeTakeFirst();
  if (!inserted)
    throw new ShipkeyError("INVALID_FIELD_VALUE", `an admin with email ${email} exists`);
  return { id: row.id, email, createdAt: toIso(now) };
}

export async function countAdmins(db: Kysely<DB>): Promise<number> {
  const row = await db
    .selectFrom("admins")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The admin for these credentials, or null. Runs one argon2 verification whatever happens. */
export async function checkCredentials(
  db: Kysely<DB>,
  email: string,
  password: string,
): Promise<AdminView | null> {
  const normalized = email.trim().toLowerCase();
  const admin =
    normalized.length > 255 || password.length > 1024
      ? undefined
      : await db
          .selectFrom("admins")
          .selectAll()
          .where("email", "=", normalized)
          .executeTakeFirst();
  dummyHash ??= hashPassword(randomBytes(16).toString("hex"));
  const stored = admin?.password_hash ?? (await dummyHash);
  const ok = await verify(stored, password.slice(0, 1024)).catch(() => false);
  if (!admin || !ok) return null;
  return { id: admin.id, email: admin.email, createdAt: toIso(admin.created_at) };
}

export const sessionLifetimeMs = 12 * 60 * 60 * 1000;

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

export interface Session {
  admin: AdminView;
  csrfToken: string;
  expiresAt: number;
}

/** A new session; returns the token for the cookie (only its hash is stored). */
export async function createSession(
  db: Kysely<DB>,
  adminId: string,
  now = Date.now(),
): Promise<{ token: string; csrfToken: string; expiresAt: number }> {
  const token = randomBytes(32).toString("base64url");
  const csrfToken = randomBytes(32).toString("base64url");
  const expiresAt = now + sessionLifetimeMs;
  await inTransaction(db, async (trx) => {
    await trx
      .insertInto("admin_sessions")
      .values({
        id_hash: sha256(token),
        admin_id: adminId,
        csrf_token: csrfToken,
        created_at: now,
        expires_at: expiresAt,
      })
      .execute();
    // Expired sessions are cleared as new ones are made.
    await trx.deleteFrom("admin_sessions").where("expires_at", "<=", now).execute();
  });
  return { token, csrfToken, expiresAt };
}

export async function findSession(
  db: Kysely<DB>,
  token: string,
  now = Date.now(),
): Promise<Session | null> {
  if (token.length > 100) return null;
  const row = await db
    .selectFrom("admin_sessions")
    .innerJoin("admins", "admins.id", "admin_sessions.admin_id")
    .select([
      "admins.id",
      "admins.email",
      "admins.created_at",
      "admin_sessions.csrf_token",
      "admin_sessions.expires_at",
    ])
    .where("admin_sessions.id_hash", "=", sha256(token))
    .where("admin_sessions.expires_at", ">", now)
    .executeTakeFirst();
  if (!row) return null;
  return {
    admin: { id: row.id, email: row.email, createdAt: toIso(row.created_at) },
    csrfToken: row.csrf_token,
    expiresAt: row.expires_at,
  };
}

export async function deleteSession(db: Kysely<DB>, token: string): Promise<void> {
  await db.deleteFrom("admin_sessions").where("id_hash", "=", sha256(token)).execute();
}
