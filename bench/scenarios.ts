import type autocannon from "autocannon";
import {
  activatedMachine,
  appcastProducts,
  benchProducts,
  bigLicense,
  type DatasetShape,
  licenseKeyFor,
  pairLicense,
  productFor,
} from "./dataset.js";

export const scenarioNames = [
  "validate",
  "validate-signed",
  "activate-deactivate",
  "activate-webhook",
  "publish",
  "validate-1000",
  "validate-2",
  "update-check",
  "update-check-rollout",
  "public-normal",
  "public-hostile",
  "appcast-plain-notes",
  "appcast-worst-notes",
] as const;
/** `baseline`: the validate request, sent to the bare node:http server. */
export type ScenarioName = (typeof scenarioNames)[number] | "baseline";

type Request = autocannon.Request;
type Context = Record<string, unknown>;

const json = { "content-type": "application/json" };

function validateRequest(shape: DatasetShape, license?: number): Partial<Request> {
  return {
    method: "POST",
    path: "/api/license/validate",
    headers: json,
    body: JSON.stringify(activatedMachine(shape, license)),
  };
}

let nonceCounter = 0;

/** Validate as the SDK sends it: with a fresh Shipkey-Nonce, so the answer is signed. */
function signedValidateRequest(shape: DatasetShape): Partial<Request> {
  const nonce = `bench-${process.pid}-${String(nonceCounter++).padStart(10, "0")}`;
  return { ...validateRequest(shape), headers: { ...json, "shipkey-nonce": nonce } };
}

function activateRequest(shape: DatasetShape, context: Context): Partial<Request> {
  const index = Math.floor(Math.random() * shape.licenses);
  const machineId = `cycle-${process.pid}-${Math.random().toString(36).slice(2)}`;
  context.cycle = { licenseKey: licenseKeyFor(index), machineId };
  return {
    method: "POST",
    path: "/api/license/activate",
    headers: json,
    body: JSON.stringify({
      licenseKey: licenseKeyFor(index),
      machineId,
      productSlug: productFor(index),
      machineName: "Bench machine",
      platform: "Windows 11",
    }),
  };
}

// A minisign-sized signature and realistic artifact URLs.
const signature = `untrusted comment: signature from tauri secret key\n${"RUQ".repeat(40)}\ntrusted comment: timestamp:1763737970\tfile:app.msi\n${"ZmFrZQ".repeat(14)}`;
const targets = [
  ["WINDOWS", "X64", "app_x64-setup.msi"],
  ["MACOS", "ARM64", "app_aarch64.app.tar.gz"],
  ["MACOS", "X64", "app_x64.app.tar.gz"],
  ["LINUX", "X64", "app_amd64.AppImage.tar.gz"],
] as const;

let publishCounter = 0;

