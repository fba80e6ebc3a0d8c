import inspector from "node:inspector";
import { afterEach, describe, expect, it } from "vitest";
import {
  detectTamperedRuntime,
  MemoryStorage,
  type RuntimeSources,
  ShipkeyClient,
  ShipkeyError,
} from "../../packages/client/src/index.js";
import { referenceServer, signingKey } from "../helpers/reference-signer.js";

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A plain Node process with nothing injected, as vitest's worker is started. */
const clean: RuntimeSources = {
  env: {},
  execArgv: ["--conditions", "node"],
  electron: undefined,
  processType: undefined,
  inspectorUrl: async () => undefined,
};

/** Sets this process's variables for the test (undefined: unset), restored after it. */
function setEnv(variables: Record<string, string | undefined>): void {
  for (const [name, value] of Object.entries(variables)) {
    const saved = process.env[name];
    cleanups.push(() => {
      if (saved === undefined) Reflect.deleteProperty(process.env, name);
      else process.env[name] = saved;
    });
    if (value === undefined) Reflect.deleteProperty(process.env, name);
    else process.env[name] = value;
  }
}

describe("detectTamperedRuntime", () => {
  it("finds nothing in a process started without a preload or a debugger", async () => {
    expect(await detectTamperedRuntime(clean)).toEqual([]);
    const tuned = { NODE_OPTIONS: "--max-old-space-size=4096 --enable-source-maps" };
    expect(await detectTamperedRuntime({ ...clean, env: tuned })).toEqual([]);
  });

  it.each([
    ["--require ./patch.js", "--require"],
    ['-r "/tmp/with space/patch.js"', "-r"],
    ["--import=./patch.mjs", "--import"],
    ["--loader ./hooks.mjs", "--loader"],
    ["--experimental-loader=./hooks.mjs", "--experimental-loader"],
    ["--inspect", "--inspect"],
    ["--inspect-brk=0", "--inspect-brk"],
    ["--trace-warnings --inspect-wait", "--inspect-wait"],
  ])("NODE_OPTIONS=%s", async (value, option) => {
    const signs = await detectTamperedRuntime({ ...clean, env: { NODE_OPTIONS: value } });
    expect(signs).toEqual([`NODE_OPTIONS ${option}`]);
  });

  it("Node's own options: --inspect, -r with its module, --import", async () => {
    const execArgv = ["--inspect=9229", "-r", "./patch.js", "--import=./patch.mjs"];
    expect(await detectTamperedRuntime({ ...clean, execArgv })).toEqual([
      "Node started with --inspect",
      "Node started with -r",
      "Node started with --import",
    ]);
  });

  it("Electron running as Node: ELECTRON_RUN_AS_NODE, or no process.type; not the main process", async () => {
    const electron = { ...clean, electron: "37.2.0", processType: "browser" };
    expect(await detectTamperedRuntime(electron)).toEqual([]);
    expect(
      await detectTamperedRuntime({ ...electron, env: { ELECTRON_RUN_AS_NODE: "1" } }),
    ).toEqual(["ELECTRON_RUN_AS_NODE"]);
    expect(await detectTamperedRuntime({ ...electron, processType: undefined })).toEqual([
      "Electron running as Node",
    ]);
    // Outside Electron the variable does nothing.
    expect(await detectTamperedRuntime({ ...clean, env: { ELECTRON_RUN_AS_NODE: "1" } })).toEqual(
      [],
    );
  });

  it("an open inspector (one a debugger attached to, or opened by SIGUSR1)", async () => {
    const open = { ...clean, inspectorUrl: async () => "ws://127.0.0.1:9229/0f2c" };
    expect(await detectTamperedRuntime(open)).toEqual(["an inspector is open"]);
  });

  it("reads this process by default: its NODE_OPTIONS and its inspector", async () => {
    setEnv({ NODE_OPTIONS: "", ELECTRON_RUN_AS_NODE: undefined });
    expect(await detectTamperedRuntime()).toEqual([]);
    setEnv({ NODE_OPTIONS: "--require ./patch.js" });
    expect(await detectTamperedRuntime()).toEqual(["NODE_OPTIONS --require"]);
    setEnv({ NODE_OPTIONS: "" });
    inspector.open(0, "127.0.0.1");
    cleanups.push(() => inspector.close());
    expect(await detectTamperedRuntime()).toEqual(["an inspector is open"]);
  });
});

