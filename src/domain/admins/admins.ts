import { inTransaction } from "../../db/transaction.js";
import { createHash, randomBytes } from "node:crypto";
import { hash, verify } from "@node-rs/argon2";
import type { Kysely, Transaction } from "kysely";
import type { DB } from "../../db/schema.js";
import { limits } from "../../contracts/vocabulary.js";
import { errorsOf, ShipkeyError, throwFirst } from "../../errors.js";
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
  throwFirst(newAdminErrors(input));
  const email = normalizeEmail(input.email);
  return {
    id: newId("adm"),
    email,
    password_hash: await preparePassword(input.password),
    created_at: now,
  };
}

/** The refusals of a new admin's email and password, in the order createAdmin reports them. */
export function newAdminErrors(input: { email: string; password: string }): ShipkeyError[] {
  return errorsOf([
    () => {
      const email = normalizeEmail(input.email);
      // \s covers U+2028/U+2029 and \p{Cc} every other control character.
      if (!/^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+$/u.test(email) || email.length > limits.email) {
        throw new ShipkeyError("INVALID_FIELD_VALUE", "email must be an email address", {
          field: "email",
        });
      }
    },
    () => assertPasswordLength(input.password),
  ]);
}

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

/** The argon2id hash of an acceptable password (checked for length first). */
export async function preparePassword(password: string): Promise<string> {
  assertPasswordLength(password);
  return hashPassword(password);
}

function assertPasswordLength(password: string): void {
  if (password.length < minPasswordLength) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `password must be at least ${minPasswordLength} characters`,
      { field: "password" },
    );
  }
  if (password.length > limits.password) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `password must be at most ${limits.password} characters`,
      { field: "password" },
    );
  }
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
    throw new ShipkeyError("INVALID_FIELD_VALUE", `an admin with email ${email} exists`, {
      field: "email",
    });
  return { id: row.id, email, createdAt: toIso(now) };
}

/** Every admin, oldest first. */
export async function listAdmins(db: Kysely<DB>): Promise<AdminView[]> {
  const rows = await db
    .selectFrom("admins")
    .select(["id", "email", "created_at"])
    .orderBy("created_at")
    .orderBy("email")
    .execute();
  return rows.map((row) => ({ id: row.id, email: row.email, createdAt: toIso(row.created_at) }));
}

/** Sets an admin's password (hashed beforehand by preparePassword) and ends their sessions. */
export async function setAdminPassword(
  trx: Transaction<DB>,
  email: string,
  passwordHash: string,
): Promise<AdminView> {
  const admin = await trx
    .updateTable("admins")
    .set({ password_hash: passwordHash })
    .where("email", "=", normalizeEmail(email))
    .returning(["id", "email", "created_at"])
    .executeTakeFirst();
  if (!admin) throw adminNotFound(email);
  await trx.deleteFrom("admin_sessions").where("admin_id", "=", admin.id).execute();
  return { id: admin.id, email: admin.email, createdAt: toIso(admin.created_at) };
}

/**
 * Removes an admin and their sessions, unless they are the last one (409 LAST_ADMIN). Every admin
 * row is locked first (a no-op update) and counted by that same statement, so of two concurrent
 * removals the second waits for the first to commit and then counts what is left: PostgreSQL
 * makes it wait on the locked rows, SQLite runs write transactions one at a time.
 */
export async function removeAdmin(trx: Transaction<DB>, email: string): Promise<AdminView> {
  const locked = await trx
    .updateTable("admins")
    .set((eb) => ({ created_at: eb.ref("created_at") }))
    .executeTakeFirst();
  const admin = await trx
    .selectFrom("admins")
    .select(["id", "email", "created_at"])
    .where("email", "=", normalizeEmail(email))
    .executeTakeFirst();
  if (!admin) throw adminNotFound(email);
  if (Number(locked.numUpdatedRows) <= 1) {
    throw new ShipkeyError("LAST_ADMIN", "the last admin cannot be removed");
  }
  await trx.deleteFrom("admin_sessions").where("admin_id", "=", admin.id).execute();
  await trx.deleteFrom("admins").where("id", "=", admin.id).execute();
  return { id: admin.id, email: admin.email, createdAt: toIso(admin.created_at) };
}

const adminNotFound = (email: string) =>
  new ShipkeyError("ADMIN_NOT_FOUND", `no admin with email ${normalizeEmail(email)}`);

export async function countAdmins(db: Kysely<DB>): Promise<number> {
  const row = await db
    .selectFrom("admins")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * The admin for these credentials (or null), and whether the email names an admin at all (for
 * the sign-in throttle; never shown to the client). Runs one argon2 verification whatever happens.
 * `verifiedHash` is the password hash the password was checked against: createSession makes the
 * session only while the admin still has it.
 */
export async function verifySignIn(
  db: Kysely<DB>,
  email: string,
  password: string,
): Promise<{ admin: AdminView | null; accountExists: boolean; verifiedHash: string | null }> {
  const normalized = normalizeEmail(email);
  const admin =
    normalized.length > limits.email || password.length > limits.password
      ? undefined
      : await db
          .selectFrom("admins")
          .selectAll()
          .where("email", "=", normalized)
          .executeTakeFirst();
  dummyHash ??= hashPassword(randomBytes(16).toString("hex"));
  const stored = admin?.password_hash ?? (await dummyHash);
  const ok = await verify(stored, password.slice(0, limits.password)).catch(() => false);
  if (!admin || !ok) {
    return { admin: null, accountExists: admin !== undefined, verifiedHash: null };
  }
  return {
    admin: { id: admin.id, email: admin.email, createdAt: toIso(admin.created_at) },
    accountExists: true,
    verifiedHash: admin.password_hash,
  };
}

export const sessionLifetimeMs = 12 * 60 * 60 * 1000;

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

export interface Session {
  admin: AdminView;
  csrfToken: string;
  expiresAt: number;
}

/**
 * A new session; returns the token for the cookie (only its hash is stored). Throws
 * ADMIN_NOT_FOUND when the admin is gone, or, given `verifiedHash`, when its password changed
 * since the sign-in checked it: a sign-in racing a removal or a password reset gets no session.
 */
export async function createSession(
  db: Kysely<DB>,
  adminId: string,
  now = Date.now(),
  verifiedHash?: string,
): Promise<{ token: string; csrfToken: string; expiresAt: number }> {
  const token = randomBytes(32).toString("base64url");
  const csrfToken = randomBytes(32).toString("base64url");
  const expiresAt = now + sessionLifetimeMs;
  await inTransaction(db, async (trx) => {
    // A write that changes nothing, to lock the admin's row until the session is stored: a
    // removal or a password reset waits for it, or it for them (and then finds no row).
    let admin = trx
      .updateTable("admins")
      .set((eb) => ({ password_hash: eb.ref("password_hash") }))
      .where("id", "=", adminId);
    if (verifiedHash !== undefined) admin = admin.where("password_hash", "=", verifiedHash);
    const { numUpdatedRows } = await admin.executeTakeFirst();
    if (numUpdatedRows === 0n) {
      throw new ShipkeyError("ADMIN_NOT_FOUND", "the admin was removed or its password changed");
    }
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
