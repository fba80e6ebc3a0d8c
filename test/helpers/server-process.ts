import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { testEnvironment } from "./environment.js";

/**
 * The compiled service (built by the global setup), run exactly as `npm start` runs it, with the
 * test's variables over testEnvironment(): none of the shell's configuration reaches it.
 */
export interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
  output(): string;
}

/**
 * PostgreSQL needs SHIPKEY_MASTER_KEY; the processes of a test share this one unless the test
 * sets its own (or "" for none). SQLite keeps its key file beside the database, as in production.
 */
const testMasterKey = "0123456789abcdef".repeat(4);
const withMasterKey = (env: Record<string, string>) =>
  env.DATABASE_URL?.startsWith("postgres") && env.SHIPKEY_MASTER_KEY === undefined
    ? { ...env, SHIPKEY_MASTER_KEY: testMasterKey }
    : env;

export async function startServer(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, ["dist/server.js"], {
    env: testEnvironment({
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      ...withMasterKey(env),
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL"); // not left running when the test gives up on it
      reject(new Error(`server did not start:\n${output}`));
    }, 120_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output}`));
    });
  });
  return { child, baseUrl, output: () => output };
}

type ExitResult = { code: number | null; stderr: string };

/** Runs the server with `env` until it exits. */
export function runServerToExit(env: Record<string, string>): Promise<ExitResult> {
  return runToExit(["dist/server.js"], env);
}

/** Runs the CLI (bin/shipkey.js) with `env` until it exits. */
export function runCliToExit(args: string[], env: Record<string, string>): Promise<ExitResult> {
  return runToExit(["bin/shipkey.js", ...args], env);
}

async function runToExit(args: string[], env: Record<string, string>): Promise<ExitResult> {
  const child = spawn(process.execPath, args, {
    env: testEnvironment({ PORT: "0", HOST: "127.0.0.1", ...withMasterKey(env) }),
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, stderr };
}

export async function postJson(
  baseUrl: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}
