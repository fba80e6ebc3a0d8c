import { execFile, execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";

const run = promisify(execFile);

/**
 * A private, throwaway PostgreSQL cluster for tests that stop, restart or starve the database:
 * its own data directory in a temp dir, its own port on 127.0.0.1, trust authentication for the
 * `postgres` role. Never touches any other cluster on the machine.
 */
export interface PgCluster {
  port: number;
  dir: string;
  /** `postgres://postgres@127.0.0.1:<port>/<database>`. */
  url(database?: string): string;
  /** Starts the server and waits until it accepts connections. */
  start(): Promise<void>;
  /** Stops the server: `immediate` kills the backends at once (like a crash), `fast` rolls back. */
  stop(mode?: "immediate" | "fast"): Promise<void>;
  /** `pg_ctl restart` in the given mode, waiting until the server accepts connections again. */
  restart(mode?: "immediate" | "fast"): Promise<void>;
  running(): boolean;
  createDatabase(name: string): Promise<string>;
  /** Stops the server (immediate) if it runs and deletes the data directory. */
  destroy(): Promise<void>;
}

/** The bin directory of the highest installed PostgreSQL version, or undefined. */
export function findPostgresBin(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter(
      (v) =>
        existsSync(join(root, v, "bin", "initdb")) && existsSync(join(root, v, "bin", "pg_ctl")),
    )
    .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], "bin");
}

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

// initdb and postgres refuse to run as root: run them as the postgres OS user then.
const asRoot = process.getuid?.() === 0;

function command(bin: string, tool: string, args: string[]): [string, string[]] {
  const path = join(bin, tool);
  return asRoot ? ["runuser", ["-u", "postgres", "--", path, ...args]] : [path, args];
}

/** Creates (initdb) a new cluster; it is not started. */
export async function createPgCluster(options: { maxConnections: number }): Promise<PgCluster> {
  const bin = findPostgresBin();
  if (bin === undefined) throw new Error("no PostgreSQL binaries under /usr/lib/postgresql");
  const dir = mkdtempSync(join(tmpdir(), "shipkey-pg-"));
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, "data");
  const logFile = join(dir, "postgres.log");
  const port = await freePort();
  const pgCtl = async (args: string[]) => {
    const [file, argv] = command(bin, "pg_ctl", ["-D", data, ...args]);
    try {
      await run(file, argv, { timeout: 60_000 });
    } catch (err) {
      const log = existsSync(logFile) ? readFileSync(logFile, "utf8").slice(-4000) : "";
      throw new Error(`pg_ctl ${args.join(" ")} failed: ${String(err)}\n${log}`, { cause: err });
    }
  };
  const serverOptions = [
    `-k ${dir}`,
    "-c listen_addresses=127.0.0.1",
    `-p ${port}`,
    `-c max_connections=${options.maxConnections}`,
    // No fsync: a restart kills only processes, never the OS, so what reached the OS survives.
    // Commits stay synchronous: an immediate restart must not lose an acknowledged write.
    "-c fsync=off",
    "-c full_page_writes=off",
  ].join(" ");
  {
    const [file, argv] = command(bin, "initdb", [
      "-D",
      data,
      "-A",
      "trust",
      "-U",
      "postgres",
      "--no-sync",
      "-E",
      "UTF8",
      "--locale=C",
    ]);
    await run(file, argv, { timeout: 60_000 });
  }

  let running = false;
  const cluster: PgCluster = {
    port,
    dir,
    url: (database = "postgres") => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async start() {
      await pgCtl(["-l", logFile, "-w", "-t", "60", "-o", serverOptions, "start"]);
      running = true;
    },
    async stop(mode = "fast") {
      await pgCtl(["-m", mode, "-w", "-t", "60", "stop"]);
      running = false;
    },
    async restart(mode = "fast") {
      await pgCtl(["-l", logFile, "-m", mode, "-w", "-t", "60", "-o", serverOptions, "restart"]);
      running = true;
    },
    running: () => running,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: cluster.url() });
      await client.connect();
      try {
        await client.query(`create database ${name}`);
      } finally {
        await client.end();
      }
      return cluster.url(name);
    },
    async destroy() {
      if (existsSync(join(data, "postmaster.pid"))) {
        await pgCtl(["-m", "immediate", "-w", "-t", "60", "stop"]).catch(() => {});
      }
      running = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}