/** Each new version is published twice in a row: first "created", then "updated". */
function publishRequest(apiKey: string, context: Context): Partial<Request> {
  if (typeof context.version !== "string") {
    context.version = `2.${process.pid}.${publishCounter++}`;
    context.product = benchProducts[publishCounter % benchProducts.length];
  }
  const version = context.version;
  return {
    method: "POST",
    path: "/api/releases/publish",
    headers: { ...json, authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({
      productSlug: context.product,
      version,
      channel: "STABLE",
      releaseNotes: "## Changes\n- Faster sync\n- Fixed a crash when resuming from sleep\n",
      releases: targets.map(([platform, arch, file]) => ({
        platform,
        arch,
        downloadUrl: `https://github.com/example-org/example-app/releases/download/v${version}/${file}`,
        signature,
        fileSize: 50_000_000 + Math.floor(Math.random() * 10_000_000),
      })),
    }),
  };
}

/**
 * The public routes a client reaches without a key, in turn: validate, the Tauri, electron-updater
 * and Sparkle feeds and the latest-release lookup. `hostile` sends each as the
 * review's attacker did (a 15 KiB User-Agent of slashes, every value a route reads at its longest
 * allowed length) where a normal client sends a normal one; both get the same 2xx answers.
 */
function publicRequest(shape: DatasetShape, hostile: boolean, context: Context): Partial<Request> {
  const turn = typeof context.turn === "number" ? context.turn : 0;
  context.turn = turn + 1;
  const product = benchProducts[0];
  const agent = hostile ? "/".repeat(15_000) : "Bench App/0.9.0 Sparkle/2.6.0";
  const machine = hostile ? "m".repeat(255) : "3f9a0c1e";
  const headers = {
    "user-agent": agent,
    "shipkey-machine": machine,
    "if-none-match": hostile ? `W/"${"x".repeat(1016)}"`.padEnd(1024, ",") : 'W/"old"',
  };
  const gets = [
    `/api/updates/${product}/tauri/windows/x86_64/0.9.0?bundle=${hostile ? "b".repeat(255) : "msi"}`,
    `/api/updates/${product}/electron/latest.yml`,
    `/api/updates/${product}/sparkle/windows/x64/appcast.xml`,
    `/api/updates/${product}/latest?platform=WINDOWS&arch=X64&currentVersion=0.9.0`,
  ];
  if (turn % (gets.length + 1) === 0) {
    const body = activatedMachine(shape);
    return {
      method: "POST",
      path: "/api/license/validate",
      headers: { ...json, "user-agent": agent },
      body: JSON.stringify(
        hostile ? { ...body, machineName: "n".repeat(255), platform: "p".repeat(255) } : body,
      ),
    };
  }
  const path = gets[(turn % (gets.length + 1)) - 1] ?? gets[0];
  return { method: "GET", path, headers };
}

const setup = (build: (context: Context) => Partial<Request>): Request =>
  ({
    setupRequest: (request: Request, context: object) => ({
      ...request,
      ...build(context as Context),
    }),
  }) as Request;

/**
 * autocannon runs each connection through the `requests` list in a loop, with a context that
 * lives for one pass; pairs (activate → deactivate, publish created → updated) share it.
 */
export function requestsFor(name: ScenarioName, shape: DatasetShape, apiKey: string): Request[] {
  switch (name) {
    case "baseline":
    case "validate":
      return [setup(() => validateRequest(shape))];
    case "validate-signed":
      return [setup(() => signedValidateRequest(shape))];
    case "validate-1000":
      return [setup(() => validateRequest(shape, bigLicense(shape)))];
    case "validate-2":
      return [setup(() => validateRequest(shape, pairLicense(shape)))];
    // activate-webhook: the same pairs while an endpoint subscribes to both events (run.ts adds
    // and removes it for each turn).
    case "activate-deactivate":
    case "activate-webhook":
      return [
        setup((c) => activateRequest(shape, c)),
        setup((c) => ({
          method: "POST",
          path: "/api/license/deactivate",
          headers: json,
          body: JSON.stringify(c.cycle),
        })),
      ];
    case "publish":
      return [setup((c) => publishRequest(apiKey, c)), setup((c) => publishRequest(apiKey, c))];
    case "update-check":
      // A Tauri app on an older version asks for an update: the seed's release is offered.
      return [
        {
          method: "GET",
          path: `/api/updates/${benchProducts[0]}/tauri/windows/x86_64/0.9.0`,
        } as Request,
      ];
    case "public-normal":
    case "public-hostile":
      return [setup((c) => publicRequest(shape, name === "public-hostile", c))];
    case "appcast-plain-notes":
    case "appcast-worst-notes":
      // A Sparkle app asking for the appcast of 20 versions with 64 KiB notes each.
      return [
        {
          method: "GET",
          path: `/api/updates/${name === "appcast-plain-notes" ? appcastProducts.plain : appcastProducts.worst}/sparkle/macos/arm64/appcast.xml`,
        } as Request,
      ];
    case "update-check-rollout":
      // The same check while 1.1.0 rolls out to 10 %: each machine (its Shipkey-Machine header)
      // is placed by a hash; about a tenth get 1.1.0, the others the released 1.0.0.
      return [
        setup(() => ({
          method: "GET",
          path: `/api/updates/${benchProducts[1]}/tauri/windows/x86_64/0.9.0`,
          headers: { "shipkey-machine": `bench-${process.pid}-${nonceCounter++}` },
        })),
      ];
  }
}