describe("the refuseTamperedRuntime option", () => {
  async function client(options: { refuseTamperedRuntime?: boolean }) {
    const key = await signingKey();
    const server = await referenceServer({ key, offlineSeconds: 3600 });
    cleanups.push(server.close);
    const app = new ShipkeyClient({
      server: server.url,
      productSlug: "app",
      publicKeys: { keys: [key.jwk] },
      storage: new MemoryStorage(),
      machineId: "machine-1",
      retry: { attempts: 1 },
      ...options,
    });
    return { app, server };
  }

  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (error: unknown) => error,
    );

  it("on: activate is refused with TAMPERED_RUNTIME, naming the sign, before any request", async () => {
    setEnv({ NODE_OPTIONS: "--require ./patch.js", ELECTRON_RUN_AS_NODE: undefined });
    const { app, server } = await client({ refuseTamperedRuntime: true });
    const error = await refusal(app.activate("KEY-1"));
    expect(error).toBeInstanceOf(ShipkeyError);
    expect(error).toMatchObject({ code: "TAMPERED_RUNTIME", signed: false });
    expect((error as ShipkeyError).message).toContain("NODE_OPTIONS --require");
    expect(server.requests).toEqual([]);
  });

  it("on: validate and checkout are refused with nothing sent; deactivate still frees the slot", async () => {
    setEnv({ NODE_OPTIONS: "", ELECTRON_RUN_AS_NODE: undefined });
    const { app, server } = await client({ refuseTamperedRuntime: true });
    await app.activate("KEY-1");
    expect(await app.validate()).toMatchObject({ valid: true, offline: false });

    setEnv({ NODE_OPTIONS: "--import ./patch.mjs" });
    const sent = server.requests.length;
    expect(await refusal(app.validate())).toMatchObject({ code: "TAMPERED_RUNTIME" });
    expect(await refusal(app.checkout())).toMatchObject({ code: "TAMPERED_RUNTIME" });
    expect(server.requests).toHaveLength(sent);
    expect(await app.deactivate()).toMatchObject({ machineId: "machine-1" });
  });

  it("on: offline, the stored certificate does not get past it either", async () => {
    setEnv({ NODE_OPTIONS: "", ELECTRON_RUN_AS_NODE: undefined });
    const { app, server } = await client({ refuseTamperedRuntime: true });
    await app.activate("KEY-1");
    await server.close();
    expect(await app.validate()).toMatchObject({ valid: true, offline: true });
    setEnv({ NODE_OPTIONS: "--inspect" });
    expect(await refusal(app.validate())).toMatchObject({ code: "TAMPERED_RUNTIME" });
  });

  it("on: an inspector opened after the start is seen at the next call", async () => {
    setEnv({ NODE_OPTIONS: "", ELECTRON_RUN_AS_NODE: undefined });
    const { app } = await client({ refuseTamperedRuntime: true });
    await app.activate("KEY-1");
    inspector.open(0, "127.0.0.1");
    cleanups.push(() => inspector.close());
    const error = await refusal(app.validate());
    expect(error).toMatchObject({ code: "TAMPERED_RUNTIME" });
    expect((error as ShipkeyError).message).toContain("an inspector is open");
    inspector.close();
    expect(await app.validate()).toMatchObject({ valid: true });
  });

  it("off (the default): the same process activates and validates", async () => {
    setEnv({ NODE_OPTIONS: "--require ./patch.js", ELECTRON_RUN_AS_NODE: "1" });
    const { app } = await client({});
    expect(await app.activate("KEY-1")).toMatchObject({ activated: true });
    expect(await app.validate()).toMatchObject({ valid: true, offline: false });
  });
});
