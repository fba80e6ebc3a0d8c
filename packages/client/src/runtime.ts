import { ShipkeyError } from "./errors.js";

/**
 * What detectTamperedRuntime reads: this process's own by default (tests give their own).
 */
export interface RuntimeSources {
  /** The environment (process.env). */
  env: Record<string, string | undefined>;
  /** The options Node was started with (process.execArgv; NODE_OPTIONS is not in it). */
  execArgv: readonly string[];
  /** process.versions.electron: set under Electron, also when it runs as plain Node. */
  electron: string | undefined;
  /** process.type under Electron ("browser" in the main process); undefined when it runs as Node. */
  processType: string | undefined;
  /** The URL of an open inspector (node:inspector's url()), undefined when none is open. */
  inspectorUrl: () => Promise<string | undefined>;
}

/**
 * Node's options that run other code in the process before or beside the app (a preload, a
 * loader hook) or open it to a debugger, which can then change any function, the SDK's included.
 */
const injectingOptions = new Set([
  "-r",
  "--require",
  "--import",
  "--loader",
  "--experimental-loader",
  "--inspect",
  "--inspect-brk",
  "--inspect-wait",
]);

function injectingOptionsIn(args: readonly string[]): string[] {
  const found = args
    .map((arg) => arg.split("=", 1)[0] ?? "")
    .filter((name) => injectingOptions.has(name));
  return [...new Set(found)];
}

function processSources(): RuntimeSources {
  const electronProcess = process as NodeJS.Process & { type?: string };
  return {
    env: process.env,
    execArgv: process.execArgv,
    electron: process.versions.electron,
    processType: electronProcess.type,
    inspectorUrl: async () => {
      try {
        const inspector = await import("node:inspector");
        return inspector.url();
      } catch {
        return undefined; // a Node built without the inspector: none can be open
      }
    },
  };
}

/**
 * The signs, visible from inside the process, that code other than the app's may run in it and
 * replace the SDK's checks: NODE_OPTIONS or Node's own options with a preload (`--require`,
 * `-r`, `--import`, `--loader`, `--experimental-loader`) or a debugger (`--inspect*`), Electron
 * running as plain Node (ELECTRON_RUN_AS_NODE, no `process.type`), an open inspector. Each sign
 * is one short phrase ("NODE_OPTIONS --require"); none: []. Only what is cheap and reliable to
 * see: code that ran first can hide all of it, so this is a speed bump, never a guarantee
 * (docs/client.md, "Injected code").
 */
export async function detectTamperedRuntime(
  sources: Partial<RuntimeSources> = {},
): Promise<string[]> {
  const { env, execArgv, electron, processType, inspectorUrl } = {
    ...processSources(),
    ...sources,
  };
  const signs: string[] = [];
  const nodeOptions = (env.NODE_OPTIONS ?? "").split(/\s+/).filter((word) => word !== "");
  for (const option of injectingOptionsIn(nodeOptions)) signs.push(`NODE_OPTIONS ${option}`);
  for (const option of injectingOptionsIn(execArgv)) signs.push(`Node started with ${option}`);
  if (electron !== undefined) {
    if (env.ELECTRON_RUN_AS_NODE !== undefined) signs.push("ELECTRON_RUN_AS_NODE");
    else if (processType === undefined) signs.push("Electron running as Node");
  }
  const url = await inspectorUrl();
  if (url !== undefined) signs.push("an inspector is open");
  return signs;
}

/** TAMPERED_RUNTIME when the process shows signs of injected code (refuseTamperedRuntime). */
export async function refuseTamperedRuntime(): Promise<void> {
  const signs = await detectTamperedRuntime();
  if (signs.length === 0) return;
  throw new ShipkeyError(
    "TAMPERED_RUNTIME",
    `Other code may run inside this app (${signs.join(", ")}): start it without that to use the license`,
  );
}
