import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { type Kysely, sql } from "kysely";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { openDatabase } from "../../src/db/database.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import type { DB } from "../../src/db/schema.js";
import { createLicense } from "../../src/domain/licenses/manage-licenses.js";
import { createProduct } from "../../src/domain/products/products.js";
import { createPgCluster, findPostgresBin, type PgCluster } from "../helpers/pg-cluster.js";
import { testEnvironment } from "../helpers/environment.js";

/**
 * The database failing under the service: PostgreSQL stopped, restarted under load, out of
 * connections or slow to come up at start (a private cluster started by this file, never the
 * machine's own), and SQLite out of space. What must hold: the process never dies, clients get
 * 503 DATABASE_UNAVAILABLE with Retry-After (the license endpoints keep their flag), /readyz
 * follows the database, faults are logged at a bounded rate, and the service recovers by itself.
 */

const unavailable = { error: "Service unavailable", code: "DATABASE_UNAVAILABLE" };

type Flag = "success" | "valid";

const flagOf: Record<string, Flag> = {
  "/api/license/activate": "success",
  "/api/license/validate": "valid",
  "/api/license/deactivate": "success",
};

interface Answer {
  path: string;
  status: number;
  retryAfter: string | null;
  body: unknown;
}

/** One request on loopback, bounded in time; a dropped connection or a timeout throws. */
async function send(baseUrl: string, path: string, body?: unknown): Promise<Answer> {
  const response = await fetch(`${baseUrl}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // kept as text: the assertion shows it
  }
  return {
    path,
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body: parsed,
  };
}

/** The 503 an unavailable database must give on `path`: exact body, flag kept, Retry-After. */
function expectUnavailable(answer: Answer): void {
  const flag = flagOf[answer.path];
  expect({ path: answer.path, status: answer.status, body: answer.body }).toEqual({
    path: answer.path,
    status: 503,
    body: flag === undefined ? unavailable : { ...unavailable, [flag]: false },
  });
  expect(answer.retryAfter).toMatch(/^[1-9]\d*$/);
}

function isUnavailable(answer: Answer): boolean {
  const flag = flagOf[answer.path];
  const body = flag === undefined ? unavailable : { ...unavailable, [flag]: false };
  return (
    answer.status === 503 &&
    answer.retryAfter !== null &&
    /^[1-9]\d*$/.test(answer.retryAfter) &&
    JSON.stringify(answer.body) === JSON.stringify(body)
  );
}

function isSuccess(answer: Answer): boolean {
  const flag = flagOf[answer.path];
  if (answer.status !== 200 || typeof answer.body !== "object" || answer.body === null)
    return false;
  return flag === undefined || (answer.body as Record<string, unknown>)[flag] === true;
}

/** Polls `probe` until it returns true, or fails with `what` after `ms` (or when it throws). */
async function until(
  what: string,
  probe: () => Promise<boolean> | boolean,
  ms: number,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await sleep(50);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** pino's JSON lines (anything else on the stream is kept as a line with msg = the text). */
function logLines(text: string): LogLine[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      try {
        return JSON.parse(line) as LogLine;
      } catch {
        return { level: 0, msg: line };
      }
    });
}

/** Creates the schema, a product "app" and `count` licenses; returns their keys. */
async function seed(url: string, count: number, maxMachines: number): Promise<string[]> {
  const database = await openDatabase(url);
  try {
    await migrateToLatest(database.db);
    await createProduct(database.db, { slug: "app", name: "App" });
    const keys: string[] = [];
    for (let i = 0; i < count; i++) {
      keys.push((await createLicense(database.db, { productSlug: "app", maxMachines })).licenseKey);
    }
    return keys;
  } finally {
    await database.close();
  }
}

/** Licenses whose slot counter disagrees with their active activation rows. */
async function inconsistentSlots(db: Kysely<DB>): Promise<unknown[]> {
  const { rows } = await sql<{ id: string; counter: number; active: number }>`
    select l.id, l.active_machines as counter,
      (select count(*) from activations a where a.license_id = l.id and a.deactivated_at is null) as active
    from licenses l`.execute(db);
  return rows.filter((r) => Number(r.counter) !== Number(r.active));
}

interface Service {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  alive(): boolean;
  /** Resolves with the base URL once the server listens; rejects if it exits first. */
  listening: Promise<string>;
}

const children: ChildProcess[] = [];

/**
 * The compiled service (dist/server.js, built by the global setup), as `npm start` runs it, with
 * rate limits off (the load here comes from one address) and a master key (PostgreSQL needs one).
 */
function spawnService(env: Record<string, string>): Service {
  const child = spawn(process.execPath, ["dist/server.js"], {
    env: testEnvironment({
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      RATE_LIMITS: "off",
      SHIPKEY_MASTER_KEY: "fedcba9876543210".repeat(4),
      ...env,
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
      if (match?.[1]) resolve(match[1]);
    });
    child.once("exit", (code, signal) =>
      reject(new Error(`server exited (${code ?? signal}):\n${stdout}\n${stderr}`)),
    );
  });
  listening.catch(() => {}); // observed by whoever awaits it
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    alive: () => child.exitCode === null && child.signalCode === null,
    listening,
  };
}

async function stopChildren(): Promise<void> {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await once(child, "exit");
    }
  }
}

/** Throws, with what the process wrote, if it is gone. */
function expectAlive(service: Service): true {
  if (!service.alive()) {
    throw new Error(
      `the service died (${service.child.exitCode ?? service.child.signalCode}):\n` +
        `${service.stdout().slice(-3000)}\n${service.stderr().slice(-3000)}`,
    );
  }
  return true;
}

/** What a process that survived its faults shows: alive, no crash, no 500, no stderr. */
function expectNoCrash(service: Service): void {
  expect(service.alive()).toBe(true);
  expect(service.stderr()).toBe("");
  const bad = logLines(service.stdout()).filter(
    (l) => l.level >= 50 && l.msg !== "database unavailable",
  );
  expect(bad).toEqual([]);
  expect(service.stdout()).not.toMatch(/uncaught|unhandled/i);
}

function unavailableLogLines(service: Service): LogLine[] {
  return logLines(service.stdout()).filter((l) => l.msg === "database unavailable");
}

const postgresBin = findPostgresBin();
const requirePostgres = process.env.REQUIRE_POSTGRES === "1";

describe.runIf(postgresBin !== undefined || requirePostgres)("database faults (postgres)", () => {
  let cluster: PgCluster;
  let databases = 0;
  const newDatabase = () => cluster.createDatabase(`shipkey_faults_${++databases}`);

  beforeAll(async () => {
    // Small, so that a test can take every connection (53300) with a handful of clients.
    cluster = await createPgCluster({ maxConnections: 16 });
    await cluster.start();
  });

  afterAll(async () => {
    await stopChildren();
    await cluster?.destroy();
  });

  beforeEach(async () => {
    if (!cluster.running()) await cluster.start();
  });

  afterEach(stopChildren);

  it("waits at start for a database that is not up yet, logging each retry, then serves", async () => {
    const url = await newDatabase();
    const [licenseKey] = await seed(url, 1, 5);
    await cluster.stop("fast");

    const service = spawnService({ DATABASE_URL: url, DATABASE_CONNECT_TIMEOUT: "20" });
    const retries = () =>
      logLines(service.stdout()).filter((l) => l.msg === "database not reachable yet; retrying");
    await until("two retry lines", () => expectAlive(service) && retries().length >= 2, 60_000);
    expect(retries()[0]).toMatchObject({ level: 40, attempt: 1 });
    expect(String(retries()[0]?.reason)).toMatch(/ECONNREFUSED|connect/);
    expect(service.alive()).toBe(true);
    expect(service.stdout()).not.toContain("Server listening");

    await cluster.start();
    const baseUrl = await service.listening;
    const ready = await send(baseUrl, "/readyz");
    expect([ready.status, ready.body]).toEqual([200, { status: "ready" }]);
    const activated = await send(baseUrl, "/api/license/activate", {
      licenseKey,
      machineId: "m-1",
      productSlug: "app",
    });
    expect(activated.status).toBe(200);
    expect(activated.body).toMatchObject({ success: true, activeMachines: 1 });
    expectNoCrash(service);
  });

  it.each(["immediate", "fast"] as const)(
    "a restart (-m %s) under activation load: never a crash, a 500 or a dropped connection; 503s, then recovery",
    async (mode) => {
      const workers = 20;
      const url = await newDatabase();
      const keys = await seed(url, workers, 100_000);
      const service = spawnService({ DATABASE_URL: url });
      const baseUrl = await service.listening;
      const startedAt = Date.now();

      const unexpected: unknown[] = [];
      const counts = { ok: 0, unavailable: 0 };
      const readyz: number[] = [];
      let stop = false;
      const record = (answer: Answer) => {
        if (isSuccess(answer)) counts.ok++;
        else if (isUnavailable(answer)) counts.unavailable++;
        else unexpected.push(answer);
        return isSuccess(answer);
      };
      const call = async (path: string, body?: unknown) => {
        try {
          return record(await send(baseUrl, path, body));
        } catch (err) {
          unexpected.push({ path, failed: String(err) });
          return false;
        }
      };
      const worker = async (w: number) => {
        const licenseKey = keys[w] as string;
        for (let i = 0; !stop; i++) {
          const machine = { licenseKey, machineId: `m-${w}-${i}`, productSlug: "app" };
          if (!(await call("/api/license/activate", machine))) continue;
          if (!(await call("/api/license/validate", machine))) continue;
          if (i % 3 === 0) await call("/api/license/deactivate", machine);
        }
      };
      const readiness = async () => {
        while (!stop) {
          const answer = await send(baseUrl, "/readyz").catch((err: unknown) => ({
            path: "/readyz",
            status: -1,
            retryAfter: null,
            body: String(err),
          }));
          readyz.push(answer.status);
          if (answer.status !== 200 && !isUnavailable(answer)) unexpected.push(answer);
          if (answer.status === 200) expect(answer.body).toEqual({ status: "ready" });
          await sleep(100);
        }
      };
      const load = Promise.all([
        ...Array.from({ length: workers }, (_, w) => worker(w)),
        readiness(),
      ]);
      let recoveredInMs: number;
      try {
        await until("load under way", () => expectAlive(service) && counts.ok >= 200, 60_000);
        const okBefore = counts.ok;
        await cluster.restart(mode);
        // Recovery by itself: requests succeed again soon after the database is back.
        const restartedAt = Date.now();
        await until(
          "successes after the restart",
          () => expectAlive(service) && counts.ok >= okBefore + 200,
          60_000,
        );
        recoveredInMs = Date.now() - restartedAt;
      } finally {
        stop = true;
        await load;
      }

      expect(unexpected).toEqual([]);
      expect(counts.unavailable).toBeGreaterThan(0); // the outage was really seen
      expect(readyz.filter((s) => s === 503).length).toBeGreaterThan(0);
      expect(recoveredInMs).toBeLessThan(60_000);
      // /readyz is 200 again once no request failed for a few seconds.
      await until(
        "/readyz 200 after recovery",
        async () => (await send(baseUrl, "/readyz")).status === 200,
        60_000,
      );

      // Nothing half-written: every slot counter equals its license's active activations.
      const check = await openDatabase(url);
      try {
        expect(await inconsistentSlots(check.db)).toEqual([]);
      } finally {
        await check.close();
      }

      expectNoCrash(service);
      // Bounded logging: at most one line per cause per 10 s, however many requests failed.
      const lines = unavailableLogLines(service);
      const windows = Math.ceil((Date.now() - startedAt) / 10_000);
      expect(lines.length).toBeGreaterThanOrEqual(1);
      expect(lines.length).toBeLessThan(counts.unavailable);
      for (const cause of new Set(lines.map((l) => l.code))) {
        expect(lines.filter((l) => l.code === cause).length).toBeLessThanOrEqual(windows + 1);
      }
    },
  );

  it("out of connections (53300): 503 with Retry-After and the flag on the license endpoints, /readyz 503, then recovery", async () => {
    const url = await newDatabase();
    const [licenseKey] = await seed(url, 1, 10);
    const service = spawnService({ DATABASE_URL: url });
    const baseUrl = await service.listening;
    const machine = (id: string) => ({ licenseKey, machineId: id, productSlug: "app" });
    expect((await send(baseUrl, "/api/license/activate", machine("m-0"))).status).toBe(200);

    const held: pg.Client[] = [];
    const admin = new pg.Client({ connectionString: cluster.url() });
    await admin.connect();
    held.push(admin);
    try {
      const dbName = new URL(url).pathname.slice(1);
      const sessions = async () =>
        Number(
          (
            await admin.query<{ n: string }>(
              "select count(*) as n from pg_stat_activity where datname = $1",
              [dbName],
            )
          ).rows[0]?.n,
        );
      // Close the service's sessions and take the slots they free, until the service holds none
      // and no slot is left: a background job of the service may reconnect in between.
      let refused: unknown;
      for (let round = 0; round < 20; round++) {
        await admin.query(
          "select pg_terminate_backend(pid) from pg_stat_activity where datname = $1",
          [dbName],
        );
        await until("the service's sessions gone", async () => (await sessions()) === 0, 60_000);
        refused = undefined;
        for (let i = 0; i < 50 && refused === undefined; i++) {
          const client = new pg.Client({ connectionString: cluster.url() });
          client.on("error", () => {});
          try {
            await client.connect();
            held.push(client);
          } catch (err) {
            refused = err;
          }
        }
        if ((await sessions()) === 0) break;
      }
      expect(await sessions()).toBe(0);
      expect((refused as { code?: string }).code).toBe("53300");

      // A background job of the service (flushes, webhook delivery) may have logged a cause
      // while the slots were taken: 53300 itself, or its own terminated connection, as 57P01 or
      // as the driver's error without a SQLSTATE ("Connection terminated unexpectedly", "Client
      // has encountered a connection error and is not queryable"), whichever it noticed first.
      const request = (l: LogLine) => /^[A-Z]+ \//.test(String(l.during));
      const terminated = (l: LogLine) =>
        l.code === "57P01" || (l.code === undefined && !request(l));
      const logged = () => unavailableLogLines(service).filter((l) => !terminated(l));
      const loggedBefore = logged().length;
      const answers = await Promise.all([
        send(baseUrl, "/api/license/activate", machine("m-1")),
        send(baseUrl, "/api/license/validate", machine("m-0")),
        send(baseUrl, "/api/license/deactivate", machine("m-0")),
        ...Array.from({ length: 20 }, () => send(baseUrl, "/api/license/validate", machine("m-0"))),
      ]);
      for (const answer of answers) expectUnavailable(answer);
      expectUnavailable(await send(baseUrl, "/readyz"));

      // 23 failures, at most one more log line: the cause is logged once per 10 s, and it is
      // 53300.
      await until("53300 logged", async () => logged().some((l) => l.code === "53300"), 10_000);
      const lines = logged();
      expect(lines.length - loggedBefore, JSON.stringify(lines)).toBeLessThanOrEqual(1);
      for (const line of lines) {
        expect(line, JSON.stringify(lines)).toMatchObject({ level: 50, code: "53300" });
      }

      // Connections free again: the service recovers by itself.
      for (const client of held.splice(1)) await client.end();
      await until(
        "validate 200 after connections are free",
        async () => (await send(baseUrl, "/api/license/validate", machine("m-0"))).status === 200,
        60_000,
      );
      const activated = await send(baseUrl, "/api/license/activate", machine("m-1"));
      expect([activated.status, activated.body]).toMatchObject([
        200,
        { success: true, activeMachines: 2 },
      ]);
      const deactivated = await send(baseUrl, "/api/license/deactivate", machine("m-0"));
      expect([deactivated.status, deactivated.body]).toMatchObject([200, { success: true }]);
      await until(
        "/readyz 200",
        async () => (await send(baseUrl, "/readyz")).status === 200,
        60_000,
      );
      expectNoCrash(service);
    } finally {
      for (const client of held) await client.end().catch(() => {});
    }
  });

  it("DATABASE_POOL_SIZE=1: one connection, and 50 concurrent validates and activates queue and all succeed", async () => {
    const url = await newDatabase();
    const [licenseKey] = await seed(url, 1, 100);
    const service = spawnService({ DATABASE_URL: url, DATABASE_POOL_SIZE: "1" });
    const baseUrl = await service.listening;
    const machine = (id: string) => ({ licenseKey, machineId: id, productSlug: "app" });
    expect((await send(baseUrl, "/api/license/activate", machine("m-0"))).status).toBe(200);

    const admin = new pg.Client({ connectionString: cluster.url() });
    await admin.connect();
    try {
      const dbName = new URL(url).pathname.slice(1);
      let sampling = true;
      let most = 0;
      const sampler = (async () => {
        while (sampling) {
          const { rows } = await admin.query<{ n: string }>(
            "select count(*) as n from pg_stat_activity where datname = $1",
            [dbName],
          );
          most = Math.max(most, Number(rows[0]?.n));
          await sleep(5);
        }
      })();
      const answers = await Promise.all([
        ...Array.from({ length: 50 }, () => send(baseUrl, "/api/license/validate", machine("m-0"))),
        ...Array.from({ length: 50 }, (_, i) =>
          send(baseUrl, "/api/license/activate", machine(`m-${i + 1}`)),
        ),
      ]);
      sampling = false;
      await sampler;
      expect(answers.filter((a) => !isSuccess(a))).toEqual([]);
      expect(most).toBe(1);
    } finally {
      await admin.end();
    }
    expectNoCrash(service);
    expect(unavailableLogLines(service)).toEqual([]);
  });
});

describe("database faults (sqlite)", () => {
  it("a full database: activate 503 with the flag and Retry-After, nothing half-written, /readyz 503, then recovery", async () => {
    const dir = mkdtempSync(join(tmpdir(), "shipkey-full-"));
    const database = await openDatabase(`sqlite:${join(dir, "shipkey.db")}`);
    let logged = "";
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logged += chunk.toString();
        done();
      },
    });
    const app = await buildApp({ database, logger: { level: "info", stream } });
    try {
      const db = database.db;
      await migrateToLatest(db);
      await createProduct(db, { slug: "app", name: "App" });
      const { licenseKey } = await createLicense(db, { productSlug: "app", maxMachines: 100_000 });
      const activate = async (machineId: string): Promise<Answer> => {
        const response = await app.inject({
          method: "POST",
          url: "/api/license/activate",
          headers: { "content-type": "application/json" },
          payload: JSON.stringify({ licenseKey, machineId, productSlug: "app" }),
        });
        const retryAfter = response.headers["retry-after"];
        return {
          path: "/api/license/activate",
          status: response.statusCode,
          retryAfter: retryAfter === undefined ? null : String(retryAfter),
          body: response.json(),
        };
      };
      const readyz = async () => {
        const response = await app.inject({ method: "GET", url: "/readyz" });
        return {
          path: "/readyz",
          status: response.statusCode,
          retryAfter: (response.headers["retry-after"] as string | undefined) ?? null,
          body: response.json() as unknown,
        };
      };
      expect((await readyz()).status).toBe(200);

      // The one connection the app uses may grow the file by two pages more, no further.
      const { rows } = await sql<{ page_count: number }>`pragma page_count`.execute(db);
      const pages = Number(rows[0]?.page_count);
      await sql.raw(`pragma max_page_count = ${pages + 2}`).execute(db);

      let activated = 0;
      let failure: Answer | undefined;
      for (let i = 0; i < 10_000 && failure === undefined; i++) {
        const answer = await activate(`machine-with-a-long-enough-identifier-${i}`);
        if (answer.status === 200) activated++;
        else failure = answer;
      }
      expect(activated).toBeGreaterThan(0);
      if (failure === undefined) throw new Error("the capped database never filled up");
      expectUnavailable(failure);
      // Still full, still 503 (no transaction left open behind the failure).
      expectUnavailable(await activate("one-more"));

      // Nothing half-written: the counter counts exactly the activations that were answered 200.
      expect(await inconsistentSlots(db)).toEqual([]);
      const license = await db
        .selectFrom("licenses")
        .select("active_machines")
        .executeTakeFirstOrThrow();
      expect(license.active_machines).toBe(activated);

      expectUnavailable(await readyz());

      // Space again: the next write succeeds, and /readyz follows within its window.
      await sql.raw("pragma max_page_count = 1073741823").execute(db);
      const after = await activate("after-recovery");
      expect([after.status, after.body]).toMatchObject([
        200,
        { success: true, activeMachines: activated + 1 },
      ]);
      await until(
        "/readyz 200 after recovery",
        async () => (await readyz()).status === 200,
        60_000,
      );
      expect((await readyz()).body).toEqual({ status: "ready" });

      const lines = logLines(logged).filter((l) => l.msg === "database unavailable");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ level: 50, code: "SQLITE_FULL" });
      expect(
        logLines(logged).filter((l) => l.level >= 50 && l.msg !== "database unavailable"),
      ).toEqual([]);
    } finally {
      await app.close();
      await database.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
